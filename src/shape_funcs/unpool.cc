// Max unpooling: nn.max_unpool2d and dyn.nn.max_unpool2d (ONNX MaxUnpool-11, 2-D), the partial
// inverse of nn.max_pool2d with its indices.
//
//   nn.max_unpool2d(data [N, C, H, W], indices [N, C, H, W]) {kernel_size, strides, padding,
//                   output_shape}
//   dyn.nn.max_unpool2d(data, indices, output_shape)   output_shape computed at run time
//
// The unpooled shape is the pooling input's: [N, C, (H - 1) * stride - (pad_begin + pad_end)
// + kernel, likewise W], symbolic when H and W are. indices are MaxPool's Indices output: flat
// positions in that whole unpooled tensor (over N * C * H' * W', not per plane). The result is
// zero except data[k] at indices[k] (the last write wins for a repeated index).
//
// output_shape (4 values), when given, is the result's shape; each must be at least the
// unpooled dim, and the unpooled tensor fills its leading corner ([:N, :C, :H', :W']) with
// zeros after. That is ONNX's reference implementation, whose outputs ONNX's node tests pin
// (ONNX Runtime scatters the flat indices into output_shape directly instead). Padding is used
// for the unpooled shape either way.
//
// Masks: data and indices `shape` (the indices are data the kernel reads: one out of range is a
// kernel error, InvalidArgument naming it); dyn's output_shape `value`. A constant output_shape
// is an attribute of the static op, so the ONNX importer only needs the dyn op for computed ones.
#include "shape_funcs/unpool.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using shape_rules::ProvablyDifferent;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

// The window attributes, checked: kernel_size and strides two positive ints, padding four
// non-negative ints (top, left, bottom, right) whose per-axis sums fit int64.
struct UnpoolWindow {
  std::array<int64_t, 2> kernel, stride, pad_sum;
};

absl::StatusOr<UnpoolWindow> ReadWindow(const Attrs& a) {
  UnpoolWindow w;
  const std::vector<int64_t>& k = a.GetIntList("kernel_size");
  const std::vector<int64_t>& s = a.GetIntList("strides");
  const std::vector<int64_t>& p = a.GetIntList("padding");
  if (k.size() != 2 || s.size() != 2 || p.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("kernel_size and strides need 2 values and padding 4, got %d, %d and %d",
                        k.size(), s.size(), p.size()));
  }
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0 || s[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("kernel_size and strides must be positive, got %d and %d", k[i], s[i]));
    }
    if (p[i] < 0 || p[i + 2] < 0 || __builtin_add_overflow(p[i], p[i + 2], &w.pad_sum[i])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "padding must be non-negative with sums in int64, got %d and %d", p[i], p[i + 2]));
    }
    w.kernel[i] = k[i];
    w.stride[i] = s[i];
  }
  return w;
}

// (in - 1) * stride - pad_sum + kernel for a concrete `in`; nullopt when it overflows int64.
std::optional<int64_t> UnpooledDim(int64_t in, const UnpoolWindow& w, int axis) {
  int64_t r;
  if (__builtin_mul_overflow(in - 1, w.stride[axis], &r) ||
      __builtin_sub_overflow(r, w.pad_sum[axis], &r) ||
      __builtin_add_overflow(r, w.kernel[axis], &r)) {
    return std::nullopt;
  }
  return r;
}

// The unpooled shape [N, C, H', W'] (symbolic where data's dims are) after the checks both
// ops share; nullopt output_shape: the unpooled shape is the result.
Result UnpoolType(ShapeContext& ctx, const std::optional<std::vector<DimExpr>>& output_shape,
                  bool output_shape_known) {
  absl::StatusOr<UnpoolWindow> w = ReadWindow(ctx.attrs());
  if (!w.ok()) return ctx.Error(w.status().message());
  if (ctx.rank(0) != 4 || ctx.rank(1) != 4) {
    return ctx.Error(absl::StrFormat("data and indices must have rank 4, got %d and %d",
                                     ctx.rank(0), ctx.rank(1)));
  }
  if (!IsInteger(ctx.dtype(1))) {
    return ctx.Error(absl::StrFormat("indices must be integers, got %s", DTypeName(ctx.dtype(1))));
  }
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto idx, ctx.Shape(1));
  for (int d = 0; d < 4; ++d) {
    if (ProvablyDifferent(x[d], idx[d])) {
      return ctx.Error(absl::StrFormat("indices %s must have data's shape %s",
                                       ShapeToString(shape_rules::ToVec(idx)),
                                       ShapeToString(shape_rules::ToVec(x))));
    }
  }
  std::vector<DimExpr> unpooled = {x[0], x[1]};
  for (int axis = 0; axis < 2; ++axis) {
    const DimExpr& in = x[2 + axis];
    if (!in.is_constant()) {
      unpooled.push_back((in - 1) * w->stride[axis] - w->pad_sum[axis] + w->kernel[axis]);
      continue;
    }
    const std::optional<int64_t> out = UnpooledDim(in.constant(), *w, axis);
    if (!out || *out < 0) {
      return ctx.Error(absl::StrFormat(
          "input dim %d with kernel %d, stride %d and padding %d unpools to %s", in.constant(),
          w->kernel[axis], w->stride[axis], w->pad_sum[axis],
          out ? absl::StrFormat("%d", *out) : std::string("more than int64 holds")));
    }
    unpooled.push_back(*out);
  }
  if (!output_shape_known) return One(Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(4)));
  if (!output_shape) return One(Type::Tensor(ctx.dtype(0), std::move(unpooled)));
  if (output_shape->size() != 4) {
    return ctx.Error(
        absl::StrFormat("output_shape must have 4 values, got %d", output_shape->size()));
  }
  for (int d = 0; d < 4; ++d) {
    const DimExpr& o = (*output_shape)[d];
    if (o.is_constant() && unpooled[d].is_constant() && o.constant() < unpooled[d].constant()) {
      return ctx.Error(
          absl::StrFormat("output_shape %s is smaller than the unpooled shape %s in dim %d",
                          ShapeToString(*output_shape), ShapeToString(unpooled), d));
    }
  }
  return One(Type::Tensor(ctx.dtype(0), *output_shape));
}

Result MaxUnpoolRule(ShapeContext& ctx) {
  const std::vector<int64_t>& o = ctx.attrs().GetIntList("output_shape");
  if (o.empty()) return UnpoolType(ctx, std::nullopt, true);
  return UnpoolType(ctx, shape_rules::ToDims(o), true);
}

Result DynMaxUnpoolRule(ShapeContext& ctx) {
  if (ctx.rank(2) != 1) {
    return ctx.Error(absl::StrFormat("output_shape must be 1-D, got rank %d", ctx.rank(2)));
  }
  ASSIGN_OR_RETURN(auto o, shape_rules::IntInput(ctx, 2, "output_shape"));
  if (!o) return UnpoolType(ctx, std::nullopt, false);
  return UnpoolType(ctx, o, true);
}

KernelResult MaxUnpoolKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                             absl::Span<const Type> out_t) {
  constexpr char kOp[] = "op 'nn.max_unpool2d'";
  const Tensor& data = in[0];
  const Tensor& indices = in[1];
  const std::vector<int64_t>& xs = data.shape();
  // The shape function does not run when the types are known from symbols: these are the
  // run-time checks of what the rule could only check for constants.
  if (indices.shape() != xs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: indices %s must have data's shape %s", kOp,
                        ShapeToString(shape_rules::ToDims(indices.shape())),
                        ShapeToString(shape_rules::ToDims(xs))));
  }
  absl::StatusOr<UnpoolWindow> w = ReadWindow(attrs);
  if (!w.ok()) return w.status();
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& os = out.shape();
  std::array<int64_t, 4> unpooled = {xs[0], xs[1], 0, 0};
  for (int axis = 0; axis < 2; ++axis) {
    const std::optional<int64_t> d = UnpooledDim(xs[2 + axis], *w, axis);
    if (!d || *d < 0)
      return absl::InvalidArgumentError(absl::StrFormat("%s: bad unpooled dim", kOp));
    unpooled[2 + axis] = *d;
  }
  for (int d = 0; d < 4; ++d) {
    if (os[d] < unpooled[d]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: output dim %d is %d, smaller than the unpooled %d", kOp, d, os[d], unpooled[d]));
    }
  }
  // The flat index range of the unpooled tensor; its element count fits: it is at most the
  // output's, which is allocated.
  const int64_t plane = unpooled[2] * unpooled[3];
  const int64_t total = unpooled[0] * unpooled[1] * plane;
  for (int64_t k = 0; k < data.num_elements(); ++k) {
    const int64_t i = indices.GetInt64(k);
    if (i < 0 || i >= total) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: index %d of element %d is outside the unpooled tensor of %d elements", kOp, i, k,
          total));
    }
    // (n, c, h, w) in the unpooled shape, placed at the same coordinates of the output.
    const int64_t nc = i / plane, h = i % plane / unpooled[3], x = i % unpooled[3];
    const int64_t n = nc / unpooled[1], c = nc % unpooled[1];
    shape_rules::CopyElements(data, k, out, ((n * os[1] + c) * os[2] + h) * os[3] + x);
  }
  return std::vector<Tensor>{std::move(out)};
}

void UnpoolAttrs(OpDefBuilder& op) {
  op.Attr("kernel_size", AttrType::kIntList)
      .Attr("strides", AttrType::kIntList, std::vector<int64_t>{1, 1})
      .Attr("padding", AttrType::kIntList, std::vector<int64_t>{0, 0, 0, 0});
}

}  // namespace

void RegisterUnpoolOps(OpRegistry::Builder& b) {
  OpDefBuilder unpool = b.Register("nn.max_unpool2d");
  unpool.Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Attr("output_shape", AttrType::kIntList, std::vector<int64_t>{})
      .Pattern(FusionPattern::kOpaque)
      .Doc(
          "zeros with data scattered at the flat indices of max_pool2d's input shape "
          "(ONNX MaxUnpool); output_shape (empty: that shape) pads it at the end")
      .Rule(MaxUnpoolRule)
      .Reference(MaxUnpoolKernel);
  UnpoolAttrs(unpool);
  OpDefBuilder dyn = b.Register("dyn.nn.max_unpool2d");
  dyn.Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Input("output_shape", InputDep::kValue)
      .Pattern(FusionPattern::kOpaque)
      .Doc("nn.max_unpool2d to a run-time output_shape (4 integers)")
      .Rule(DynMaxUnpoolRule)
      .Reference(MaxUnpoolKernel);
  UnpoolAttrs(dyn);
}

}  // namespace hetpass
