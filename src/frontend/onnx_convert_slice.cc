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

// Split with sizes known at run time only, `sizes` an i64[outs] on the host: part i is a
// dyn.strided_slice along `axis` from the running sum of the sizes before it to the one
// including it (cumsum on the host); nothing of x is read for it. `last_to_end`: the last part
// runs to the end of the axis (an equal split whose dim the sizes may not cover exactly).
absl::StatusOr<std::vector<Value*>> SplitAtRunTime(ImportContext& ctx, Value* x, int64_t axis,
                                                   Value* sizes, int64_t outs, bool last_to_end) {
  ASSIGN_OR_RETURN(Value * ends, ctx.Op("cumsum", {sizes, ctx.Const(Tensor::Scalar(DType::kI64, 0))}));
  ASSIGN_OR_RETURN(Value * begins, ctx.Op("subtract", {ends, sizes}));
  // Leading axes are taken whole: begin 0, end INT64_MAX, stride 1.
  Value* lead_begin = ctx.Const(Tensor::FromInt64s(DType::kI64, {axis}, std::vector<int64_t>(axis, 0)));
  Value* lead_end = ctx.Const(Tensor::FromInt64s(
      DType::kI64, {axis}, std::vector<int64_t>(axis, std::numeric_limits<int64_t>::max())));
  Value* strides =
      ctx.Const(Tensor::FromInt64s(DType::kI64, {axis + 1}, std::vector<int64_t>(axis + 1, 1)));
  std::vector<Value*> parts;
  for (int64_t i = 0; i < outs; ++i) {
    const Attrs one{{"begin", std::vector<int64_t>{i}}, {"end", std::vector<int64_t>{i + 1}}};
    ASSIGN_OR_RETURN(Value * b, ctx.Op("strided_slice", {begins}, one));
    Value* e = nullptr;
    if (last_to_end && i == outs - 1) {
      e = ctx.Const(Tensor::FromInt64s(DType::kI64, {1}, {std::numeric_limits<int64_t>::max()}));
    } else {
      ASSIGN_OR_RETURN(e, ctx.Op("strided_slice", {ends}, one));
    }
    if (axis > 0) {
      ASSIGN_OR_RETURN(b, ctx.Op("concatenate", {lead_begin, b}, {{"axis", int64_t{0}}}));
      ASSIGN_OR_RETURN(e, ctx.Op("concatenate", {lead_end, e}, {{"axis", int64_t{0}}}));
    }
    ASSIGN_OR_RETURN(Value * part, ctx.Op("dyn.strided_slice", {x, b, e, strides}));
    parts.push_back(part);
  }
  return parts;
}

// Split into constant sizes (attribute below opset 13, input from 13; equal parts of a
// static dim when absent): one strided_slice per output. Computed sizes, and equal parts of a
// symbolic dim, are split at run time (SplitAtRunTime); an indivisible symbolic dim gives its
// last part the remainder.
Outs Split(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", 0), rank);
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  const int64_t outs = n.output_size();
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    if (auto a = IntsAttr(n, "split")) sizes = *a;
  } else if (Value* sv = In(in, 1)) {
    if (auto c = ConstInts(ctx, sv)) {
      sizes = *c;
    } else {
      const Type st = ctx.TypeOf(sv);
      if (!st.is_tensor() || st.rank() != 1 || st.dtype() != DType::kI64) {
        return ctx.Error("split must be a 1-D int64 tensor");
      }
      if (st.shape()[0].is_constant() && st.shape()[0].constant() != outs) {
        return ctx.Error("split sizes and outputs differ in number");
      }
      return SplitAtRunTime(ctx, x, axis, sv, outs, /*last_to_end=*/false);
    }
  }
  if (sizes.empty()) {
    const DimExpr d = ctx.TypeOf(x).shape()[axis];
    if (outs == 0) return ctx.Error("Split has no outputs");
    if (!d.is_constant()) {
      ASSIGN_OR_RETURN(Value * shape, ctx.Op("shape_of", {x}));
      ASSIGN_OR_RETURN(Value * dim, ctx.Op("strided_slice", {shape},
                                           {{"begin", std::vector<int64_t>{axis}},
                                            {"end", std::vector<int64_t>{axis + 1}}}));
      ASSIGN_OR_RETURN(Value * part, ctx.Op("divide", {dim, ctx.Const(Tensor::Scalar(ctx.DTypeOf(dim), outs))}));
      Value* ones = ctx.Const(Tensor::FromInt64s(ctx.DTypeOf(dim), {outs}, std::vector<int64_t>(outs, 1)));
      ASSIGN_OR_RETURN(Value * equal, ctx.Op("multiply", {ones, part}));
      return SplitAtRunTime(ctx, x, axis, equal, outs, /*last_to_end=*/true);
    }
    if (d.constant() % outs != 0) {
      return ctx.Error(absl::StrFormat("dim %d of size %d does not split into %d equal parts",
                                       axis, d.constant(), outs));
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
