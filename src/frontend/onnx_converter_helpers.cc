// The attribute and input helpers the ONNX converters share (onnx_converter_helpers.h).
#include "frontend/onnx_converter_helpers.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, absl::string_view name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t IntAttr(const onnx::NodeProto& n, absl::string_view name, int64_t def) {
  const auto* a = FindAttr(n, name);
  return a ? a->i() : def;
}
float FloatAttr(const onnx::NodeProto& n, absl::string_view name, float def) {
  const auto* a = FindAttr(n, name);
  return a ? a->f() : def;
}
std::string StringAttr(const onnx::NodeProto& n, absl::string_view name, std::string def) {
  const auto* a = FindAttr(n, name);
  return a ? a->s() : def;
}
std::optional<std::vector<int64_t>> IntsAttr(const onnx::NodeProto& n, absl::string_view name) {
  const auto* a = FindAttr(n, name);
  if (a == nullptr) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Value* In(const Ins& in, size_t i) { return i < in.size() ? in[i] : nullptr; }

absl::StatusOr<Value*> Need(ImportContext& ctx, const Ins& in, size_t i) {
  Value* v = In(in, i);
  if (v == nullptr) return ctx.Error(absl::StrFormat("input %d is required", i));
  return v;
}

absl::StatusOr<std::vector<Value*>> NeedFirst(ImportContext& ctx, const Ins& in, size_t count) {
  std::vector<Value*> v(count);
  for (size_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(v[i], Need(ctx, in, i));
  }
  return v;
}

std::optional<std::vector<int64_t>> ConstInts(ImportContext& ctx, const Value* v) {
  auto t = ctx.ConstValue(v);
  if (!t) return std::nullopt;
  return t->ToInt64s();
}

absl::StatusOr<std::vector<int64_t>> RequireConstInts(ImportContext& ctx, const Value* v,
                                                      absl::string_view what) {
  auto r = ConstInts(ctx, v);
  if (!r) return ctx.Unimplemented(absl::StrCat(what, " must be a constant"));
  return *r;
}

int64_t NormAxis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

absl::StatusOr<int> NeedRank(ImportContext& ctx, const Value* v) {
  const int r = ctx.RankOf(v);
  if (r < 0) return ctx.Unimplemented("needs the rank of its input, which is not known");
  return r;
}

Outs One(absl::StatusOr<Value*> v) {
  if (!v.ok()) return v.status();
  return std::vector<Value*>{*v};
}

absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(ImportContext& ctx,
                                                           const onnx::NodeProto& n,
                                                           const Ins& in, int64_t input_since) {
  if (ctx.opset() < input_since) return IntsAttr(n, "axes");
  Value* a = In(in, 1);
  if (a == nullptr) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(auto v, RequireConstInts(ctx, a, "axes"));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

absl::StatusOr<Value*> CastTo(ImportContext& ctx, Value* v, DType dt) {
  if (ctx.TypeOf(v).is_tensor() && ctx.DTypeOf(v) == dt) return v;
  return ctx.Op("cast", {v}, {{"dtype", dt}});
}

absl::StatusOr<Value*> DimOf(ImportContext& ctx, Value* x, int64_t axis) {
  ASSIGN_OR_RETURN(Value * shape, ctx.Op("shape_of", {x}));
  return ctx.Op("take", {shape, ctx.Const(Tensor::Scalar(DType::kI64, axis))},
                {{"axis", int64_t{0}}, {"mode", std::string("fast")}});
}

absl::StatusOr<Value*> IotaTo(ImportContext& ctx, Value* d) {
  return ctx.Op("arange",
                {ctx.Const(Tensor::Scalar(DType::kI64, 0)), d, ctx.Const(Tensor::Scalar(DType::kI64, 1))},
                {{"dtype", DType::kI64}});
}

absl::StatusOr<Value*> DimIota(ImportContext& ctx, Value* x, int64_t axis) {
  ASSIGN_OR_RETURN(Value * d, DimOf(ctx, x, axis));
  return IotaTo(ctx, d);
}

absl::StatusOr<Value*> LogSoftmaxOver(ImportContext& ctx, Value* x, std::vector<int64_t> axes) {
  const Attrs reduce{{"axis", std::move(axes)}, {"keepdims", true}};
  ASSIGN_OR_RETURN(Value * m, ctx.Op("max", {x}, reduce));
  ASSIGN_OR_RETURN(Value * d, ctx.Op("subtract", {x, m}));
  ASSIGN_OR_RETURN(Value * e, ctx.Op("exp", {d}));
  ASSIGN_OR_RETURN(Value * s, ctx.Op("sum", {e}, reduce));
  ASSIGN_OR_RETURN(Value * l, ctx.Op("log", {s}));
  return ctx.Op("subtract", {d, l});
}

// alpha * (e^x - 1), the negative branch of Elu and Selu.
absl::StatusOr<Value*> ExpMinusOne(ImportContext& ctx, Value* x, double alpha) {
  ASSIGN_OR_RETURN(Value * e, ctx.Op("exp", {x}));
  ASSIGN_OR_RETURN(e, ctx.Op("subtract", {e, ctx.ScalarLike(x, 1.0)}));
  return ctx.Op("multiply", {e, ctx.ScalarLike(x, alpha)});
}

// x > 0 ? x : alpha * (e^x - 1).
absl::StatusOr<Value*> EluOf(ImportContext& ctx, Value* x, double alpha) {
  ASSIGN_OR_RETURN(Value * pos, ctx.Op("greater", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * e, ExpMinusOne(ctx, x, alpha));
  return ctx.Op("where", {pos, x, e});
}

// x > 0 ? x : alpha * x.
absl::StatusOr<Value*> LeakyReluOf(ImportContext& ctx, Value* x, double alpha) {
  ASSIGN_OR_RETURN(Value * pos, ctx.Op("greater", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * ax, ctx.Op("multiply", {x, ctx.ScalarLike(x, alpha)}));
  return ctx.Op("where", {pos, x, ax});
}

// x > alpha ? x : 0.
absl::StatusOr<Value*> ThresholdedReluOf(ImportContext& ctx, Value* x, double alpha) {
  ASSIGN_OR_RETURN(Value * keep, ctx.Op("greater", {x, ctx.ScalarLike(x, alpha)}));
  return ctx.Op("where", {keep, x, ctx.ScalarLike(x, 0.0)});
}

// max(0, min(1, alpha * x + beta)): HardSigmoid, and HardSwish's factor.
absl::StatusOr<Value*> HardSigmoidOf(ImportContext& ctx, Value* x, double alpha, double beta) {
  ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, ctx.ScalarLike(x, alpha)}));
  ASSIGN_OR_RETURN(y, ctx.Op("add", {y, ctx.ScalarLike(x, beta)}));
  ASSIGN_OR_RETURN(y, ctx.Op("minimum", {y, ctx.ScalarLike(x, 1.0)}));
  return ctx.Op("maximum", {y, ctx.ScalarLike(x, 0.0)});
}

// log(e^x + 1), as the spec writes it.
absl::StatusOr<Value*> SoftplusOf(ImportContext& ctx, Value* x) {
  ASSIGN_OR_RETURN(Value * e, ctx.Op("exp", {x}));
  ASSIGN_OR_RETURN(e, ctx.Op("add", {e, ctx.ScalarLike(x, 1.0)}));
  return ctx.Op("log", {e});
}

// x / (1 + |x|).
absl::StatusOr<Value*> SoftsignOf(ImportContext& ctx, Value* x) {
  ASSIGN_OR_RETURN(Value * a, ctx.Op("abs", {x}));
  ASSIGN_OR_RETURN(a, ctx.Op("add", {a, ctx.ScalarLike(x, 1.0)}));
  return ctx.Op("divide", {x, a});
}

}  // namespace hetpass::onnx_frontend
