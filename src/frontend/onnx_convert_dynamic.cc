// ONNX converters of shape queries and tensor creation: Shape and Size (shape_of, computed on
// the host from the shape alone), ConstantOfShape (a folded constant, dyn.zeros or dyn.full),
// Range (arange), Constant, and the index masks EyeLike and Trilu (iotas of the last two dims
// from the shape, compared). The registry side is shape_funcs/dynamic.cc; the conventions are
// in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

Outs Shape(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
  const auto* start = FindAttr(n, "start");
  const auto* end = FindAttr(n, "end");
  if (start == nullptr && end == nullptr) return std::vector<Value*>{s};
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(NormAxis(v, rank), 0, rank); };
  const int64_t b = clamp(start ? start->i() : 0), e = clamp(end ? end->i() : rank);
  return One(ctx.Op("strided_slice", {s},
                    {{"begin", std::vector<int64_t>{b}}, {"end", std::vector<int64_t>{e}}}));
}

// Size: the element count, an i64 scalar computed on the host from the shape alone
// (prod(shape_of(x)); no data of x is read, so no copy).
Outs Size(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
  return One(ctx.Op("prod", {s}, {{"axis", std::vector<int64_t>{}}, {"keepdims", false}}));
}

// Largest ConstantOfShape result the importer materialises as a constant.
constexpr int64_t kMaxFoldedElements = 1 << 16;

Outs ConstantOfShape(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, 0));
  Tensor fill = Tensor::Scalar(DType::kF32, 0.0);
  if (const auto* a = FindAttr(n, "value")) {
    auto t = TensorFromProto(a->t());
    if (!t.ok()) return ctx.Error(t.status().message());
    if (t->num_elements() != 1) return ctx.Error("value must have one element");
    fill = t->Reshaped({});
  }
  auto shape = ConstInts(ctx, s);
  if (shape) {
    auto count = CheckedNumElements(*shape);
    if (!count.ok()) return ctx.Error(count.status().message());
  }
  // A constant shape is materialised when small; large fills stay ops (sized at run time).
  if (shape && CheckedNumElements(*shape).value_or(0) <= kMaxFoldedElements) {
    Tensor out = Tensor::Zeros(fill.dtype(), *shape);
    for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, fill.GetDouble(0));
    return std::vector<Value*>{ctx.Const(std::move(out))};
  }
  if (fill.GetDouble(0) == 0.0) {
    return One(ctx.Op("dyn.zeros", {s}, {{"dtype", fill.dtype()}}));
  }
  return One(ctx.Op("dyn.full", {ctx.Const(fill), s}, {{"dtype", fill.dtype()}}));
}

Outs Range(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * start, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * limit, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * delta, Need(ctx, in, 2));
  return One(ctx.Op("arange", {start, limit, delta}, {{"dtype", ctx.DTypeOf(start)}}));
}

Outs Constant(ImportContext& ctx, const onnx::NodeProto& n, const Ins&) {
  if (const auto* a = FindAttr(n, "value")) {
    auto t = TensorFromProto(a->t());
    if (!t.ok()) return ctx.Error(t.status().message());
    return std::vector<Value*>{ctx.Const(*std::move(t))};
  }
  if (const auto* a = FindAttr(n, "value_float")) {
    return std::vector<Value*>{ctx.Const(Tensor::Scalar(DType::kF32, a->f()))};
  }
  if (const auto* a = FindAttr(n, "value_int")) {
    return std::vector<Value*>{ctx.Const(Tensor::FromInt64s(DType::kI64, {}, {a->i()}))};
  }
  if (const auto* a = FindAttr(n, "value_floats")) {
    std::vector<double> v(a->floats().begin(), a->floats().end());
    const int64_t k = static_cast<int64_t>(v.size());
    return std::vector<Value*>{ctx.Const(Tensor::FromDoubles(DType::kF32, {k}, v))};
  }
  if (const auto* a = FindAttr(n, "value_ints")) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    const int64_t k = static_cast<int64_t>(v.size());
    return std::vector<Value*>{ctx.Const(Tensor::FromInt64s(DType::kI64, {k}, v))};
  }
  return ctx.Unimplemented("only value, value_float(s) and value_int(s) are supported");
}

// j - i for the last two dims [.., n, m] of x: an i64 [n, m] from two iotas.
absl::StatusOr<Value*> ColumnMinusRow(ImportContext& ctx, Value* x) {
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 2) return ctx.Error(absl::StrCat("needs a tensor of rank >= 2, got rank ", rank));
  ASSIGN_OR_RETURN(Value * rows, DimIota(ctx, x, rank - 2));
  ASSIGN_OR_RETURN(rows, ctx.Op("expand_dims", {rows}, {{"axis", int64_t{1}}}));
  ASSIGN_OR_RETURN(Value * cols, DimIota(ctx, x, rank - 1));
  return ctx.Op("subtract", {cols, rows});
}

// EyeLike: ones where j - i == k, of x's 2-D shape, in `dtype` (x's when unset).
Outs EyeLike(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 2) return ctx.Error(absl::StrCat("input must be 2-D, got rank ", rank));
  DType dt = ctx.DTypeOf(x);
  if (FindAttr(n, "dtype") != nullptr) {
    auto d = DTypeFromOnnx(static_cast<int32_t>(IntAttr(n, "dtype", 0)));
    if (!d.ok()) return ctx.Unimplemented(d.status().message());
    dt = *d;
  }
  ASSIGN_OR_RETURN(Value * diff, ColumnMinusRow(ctx, x));
  ASSIGN_OR_RETURN(Value * hit, ctx.Op("equal", {diff, ctx.Const(Tensor::Scalar(DType::kI64, IntAttr(n, "k", 0)))}));
  return One(ctx.Op("cast", {hit}, {{"dtype", dt}}));
}

// Trilu: x where j - i >= k (upper) or j - i <= k (lower) over the last two dims, else 0; k is
// an optional i64 scalar input, computed or constant.
Outs Trilu(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * d, ColumnMinusRow(ctx, x));
  if (Value* k = In(in, 1)) {
    const Type kt = ctx.TypeOf(k);
    if (kt.is_tensor() && kt.rank() != 0) return ctx.Error("k must be a scalar");
    if (kt.is_tensor() && ctx.DTypeOf(k) != DType::kI64) {
      ASSIGN_OR_RETURN(k, ctx.Op("cast", {k}, {{"dtype", DType::kI64}}));
    }
    ASSIGN_OR_RETURN(d, ctx.Op("subtract", {d, k}));
  }
  Value* zero = ctx.Const(Tensor::Scalar(DType::kI64, 0));
  const bool upper = IntAttr(n, "upper", 1) != 0;
  ASSIGN_OR_RETURN(Value * drop, ctx.Op(upper ? "less" : "greater", {d, zero}));
  return One(ctx.Op("where", {drop, ctx.ScalarLike(x, 0.0), x}));
}

}  // namespace

void AddDynamicConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Constant", Constant},
      {"ConstantOfShape", ConstantOfShape},
      {"EyeLike", EyeLike},
      {"Range", Range},
      {"Shape", Shape},
      {"Size", Size},
      {"Trilu", Trilu},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
