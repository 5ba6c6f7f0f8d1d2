// Slicing and gathering: strided_slice, dyn.strided_slice, take and gather_elements.
//
// Masks: dyn.strided_slice is the motivating case of per-input masks. Its output shape needs
// the *values* of begin/end/strides (`value`) but only the *shape* of the sliced tensor
// (`shape`); TVM's single data_dependent flag copied the whole sliced tensor to the host on
// every call (2,283 copies per MaskRCNN run). take needs the shapes of data and indices only.
//
// Slice lengths follow NumPy/Relay: negative begin/end count from the end, both are clamped
// into the axis, a zero stride is an error. For a symbolic dim d the clamps are kept as
// min/max expressions unless the sign of a difference is provable (symbols are dims, so >= 0),
// e.g. x[1:] of f32[n] is f32[max(n - 1, 0)] and x[0:] is f32[n]. An end at or beyond 2^31 - 1
// means "to the end" (and a begin/end at or below -(2^31 - 1) "from the start"): every dim is
// assumed to fit in 31 bits. A begin/end that is symbolic and not provably non-negative makes
// the dim unknown.
//
// gather_elements (ONNX GatherElements, NumPy take_along_axis) picks one element per index:
// out[i_0, .., i_r] = data[i_0, .., indices[i_0, .., i_r], .., i_r] along `axis`. Its output
// is the shape of indices, so it needs the shapes of both inputs only. On the other axes an
// indices dim may be smaller than data's (ONNX Runtime's rule), never larger.
//
// take on a 1-D integer tensor with constant indices propagates symbolic values, so
// `take(shape_of(x), 0)` is the symbol `n` and shape subgraphs stay visible to type inference.
#include "shape_funcs/slice.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"
#include "shape_funcs/symbolic_values.h"

namespace hetpass {
namespace {

using shape_rules::kMaxDim;
using shape_rules::One;
using shape_rules::SymMax;
using shape_rules::SymMin;
using shape_rules::ToVec;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

// One sliced axis: elements start, start + stride, ... (len of them).
struct AxisSlice {
  DimExpr start;
  DimExpr len;
  int64_t stride = 1;
};

// Normalises begin or end `x` against dim `d` and clamps it into [lo, hi].
DimExpr Clamp(const DimExpr& x, const DimExpr& d, const DimExpr& lo, const DimExpr& hi) {
  DimExpr v = x;
  if (x.is_constant()) {
    if (x.constant() >= kMaxDim) return hi;
    if (x.constant() <= -kMaxDim) return lo;
    if (x.constant() < 0) v = x + d;
  } else if (!shape_rules::ProvablyNonNegative(x)) {
    return DimExpr::Unknown();
  }
  return SymMin(SymMax(v, lo), hi);
}

absl::StatusOr<AxisSlice> SliceAxis(const ShapeContext& ctx, const DimExpr& d, const DimExpr& b,
                                    const DimExpr& e, const DimExpr& s) {
  if (!s.is_constant()) return AxisSlice{DimExpr::Unknown(), DimExpr::Unknown(), 1};
  const int64_t st = s.constant();
  if (st == 0) return ctx.Error("strides must be non-zero");
  // A backward slice divides by -stride, which INT64_MIN does not have in int64.
  if (st == INT64_MIN) {
    return ctx.Error(
        absl::StrFormat("stride %d is not supported (its negation overflows int64)", st));
  }
  AxisSlice r;
  r.stride = st;
  if (st > 0) {
    r.start = Clamp(b, d, 0, d);
    const DimExpr end = Clamp(e, d, 0, d);
    // To the end: max(d - min(b, d), 0) == max(d - b, 0), which prints as `max(0, n - 1)`.
    const DimExpr begin = end == d ? Clamp(b, d, 0, kMaxDim) : r.start;
    r.len = shape_rules::CeilDivPositive(SymMax(end - begin, 0), st);
  } else {
    r.start = Clamp(b, d, -1, d - 1);
    const DimExpr end = Clamp(e, d, -1, d - 1);
    r.len = shape_rules::CeilDivPositive(SymMax(r.start - end, 0), -st);
  }
  return r;
}

// begin/end/strides per axis of the data; axes not mentioned are kept whole.
struct SliceSpec {
  std::vector<DimExpr> begin, end, strides;
  std::vector<int64_t> axes;  // empty: 0 .. len(begin) - 1
};

absl::StatusOr<std::vector<AxisSlice>> SliceAll(const ShapeContext& ctx,
                                                absl::Span<const DimExpr> shape,
                                                const SliceSpec& spec) {
  const size_t n = spec.begin.size();
  if (spec.end.size() != n) {
    return ctx.Error(absl::StrFormat("begin has %d values but end has %d", n, spec.end.size()));
  }
  if (!spec.strides.empty() && spec.strides.size() != 1 && spec.strides.size() != n) {
    return ctx.Error(
        absl::StrFormat("strides has %d values; expected 1 or %d", spec.strides.size(), n));
  }
  std::vector<int64_t> axes = spec.axes;
  if (axes.empty()) {
    if (n > shape.size()) {
      return ctx.Error(absl::StrFormat("%d begin values for rank %d", n, shape.size()));
    }
    for (size_t i = 0; i < n; ++i) axes.push_back(i);
  } else if (axes.size() != n) {
    return ctx.Error(absl::StrFormat("axes has %d values but begin has %d", axes.size(), n));
  }
  ASSIGN_OR_RETURN(axes, shape_rules::NormalizeAxes(axes, shape.size(), ctx));
  const bool size_mode = ctx.attrs().GetString("slice_mode") == "size";
  std::vector<AxisSlice> out;
  for (const DimExpr& d : shape) out.push_back(AxisSlice{0, d, 1});
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = axes[i];
    const DimExpr& d = shape[a];
    DimExpr b = spec.begin[i], e = spec.end[i];
    DimExpr s = spec.strides.empty() ? DimExpr(1) : spec.strides[spec.strides.size() == 1 ? 0 : i];
    if (size_mode) {
      // end = begin + size (size -1: to the end); strides are ignored, as in Relay.
      if (b.is_constant() && b.constant() < 0) b = b + d;
      e = (e.is_constant() && e.constant() == -1) ? DimExpr(kMaxDim) : b + e;
      s = 1;
    }
    ASSIGN_OR_RETURN(out[a], SliceAxis(ctx, d, b, e, s));
  }
  return out;
}

absl::Status CheckSliceMode(const ShapeContext& ctx) {
  const std::string& m = ctx.attrs().GetString("slice_mode");
  if (m == "end" || m == "size") return absl::OkStatus();
  return ctx.Error(absl::StrFormat("slice_mode must be 'end' or 'size', got '%s'", m));
}

Type SlicedType(const ShapeContext& ctx, const std::vector<AxisSlice>& axes) {
  std::vector<DimExpr> dims;
  for (const AxisSlice& a : axes) dims.push_back(a.len);
  return Type::Tensor(ctx.dtype(0), std::move(dims));
}

Result StridedSliceRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckSliceMode(ctx));
  ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
  const Attrs& a = ctx.attrs();
  SliceSpec spec{shape_rules::ToDims(a.GetIntList("begin")),
                 shape_rules::ToDims(a.GetIntList("end")),
                 shape_rules::ToDims(a.GetIntList("strides")), a.GetIntList("axes")};
  ASSIGN_OR_RETURN(auto axes, SliceAll(ctx, shape, spec));
  return One(SlicedType(ctx, axes));
}

Result DynStridedSliceRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckSliceMode(ctx));
  ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
  const char* names[] = {"begin", "end", "strides"};
  std::optional<std::vector<DimExpr>> v[3];
  for (int i = 0; i < 3; ++i) {
    if (ctx.rank(i + 1) > 1) {
      return ctx.Error(
          absl::StrFormat("%s must be 0-D or 1-D, got rank %d", names[i], ctx.rank(i + 1)));
    }
    ASSIGN_OR_RETURN(v[i], shape_rules::IntInput(ctx, i + 1, names[i]));
  }
  if (!v[0] || !v[1] || !v[2]) {
    return One(Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(shape.size())));
  }
  ASSIGN_OR_RETURN(auto axes, SliceAll(ctx, shape, SliceSpec{*v[0], *v[1], *v[2], {}}));
  return One(SlicedType(ctx, axes));
}

// Symbolic values of a slice of a small integer tensor with a static shape (`Shape(x)[1:]`, a
// flip of torch's [n, 2] pads table): the sliced shape is static, so the bounds are resolved
// with the rule's own arithmetic and the picked elements forwarded.
std::optional<std::vector<std::vector<DimExpr>>> SliceSymbolic(ShapeContext& ctx,
                                                               const SliceSpec& spec) {
  const std::optional<IntTable> in = StaticIntTable(ctx, 0);
  if (!in) return std::nullopt;
  auto axes = SliceAll(ctx, shape_rules::ToDims(in->shape), spec);
  if (!axes.ok()) return std::nullopt;
  std::vector<int64_t> out_shape;
  int64_t count = 1;
  for (const AxisSlice& a : *axes) {
    if (!a.start.is_constant() || !a.len.is_constant()) return std::nullopt;
    out_shape.push_back(a.len.constant());
    count *= a.len.constant();
  }
  const std::vector<int64_t> strides = shape_rules::Strides(in->shape);
  std::vector<DimExpr> out;
  std::vector<int64_t> idx(out_shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t src = 0;
    for (size_t a = 0; a < idx.size(); ++a) {
      src += ((*axes)[a].start.constant() + idx[a] * (*axes)[a].stride) * strides[a];
    }
    out.push_back(in->values[src]);
    shape_rules::NextIndex(idx, out_shape);
  }
  return std::vector<std::vector<DimExpr>>{std::move(out)};
}

// Re-derives the per-axis slices with constant dims (the kernel shares the rule's arithmetic).
KernelResult SliceKernelImpl(const Tensor& x, const Attrs& attrs, const SliceSpec& spec,
                             const Type& out_type, const OpDef& op) {
  std::vector<ShapeInput> no_inputs;
  ShapeContext ctx(op, attrs, no_inputs, /*enforce_mask=*/false);
  ASSIGN_OR_RETURN(auto axes, SliceAll(ctx, shape_rules::ToDims(x.shape()), spec));
  Tensor out = shape_rules::ZerosOf(out_type);
  const std::vector<int64_t> strides = shape_rules::Strides(x.shape());
  std::vector<int64_t> idx(out.rank(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t src = 0;
    for (int a = 0; a < out.rank(); ++a) {
      src += (axes[a].start.constant() + idx[a] * axes[a].stride) * strides[a];
    }
    shape_rules::CopyElements(x, src, out, i);
    shape_rules::NextIndex(idx, out.shape());
  }
  return std::vector<Tensor>{std::move(out)};
}

const OpDef& Def(absl::string_view name) { return *OpRegistry::Global().Find(name); }

KernelResult StridedSliceKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                absl::Span<const Type> out_t) {
  SliceSpec spec{shape_rules::ToDims(attrs.GetIntList("begin")),
                 shape_rules::ToDims(attrs.GetIntList("end")),
                 shape_rules::ToDims(attrs.GetIntList("strides")), attrs.GetIntList("axes")};
  return SliceKernelImpl(in[0], attrs, spec, out_t[0], Def("strided_slice"));
}

KernelResult DynStridedSliceKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Type> out_t) {
  SliceSpec spec{shape_rules::ToDims(in[1].ToInt64s()),
                 shape_rules::ToDims(in[2].ToInt64s()),
                 shape_rules::ToDims(in[3].ToInt64s()),
                 {}};
  return SliceKernelImpl(in[0], attrs, spec, out_t[0], Def("dyn.strided_slice"));
}

// ---- take ----------------------------------------------------------------------------------

absl::Status CheckTakeMode(const ShapeContext& ctx) {
  const std::string& m = ctx.attrs().GetString("mode");
  if (m == "clip" || m == "wrap" || m == "fast") return absl::OkStatus();
  return ctx.Error(absl::StrFormat("mode must be clip, wrap or fast, got '%s'", m));
}

Result TakeRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckTakeMode(ctx));
  if (!IsInteger(ctx.dtype(1))) {
    return ctx.Error(absl::StrFormat("indices must be integers, got %s", DTypeName(ctx.dtype(1))));
  }
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto indices, ctx.Shape(1));
  ASSIGN_OR_RETURN(int64_t axis,
                   shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), data.size(), ctx));
  std::vector<DimExpr> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

// Resolves index `i` into [0, n) per mode; nullopt when out of range in `fast` mode.
std::optional<int64_t> ResolveIndex(int64_t i, int64_t n, const std::string& mode) {
  if (n <= 0) return std::nullopt;
  if (mode == "clip") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "wrap") return ((i % n) + n) % n;
  return shape_rules::ResolveNegativeIndex(i, n);
}

std::optional<std::vector<std::vector<DimExpr>>> TakeSymbolic(ShapeContext& ctx) {
  if (!IsInteger(ctx.dtype(0)) || ctx.rank(0) != 1) return std::nullopt;
  auto data = ctx.IntValues(0);
  auto indices = ctx.IntValues(1);
  if (!data.ok() || !indices.ok() || !data->has_value() || !indices->has_value()) {
    return std::nullopt;
  }
  auto idx = shape_rules::AllConstant(**indices);
  if (!idx) return std::nullopt;
  std::vector<DimExpr> out;
  for (int64_t i : *idx) {
    auto r = ResolveIndex(i, (*data)->size(), ctx.attrs().GetString("mode"));
    if (!r) return std::nullopt;
    out.push_back((**data)[*r]);
  }
  return std::vector<std::vector<DimExpr>>{std::move(out)};
}

KernelResult TakeKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                        absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& xs = in[0].shape();
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += in[0].rank();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= xs[i];
  for (size_t i = axis + 1; i < xs.size(); ++i) inner *= xs[i];
  const int64_t n = xs[axis], num_idx = in[1].num_elements();
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < num_idx; ++j, dst += inner) {
      auto r = ResolveIndex(in[1].GetInt64(j), n, attrs.GetString("mode"));
      if (!r) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "take: index %d is out of range for an axis of size %d", in[1].GetInt64(j), n));
      }
      shape_rules::CopyElements(in[0], (o * n + *r) * inner, out, dst, inner);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- gather_elements -----------------------------------------------------------------------

Result GatherElementsRule(ShapeContext& ctx) {
  if (!IsInteger(ctx.dtype(1))) {
    return ctx.Error(absl::StrFormat("indices must be integers, got %s", DTypeName(ctx.dtype(1))));
  }
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto indices, ctx.Shape(1));
  if (data.empty() || data.size() != indices.size()) {
    return ctx.Error(absl::StrFormat("data and indices must have the same rank >= 1, got %d and %d",
                                     data.size(), indices.size()));
  }
  ASSIGN_OR_RETURN(int64_t axis,
                   shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), data.size(), ctx));
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) == axis || !data[d].is_constant() || !indices[d].is_constant()) {
      continue;  // symbolic dims: checked by the kernel
    }
    if (indices[d].constant() > data[d].constant()) {
      return ctx.Error(absl::StrFormat("indices dim %d is %d, more than data's %d", d,
                                       indices[d].constant(), data[d].constant()));
    }
  }
  return One(Type::Tensor(ctx.dtype(0), {indices.begin(), indices.end()}));
}

KernelResult GatherElementsKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                  absl::Span<const Type> out_t) {
  const Tensor& data = in[0];
  const Tensor& indices = in[1];
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const int rank = data.rank();
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += rank;
  const std::vector<int64_t>& ds = data.shape();
  const std::vector<int64_t>& is = indices.shape();
  for (int d = 0; d < rank; ++d) {
    if (d != axis && is[d] > ds[d]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "gather_elements: indices dim %d is %d, more than data's %d", d, is[d], ds[d]));
    }
  }
  const std::vector<int64_t> stride = shape_rules::Strides(ds);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    const int64_t raw = indices.GetInt64(i);
    auto r = shape_rules::ResolveNegativeIndex(raw, ds[axis]);
    if (!r) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "gather_elements: index %d is out of range for an axis of size %d", raw, ds[axis]));
    }
    int64_t src = 0;
    for (int d = 0; d < rank; ++d) src += (d == axis ? *r : index[d]) * stride[d];
    shape_rules::CopyElements(data, src, out, i, 1);
    shape_rules::NextIndex(index, is);
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterSliceOps(OpRegistry::Builder& b) {
  b.Register("gather_elements")
      .Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Attr("axis", AttrType::kInt, int64_t{0})
      .Pattern(FusionPattern::kOpaque)
      .Doc("one element per index along axis (take_along_axis); the shape of indices")
      .Rule(GatherElementsRule)
      .Reference(GatherElementsKernel);
  b.Register("strided_slice")
      .Input("data", InputDep::kShape)
      .Attr("begin", AttrType::kIntList)
      .Attr("end", AttrType::kIntList)
      .Attr("strides", AttrType::kIntList, std::vector<int64_t>{})
      .Attr("axes", AttrType::kIntList, std::vector<int64_t>{})
      .Attr("slice_mode", AttrType::kString, std::string("end"))
      .Pattern(FusionPattern::kInjective)
      .Doc("NumPy slicing with static begin/end/strides (optionally on given axes)")
      .Rule(StridedSliceRule)
      .SymbolicValues([](ShapeContext& ctx) {
        return SliceSymbolic(ctx, SliceSpec{shape_rules::ToDims(ctx.attrs().GetIntList("begin")),
                                            shape_rules::ToDims(ctx.attrs().GetIntList("end")),
                                            shape_rules::ToDims(ctx.attrs().GetIntList("strides")),
                                            ctx.attrs().GetIntList("axes")});
      })
      .Reference(StridedSliceKernel);
  b.Register("dyn.strided_slice")
      .Input("data", InputDep::kShape)
      .Input("begin", InputDep::kValue)
      .Input("end", InputDep::kValue)
      .Input("strides", InputDep::kValue)
      .Attr("slice_mode", AttrType::kString, std::string("end"))
      .Pattern(FusionPattern::kInjective)
      .Doc("strided_slice with run-time begin/end/strides; the data is never copied for it")
      .Rule(DynStridedSliceRule)
      .SymbolicValues([](ShapeContext& ctx) -> std::optional<std::vector<std::vector<DimExpr>>> {
        // Bounds known as constants only: a symbolic bound on a shape value is rare.
        std::vector<DimExpr> bes[3];
        for (int i = 0; i < 3; ++i) {
          auto v = ctx.IntValues(i + 1);
          if (!v.ok() || !v->has_value()) return std::nullopt;
          for (const DimExpr& d : **v) {
            if (!d.is_constant()) return std::nullopt;
          }
          bes[i] = **v;
        }
        return SliceSymbolic(ctx, SliceSpec{bes[0], bes[1], bes[2], {}});
      })
      .Reference(DynStridedSliceKernel);
  b.Register("take")
      .Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Attr("axis", AttrType::kInt, int64_t{0})
      .Attr("mode", AttrType::kString, std::string("clip"))
      .Pattern(FusionPattern::kInjective)
      .Doc("gathers along axis: data.shape[:axis] + indices.shape + data.shape[axis+1:]")
      .Rule(TakeRule)
      .SymbolicValues(TakeSymbolic)
      .Reference(TakeKernel);
}

}  // namespace hetpass
