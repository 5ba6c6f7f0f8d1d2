// ONNX converters of the slicing and gathering family: Gather (take), GatherND (take or
// gather_nd), GatherElements, ScatterElements / Scatter and ScatterND (the registry ops of the
// same names, shape_funcs/scatter.cc), Split (one
// strided_slice per output) and Slice (strided_slice, or dyn.strided_slice for computed starts and
// ends). The registry side is shape_funcs/slice.cc; the conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

Outs Gather(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  // ONNX indices may be negative (from the end): "wrap" resolves them; clip would not.
  std::string mode = "clip";
  auto ci = ConstInts(ctx, idx);
  if (!ci || std::any_of(ci->begin(), ci->end(), [](int64_t v) { return v < 0; })) mode = "wrap";
  return One(ctx.Op("take", {x, idx}, {{"axis", IntAttr(n, "axis", 0)}, {"mode", mode}}));
}

// GatherElements: gather_elements (negative indices count from the end there too).
Outs GatherElements(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  return One(ctx.Op("gather_elements", {x, idx}, {{"axis", IntAttr(n, "axis", 0)}}));
}

// GatherND: gather_nd. The form PyTorch exports for boolean-mask indexing (batch_dims 0,
// indices [.., 1]: x[mask] = GatherND(x, NonZero(mask)^T)) is a take along axis 0 instead, which
// the JIT's injective kernels run.
Outs GatherND(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  const int64_t batch_dims = IntAttr(n, "batch_dims", 0);
  const Type ti = ctx.TypeOf(idx);
  if (batch_dims == 0 && ti.is_tensor() && ti.rank() >= 1 && ti.shape().back().is_constant() &&
      ti.shape().back().constant() == 1) {
    ASSIGN_OR_RETURN(Value * flat, ctx.Op("squeeze", {idx}, {{"axis", std::vector<int64_t>{ti.rank() - 1}}}));
    return One(ctx.Op("take", {x, flat}, {{"axis", int64_t{0}}, {"mode", std::string("wrap")}}));
  }
  return One(ctx.Op("gather_nd", {x, idx}, {{"batch_dims", batch_dims}}));
}

// ScatterElements (and Scatter, its deprecated name): scatter_elements.
Outs ScatterElements(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * upd, Need(ctx, in, 2));
  return One(ctx.Op("scatter_elements", {x, idx, upd},
                    {{"axis", IntAttr(n, "axis", 0)}, {"reduction", StringAttr(n, "reduction", "none")}}));
}

Outs ScatterND(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * upd, Need(ctx, in, 2));
  return One(ctx.Op("scatter_nd", {x, idx, upd}, {{"reduction", StringAttr(n, "reduction", "none")}}));
}

// Split into constant sizes (attribute below opset 13, input from 13; equal parts of a
// static dim when absent): one strided_slice per output.
Outs Split(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", 0), rank);
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    if (auto a = IntsAttr(n, "split")) sizes = *a;
  } else if (Value* sv = In(in, 1)) {
    ASSIGN_OR_RETURN(sizes, RequireConstInts(ctx, sv, "split"));
  }
  const int64_t outs = n.output_size();
  if (sizes.empty()) {
    const DimExpr d = ctx.TypeOf(x).shape()[axis];
    if (!d.is_constant() || outs == 0 || d.constant() % outs != 0) {
      return ctx.Unimplemented("equal split of a symbolic or indivisible dim");
    }
    sizes.assign(outs, d.constant() / outs);
  }
  if (static_cast<int64_t>(sizes.size()) != outs) {
    return ctx.Error("split sizes and outputs differ in number");
  }
  std::vector<Value*> results;
  int64_t begin = 0;
  for (int64_t sz : sizes) {
    // Sizes are user input: each must be >= 0 and their running sum must fit in int64.
    if (sz < 0) return ctx.Error(absl::StrFormat("split size %d is negative", sz));
    int64_t end;
    if (__builtin_add_overflow(begin, sz, &end)) {
      return ctx.Error(absl::StrFormat("split sizes [%s] overflow int64 when summed",
                                       absl::StrJoin(sizes, ", ")));
    }
    ASSIGN_OR_RETURN(Value * part,
                     ctx.Op("strided_slice", {x},
                            {{"begin", std::vector<int64_t>{begin}},
                             {"end", std::vector<int64_t>{end}},
                             {"axes", std::vector<int64_t>{axis}}}));
    results.push_back(part);
    begin = end;
  }
  return results;
}

// Slice with computed axes or steps: full-rank begin/end/strides for dyn.strided_slice,
// assembled on the host by scattering starts/ends/steps (as i64) into [0..], [INT64_MAX..] and
// [1..] at the axes (negative axes counted from the rank). Only 2 x rank i64 values are
// computed; nothing of x is read.
absl::StatusOr<Value*> SliceComputedAxesOrSteps(ImportContext& ctx, Value* x, Value* starts,
                                                Value* ends, Value* axes, Value* steps) {
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  auto as_i64 = [&](Value* v) { return CastTo(ctx, v, DType::kI64); };
  ASSIGN_OR_RETURN(starts, as_i64(starts));
  ASSIGN_OR_RETURN(ends, as_i64(ends));
  Value* ax;
  if (axes != nullptr) {
    ASSIGN_OR_RETURN(ax, as_i64(axes));
    ASSIGN_OR_RETURN(Value * neg, ctx.Op("less", {ax, ctx.Const(Tensor::Scalar(DType::kI64, 0))}));
    ASSIGN_OR_RETURN(Value * wrapped, ctx.Op("add", {ax, ctx.Const(Tensor::Scalar(DType::kI64, rank))}));
    ASSIGN_OR_RETURN(ax, ctx.Op("where", {neg, wrapped, ax}));
  } else {
    ASSIGN_OR_RETURN(ax, DimIota(ctx, starts, 0));
  }
  Value* st;
  if (steps != nullptr) {
    ASSIGN_OR_RETURN(st, as_i64(steps));
  } else {  // ones of starts' length
    ASSIGN_OR_RETURN(Value * same, ctx.Op("equal", {starts, starts}));
    ASSIGN_OR_RETURN(st, ctx.Op("cast", {same}, {{"dtype", DType::kI64}}));
  }
  auto full = [&](int64_t fill, Value* values) -> absl::StatusOr<Value*> {
    Value* base = ctx.Const(Tensor::FromInt64s(DType::kI64, {rank}, std::vector<int64_t>(rank, fill)));
    return ctx.Op("scatter_elements", {base, ax, values}, {{"axis", int64_t{0}}});
  };
  ASSIGN_OR_RETURN(Value * b, full(0, starts));
  ASSIGN_OR_RETURN(Value * e, full(std::numeric_limits<int64_t>::max(), ends));
  ASSIGN_OR_RETURN(Value * k, full(1, st));
  return ctx.Op("dyn.strided_slice", {x, b, e, k});
}

Outs Slice(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * starts, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * ends, Need(ctx, in, 2));
  Value* axes_v = In(in, 3);
  Value* steps_v = In(in, 4);
  auto s = ConstInts(ctx, starts), e = ConstInts(ctx, ends);
  auto axes = axes_v ? ConstInts(ctx, axes_v) : std::optional<std::vector<int64_t>>();
  auto steps = steps_v ? ConstInts(ctx, steps_v) : std::optional<std::vector<int64_t>>();
  if ((axes_v && !axes) || (steps_v && !steps)) {
    return One(SliceComputedAxesOrSteps(ctx, x, starts, ends, axes_v, steps_v));
  }
  if (s && e) {
    const size_t k = s->size();
    std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>();
    if (!axes) {
      for (size_t i = 0; i < k; ++i) ax.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> st = steps ? *steps : std::vector<int64_t>(k, 1);
    if (e->size() != k || ax.size() != k || st.size() != k) {
      return ctx.Error("starts, ends, axes and steps differ in length");
    }
    return One(ctx.Op("strided_slice", {x},
                      {{"begin", *s}, {"end", *e}, {"strides", st}, {"axes", ax}}));
  }
  // Computed starts/ends: dyn.strided_slice takes begin/end/strides for the leading dims in
  // order, so for axes other than 0..k-1 the full vectors are assembled on the host: each
  // sliced axis takes its element of starts/ends, every other axis [0, INT64_MAX) step 1.
  const int64_t k = s ? static_cast<int64_t>(s->size())
                      : (e ? static_cast<int64_t>(e->size()) : -1);
  Type ts = ctx.TypeOf(starts);
  const int64_t klen = k >= 0 ? k
                       : (ts.is_tensor() && ts.rank() == 1 && ts.shape()[0].is_constant()
                              ? ts.shape()[0].constant()
                              : -1);
  if (klen < 0) return ctx.Unimplemented("computed starts/ends of unknown length");
  std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>();
  if (!axes) {
    for (int64_t i = 0; i < klen; ++i) ax.push_back(i);
  }
  std::vector<int64_t> st = steps ? *steps : std::vector<int64_t>(klen, 1);
  if (static_cast<int64_t>(ax.size()) != klen || static_cast<int64_t>(st.size()) != klen) {
    return ctx.Error("starts, ends, axes and steps differ in length");
  }
  bool leading = true;
  for (int64_t i = 0; i < klen; ++i) leading = leading && ax[i] == i;
  const DType it = ctx.DTypeOf(starts);
  if (leading) {
    Value* stv = ctx.Const(Tensor::FromInt64s(it, {klen}, st));
    return One(ctx.Op("dyn.strided_slice", {x, starts, ends, stv}));
  }
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  std::vector<int64_t> pos(rank, -1);  // axis -> index into starts/ends
  for (int64_t j = 0; j < klen; ++j) {
    const int64_t a = NormAxis(ax[j], rank);
    if (a < 0 || a >= rank || pos[a] >= 0) return ctx.Error("axes out of range or repeated");
    pos[a] = j;
  }
  int last = 0;
  for (int a = 0; a < rank; ++a) {
    if (pos[a] >= 0) last = a + 1;
  }
  auto assemble = [&](Value* v, int64_t fill) -> absl::StatusOr<Value*> {
    if (auto c = ConstInts(ctx, v)) {
      std::vector<int64_t> full;
      for (int a = 0; a < last; ++a) full.push_back(pos[a] < 0 ? fill : (*c)[pos[a]]);
      return ctx.Const(Tensor::FromInt64s(it, {last}, full));
    }
    ASSIGN_OR_RETURN(v, CastTo(ctx, v, it));
    std::vector<Value*> parts;
    for (int a = 0; a < last; ++a) {
      if (pos[a] < 0) {
        parts.push_back(ctx.Const(Tensor::FromInt64s(it, {1}, {fill})));
        continue;
      }
      ASSIGN_OR_RETURN(Value * piece,
                       ctx.Op("strided_slice", {v},
                              {{"begin", std::vector<int64_t>{pos[a]}},
                               {"end", std::vector<int64_t>{pos[a] + 1}}}));
      parts.push_back(piece);
    }
    if (parts.size() == 1) return parts[0];
    return ctx.Op("concatenate", parts, {{"axis", int64_t{0}}});
  };
  ASSIGN_OR_RETURN(Value * b, assemble(starts, 0));
  ASSIGN_OR_RETURN(Value * en, assemble(ends, it == DType::kI32 ? std::numeric_limits<int32_t>::max()
                                                         : std::numeric_limits<int64_t>::max()));
  std::vector<int64_t> full_steps;
  for (int a = 0; a < last; ++a) full_steps.push_back(pos[a] < 0 ? 1 : st[pos[a]]);
  Value* stv = ctx.Const(Tensor::FromInt64s(it, {last}, full_steps));
  return One(ctx.Op("dyn.strided_slice", {x, b, en, stv}));
}

}  // namespace

void AddSliceConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Gather", Gather},
      {"GatherElements", GatherElements},
      {"Scatter", ScatterElements},
      {"ScatterElements", ScatterElements},
      {"ScatterND", ScatterND},
      {"GatherND", GatherND},
      {"Slice", Slice},
      {"Split", Split},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
