// Neural-network ops: nn.dense, nn.bias_add, nn.conv2d, nn.conv2d_transpose, nn.max_pool2d,
// nn.max_pool2d_with_indices (ONNX MaxPool's Indices output, which nn.max_unpool2d consumes),
// nn.avg_pool2d, nn.softmax, nn.pad and dyn.nn.pad.
//
// Masks: every tensor operand is `shape`: output shapes follow from input shapes and
// attributes, so type inference keeps them symbolic (`nn.dense` of f32[n, 1024] by
// f32[512, 1024] is f32[n, 512]; conv2d spatial dims are floordiv expressions) and no shape
// function ever copies data. The exceptions are dyn.nn.pad, whose `pad_width` is `value` (the
// pads are run-time data) and whose `pad_value` is `none`: the fill value never affects the
// shape. TVM's dyn.nn.pad declared the whole op data dependent, copying the padded tensor and
// the fill value to the host; here only the (2 x rank) pad widths travel.
//
// nn.conv2d_transpose (ONNX ConvTranspose, the mask head's upsampling) is the gradient of
// nn.conv2d with respect to its data: every input pixel scatters weight * value into a kernel
// window of the output placed at (ih * stride - pad_top, iw * stride - pad_left), dilated. Its
// weight is [Cin, Cout / groups, kh, kw] (IOHW, as ONNX and PyTorch store it) and the output
// dim is stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pad_before - pad_after;
// output_padding only lengthens the far end (rows no input reaches are 0), resolving which of
// the `stride` input sizes a strided conv2d would map back to. Padding follows nn.conv2d
// (1, 2 or 4 ints: top, left, bottom, right) and crops the output instead of growing it.
//
// nn.conv2d's data and result may be in a blocked channel layout (data_layout / out_layout
// NCHW<b>c, passes/shape_funcs/channel_layout.h; block-conv-layout writes them): the
// convolution is the same on the logical [N, C, H, W] elements, only where they are stored
// changes, and a blocked result needs output channels divisible by its block.
//
// Patterns: dense, conv2d and conv2d_transpose are out-elementwise-fusable (a GEMM/conv
// kernel can absorb a following bias/relu); bias_add is broadcast; pad is injective. softmax
// is opaque, as in TVM: it is a reduction (max and sum over the axis) whose result is
// broadcast back over the same axis, so it reads every element twice; treating it as
// `reduction` would let the fuser append elementwise consumers to a kernel that is really a
// two-pass schedule, and no backend here has such a fused schedule.
#include "shape_funcs/nn.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "passes/shape_funcs/channel_layout.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using shape_rules::ProvablyDifferent;
using shape_rules::ToVec;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

absl::Status CheckSameDType(const ShapeContext& ctx, int a, int b) {
  if (ctx.dtype(a) == ctx.dtype(b)) return absl::OkStatus();
  return ctx.Error(absl::StrFormat("%s and %s dtypes differ: %s vs %s", ctx.op().input(a).name,
                                   ctx.op().input(b).name, DTypeName(ctx.dtype(a)),
                                   DTypeName(ctx.dtype(b))));
}

absl::Status CheckRank(const ShapeContext& ctx, int i, int rank) {
  if (ctx.rank(i) == rank) return absl::OkStatus();
  return ctx.Error(absl::StrFormat("%s must have rank %d, got rank %d", ctx.op().input(i).name,
                                   rank, ctx.rank(i)));
}

// ---- nn.dense ------------------------------------------------------------------------------

Result DenseRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  if (ctx.rank(0) < 1) return ctx.Error("data must have rank >= 1, got a scalar");
  RETURN_IF_ERROR(CheckRank(ctx, 1, 2));
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto weight, ctx.Shape(1));
  const DimExpr& k_data = data.back();
  const DimExpr& k_weight = weight[1];
  if (ProvablyDifferent(k_data, k_weight)) {
    return ctx.Error(
        absl::StrFormat("reduction dims differ: %d vs %d", k_data.constant(), k_weight.constant()));
  }
  const int64_t units = ctx.attrs().GetInt("units");
  if (units > 0 && ProvablyDifferent(weight[0], units)) {
    return ctx.Error(
        absl::StrFormat("units = %d but the weight has %d rows", units, weight[0].constant()));
  }
  std::vector<DimExpr> out = ToVec(data);
  out.back() = weight[0];
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult DenseKernel(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const int64_t k = in[0].shape().back();
  const int64_t n = in[1].shape()[0];
  const int64_t rows =
      k == 0 ? out.num_elements() / std::max<int64_t>(n, 1) : in[0].num_elements() / k;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t x = 0; x < k; ++x)
        acc += in[0].GetDouble(r * k + x) * in[1].GetDouble(j * k + x);
      out.SetDouble(r * n + j, acc);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- nn.bias_add ---------------------------------------------------------------------------

Result BiasAddRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  RETURN_IF_ERROR(CheckRank(ctx, 1, 1));
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto bias, ctx.Shape(1));
  ASSIGN_OR_RETURN(int64_t axis,
                   shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), data.size(), ctx));
  if (ProvablyDifferent(data[axis], bias[0])) {
    return ctx.Error(absl::StrFormat("bias has %d elements but data axis %d has %d",
                                     bias[0].constant(), axis, data[axis].constant()));
  }
  return One(Type::Tensor(ctx.dtype(0), ToVec(data)));
}

KernelResult BiasAddKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& shape = in[0].shape();
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += in[0].rank();
  int64_t inner = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    out.SetDouble(i, in[0].GetDouble(i) + in[1].GetDouble((i / inner) % shape[axis]));
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- windows (conv2d, max_pool2d) ------------------------------------------------------------

// Relay padding: 1 int (all sides), 2 ints (top/bottom, left/right) or 4 ints (top, left,
// bottom, right).
absl::StatusOr<std::array<int64_t, 4>> Padding4(const ShapeContext& ctx) {
  const std::vector<int64_t>& p = ctx.attrs().GetIntList("padding");
  std::array<int64_t, 4> out;
  if (p.size() == 1) {
    out = {p[0], p[0], p[0], p[0]};
  } else if (p.size() == 2) {
    out = {p[0], p[1], p[0], p[1]};
  } else if (p.size() == 4) {
    out = {p[0], p[1], p[2], p[3]};
  } else {
    return ctx.Error(absl::StrFormat("padding must have 1, 2 or 4 values, got %d", p.size()));
  }
  for (int64_t v : out) {
    if (v < 0) return ctx.Error(absl::StrFormat("padding must be >= 0, got %d", v));
  }
  return out;
}

// before + after along one spatial axis. Each pad is a non-negative user attribute, so their sum
// can exceed int64: that is an error naming the pads, not a wrap.
absl::StatusOr<int64_t> PadSum(const ShapeContext& ctx, int64_t before, int64_t after,
                               absl::string_view which) {
  int64_t sum;
  if (__builtin_add_overflow(before, after, &sum)) {
    return ctx.Error(absl::StrFormat("%s padding %d + %d overflows int64", which, before, after));
  }
  return sum;
}

// A pair attribute (strides, dilation, pool_size): 1 or 2 positive ints.
absl::StatusOr<std::array<int64_t, 2>> Pair(const ShapeContext& ctx, absl::string_view name) {
  const std::vector<int64_t>& v = ctx.attrs().GetIntList(name);
  if (v.size() != 1 && v.size() != 2) {
    return ctx.Error(absl::StrFormat("%s must have 1 or 2 values, got %d", name, v.size()));
  }
  std::array<int64_t, 2> out = {v[0], v.back()};
  for (int64_t x : out) {
    if (x <= 0) return ctx.Error(absl::StrFormat("%s must be positive, got %d", name, x));
  }
  return out;
}

// (in + pad - dil*(k-1) - 1) // stride + 1; ceil_mode rounds the division up instead.
absl::StatusOr<DimExpr> WindowDim(const ShapeContext& ctx, const DimExpr& in, int64_t pad,
                                  const DimExpr& kernel, int64_t dilation, int64_t stride,
                                  bool ceil_mode, absl::string_view which) {
  DimExpr span = in + pad - dilation * (kernel - 1) - 1;
  if (ceil_mode) span = span + (stride - 1);
  DimExpr out = DimExpr::FloorDiv(span, stride) + 1;
  if (out.is_constant() && out.constant() <= 0) {
    return ctx.Error(absl::StrFormat(
        "output %s would be %d: input %s (padded by %d) is smaller than the kernel %s "
        "(dilation %d)",
        which, out.constant(), in.ToString(), pad, kernel.ToString(), dilation));
  }
  return out;
}

// data_layout / out_layout as blocks (0 = NCHW); an empty out_layout is data_layout.
struct ConvLayouts {
  int64_t in = 0, out = 0;
};

std::optional<ConvLayouts> ReadConvLayouts(const Attrs& a) {
  const std::optional<int64_t> in = ParseChannelLayout(a.GetString("data_layout"));
  const std::string& out_name = a.GetString("out_layout");
  const std::optional<int64_t> out = out_name.empty() ? in : ParseChannelLayout(out_name);
  if (!in || !out || a.GetString("kernel_layout") != "OIHW") return std::nullopt;
  return ConvLayouts{*in, *out};
}

Result Conv2dRule(ShapeContext& ctx) {
  const Attrs& a = ctx.attrs();
  const std::optional<ConvLayouts> layouts = ReadConvLayouts(a);
  if (!layouts) {
    return ctx.Error(absl::StrFormat(
        "data_layout and out_layout must be NCHW or NCHW<b>c (out_layout empty: the data's) and "
        "kernel_layout OIHW, got %s/%s/%s",
        a.GetString("data_layout"), a.GetString("out_layout"), a.GetString("kernel_layout")));
  }
  RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  RETURN_IF_ERROR(CheckRank(ctx, 0, layouts->in == 0 ? 4 : 5));
  RETURN_IF_ERROR(CheckRank(ctx, 1, 4));
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto w, ctx.Shape(1));
  if (layouts->in > 0 && ProvablyDifferent(x[4], layouts->in)) {
    return ctx.Error(absl::StrFormat("data %s is not in %s: its last dim is not %d",
                                     ShapeToString(ToVec(x)), ChannelLayoutName(layouts->in),
                                     layouts->in));
  }
  const DimExpr data_channels = layouts->in > 0 ? x[1] * layouts->in : x[1];
  ASSIGN_OR_RETURN(auto pad, Padding4(ctx));
  ASSIGN_OR_RETURN(auto stride, Pair(ctx, "strides"));
  ASSIGN_OR_RETURN(auto dil, Pair(ctx, "dilation"));
  const int64_t groups = a.GetInt("groups");
  if (groups <= 0) return ctx.Error(absl::StrFormat("groups must be positive, got %d", groups));
  const DimExpr in_channels = w[1] * groups;
  if (ProvablyDifferent(data_channels, in_channels)) {
    return ctx.Error(absl::StrFormat("data has %d channels but weight expects %d (%d x %d groups)",
                                     data_channels.constant(), in_channels.constant(),
                                     w[1].constant(), groups));
  }
  if (w[0].is_constant() && w[0].constant() % groups != 0) {
    return ctx.Error(absl::StrFormat("%d output channels are not divisible by %d groups",
                                     w[0].constant(), groups));
  }
  const int64_t channels = a.GetInt("channels");
  if (channels > 0 && ProvablyDifferent(w[0], channels)) {
    return ctx.Error(absl::StrFormat("channels = %d but the weight has %d output channels",
                                     channels, w[0].constant()));
  }
  const std::vector<int64_t>& ks = a.GetIntList("kernel_size");
  if (!ks.empty() &&
      (ks.size() != 2 || ProvablyDifferent(w[2], ks[0]) || ProvablyDifferent(w[3], ks[1]))) {
    return ctx.Error(
        absl::StrFormat("kernel_size does not match the weight %s", ShapeToString(ToVec(w))));
  }
  ASSIGN_OR_RETURN(const int64_t pad_h, PadSum(ctx, pad[0], pad[2], "height"));
  ASSIGN_OR_RETURN(const int64_t pad_w, PadSum(ctx, pad[1], pad[3], "width"));
  ASSIGN_OR_RETURN(DimExpr h,
                   WindowDim(ctx, x[2], pad_h, w[2], dil[0], stride[0], false, "height"));
  ASSIGN_OR_RETURN(DimExpr wd,
                   WindowDim(ctx, x[3], pad_w, w[3], dil[1], stride[1], false, "width"));
  if (layouts->out == 0) return One(Type::Tensor(ctx.dtype(0), {x[0], w[0], h, wd}));
  const int64_t b = layouts->out;
  if (w[0].is_constant() && w[0].constant() % b != 0) {
    return ctx.Error(absl::StrFormat("%d output channels do not split into blocks of %d (%s)",
                                     w[0].constant(), b, ChannelLayoutName(b)));
  }
  return One(Type::Tensor(ctx.dtype(0), {x[0], DimExpr::FloorDiv(w[0], b), h, wd, DimExpr(b)}));
}

struct Window {
  std::array<int64_t, 4> pad;
  std::array<int64_t, 2> stride, dil;
};

Window ConcreteWindow(const Attrs& a) {
  const std::vector<int64_t>& p = a.GetIntList("padding");
  Window w;
  if (p.size() == 1) w.pad = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) w.pad = {p[0], p[1], p[0], p[1]};
  if (p.size() == 4) w.pad = {p[0], p[1], p[2], p[3]};
  const auto& s = a.GetIntList("strides");
  const auto& d = a.GetIntList("dilation");
  w.stride = {s[0], s.back()};
  w.dil = {d[0], d.back()};
  return w;
}

KernelResult Conv2dKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const Window win = ConcreteWindow(attrs);
  const ConvLayouts layouts = ReadConvLayouts(attrs).value_or(ConvLayouts{});
  const int64_t groups = attrs.GetInt("groups");
  const auto& xv = in[0].shape();
  const auto& ws = in[1].shape();
  const auto& ov = out.shape();
  // Logical NCHW dims of data and result; the layouts only move elements.
  const std::array<int64_t, 4> xs = {xv[0], layouts.in > 0 ? xv[1] * layouts.in : xv[1], xv[2],
                                     xv[3]};
  const std::array<int64_t, 4> os = {ov[0], layouts.out > 0 ? ov[1] * layouts.out : ov[1], ov[2],
                                     ov[3]};
  const int64_t cin_g = ws[1], cout_g = ws[0] / groups;
  for (int64_t n = 0; n < os[0]; ++n) {
    for (int64_t oc = 0; oc < os[1]; ++oc) {
      const int64_t g = oc / cout_g;
      for (int64_t oh = 0; oh < os[2]; ++oh) {
        for (int64_t ow = 0; ow < os[3]; ++ow) {
          double acc = 0;
          for (int64_t ic = 0; ic < cin_g; ++ic) {
            const int64_t c = g * cin_g + ic;
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              const int64_t ih = oh * win.stride[0] - win.pad[0] + kh * win.dil[0];
              if (ih < 0 || ih >= xs[2]) continue;
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                const int64_t iw = ow * win.stride[1] - win.pad[1] + kw * win.dil[1];
                if (iw < 0 || iw >= xs[3]) continue;
                acc += in[0].GetDouble(ChannelLayoutOffset(xs, layouts.in, n, c, ih, iw)) *
                       in[1].GetDouble(((oc * ws[1] + ic) * ws[2] + kh) * ws[3] + kw);
              }
            }
          }
          out.SetDouble(ChannelLayoutOffset(os, layouts.out, n, oc, oh, ow), acc);
        }
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- nn.conv2d_transpose -----------------------------------------------------------------------

// output_padding: 1 or 2 non-negative ints (unlike Pair, 0 is the usual value).
absl::StatusOr<std::array<int64_t, 2>> OutputPadding(const ShapeContext& ctx) {
  const std::vector<int64_t>& v = ctx.attrs().GetIntList("output_padding");
  if (v.size() != 1 && v.size() != 2) {
    return ctx.Error(absl::StrFormat("output_padding must have 1 or 2 values, got %d", v.size()));
  }
  std::array<int64_t, 2> out = {v[0], v.back()};
  for (int64_t x : out) {
    if (x < 0) return ctx.Error(absl::StrFormat("output_padding must be >= 0, got %d", x));
  }
  return out;
}

// stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1 - pad; padding that crops
// the whole output (a provably non-positive dim) is an error naming the dim.
absl::StatusOr<DimExpr> TransposedDim(const ShapeContext& ctx, const DimExpr& in, int64_t pad,
                                      const DimExpr& kernel, int64_t dilation, int64_t stride,
                                      int64_t output_padding, absl::string_view which) {
  const DimExpr out = stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1 - pad;
  if (out.is_constant() && out.constant() <= 0) {
    return ctx.Error(absl::StrFormat(
        "output %s would be %d: padding %d crops more than the %s input (kernel %s, stride %d, "
        "dilation %d) produces",
        which, out.constant(), pad, in.ToString(), kernel.ToString(), stride, dilation));
  }
  return out;
}

Result Conv2dTransposeRule(ShapeContext& ctx) {
  const Attrs& a = ctx.attrs();
  RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  RETURN_IF_ERROR(CheckRank(ctx, 0, 4));
  RETURN_IF_ERROR(CheckRank(ctx, 1, 4));
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto w, ctx.Shape(1));
  ASSIGN_OR_RETURN(auto pad, Padding4(ctx));
  ASSIGN_OR_RETURN(auto stride, Pair(ctx, "strides"));
  ASSIGN_OR_RETURN(auto dil, Pair(ctx, "dilation"));
  ASSIGN_OR_RETURN(auto out_pad, OutputPadding(ctx));
  const int64_t groups = a.GetInt("groups");
  if (groups <= 0) return ctx.Error(absl::StrFormat("groups must be positive, got %d", groups));
  // The weight is [Cin, Cout / groups, kh, kw]: its first dim is the data's channel count.
  if (ProvablyDifferent(x[1], w[0])) {
    return ctx.Error(
        absl::StrFormat("data has %d channels but the weight [Cin, Cout/groups, kh, "
                        "kw] has %d input channels",
                        x[1].constant(), w[0].constant()));
  }
  if (w[0].is_constant() && w[0].constant() % groups != 0) {
    return ctx.Error(absl::StrFormat("%d input channels are not divisible by %d groups",
                                     w[0].constant(), groups));
  }
  ASSIGN_OR_RETURN(const int64_t pad_h, PadSum(ctx, pad[0], pad[2], "height"));
  ASSIGN_OR_RETURN(const int64_t pad_w, PadSum(ctx, pad[1], pad[3], "width"));
  ASSIGN_OR_RETURN(DimExpr h,
                   TransposedDim(ctx, x[2], pad_h, w[2], dil[0], stride[0], out_pad[0], "height"));
  ASSIGN_OR_RETURN(DimExpr wd,
                   TransposedDim(ctx, x[3], pad_w, w[3], dil[1], stride[1], out_pad[1], "width"));
  return One(Type::Tensor(ctx.dtype(0), {x[0], w[1] * groups, h, wd}));
}

// Scatter form: each input pixel adds weight * value to its window of the output. Sums go
// through a double buffer so the result does not depend on the output dtype's rounding order.
KernelResult Conv2dTransposeKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const Window win = ConcreteWindow(attrs);
  const int64_t groups = attrs.GetInt("groups");
  const auto& xs = in[0].shape();
  const auto& ws = in[1].shape();
  const auto& os = out.shape();
  const int64_t cin_g = ws[0] / groups, cout_g = ws[1];
  std::vector<double> acc(out.num_elements(), 0.0);
  for (int64_t n = 0; n < xs[0]; ++n) {
    for (int64_t c = 0; c < xs[1]; ++c) {
      const int64_t g = c / cin_g;
      for (int64_t ih = 0; ih < xs[2]; ++ih) {
        for (int64_t iw = 0; iw < xs[3]; ++iw) {
          const double v = in[0].GetDouble(((n * xs[1] + c) * xs[2] + ih) * xs[3] + iw);
          for (int64_t oc = 0; oc < cout_g; ++oc) {
            const int64_t o = g * cout_g + oc;
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              const int64_t oh = ih * win.stride[0] - win.pad[0] + kh * win.dil[0];
              if (oh < 0 || oh >= os[2]) continue;
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                const int64_t ow = iw * win.stride[1] - win.pad[1] + kw * win.dil[1];
                if (ow < 0 || ow >= os[3]) continue;
                acc[((n * os[1] + o) * os[2] + oh) * os[3] + ow] +=
                    v * in[1].GetDouble(((c * ws[1] + oc) * ws[2] + kh) * ws[3] + kw);
              }
            }
          }
        }
      }
    }
  }
  for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, acc[i]);
  return std::vector<Tensor>{std::move(out)};
}

// ---- nn.max_pool2d (and nn.avg_pool2d's shape) ----------------------------------------------

// TVM's rule: ceil_mode adds stride-1 to the numerator (no PyTorch-style correction for a last
// window that starts in the padding).
// The layout may be NCHW<b>c (block-conv-layout keeps pooling between convolutions blocked):
// data [N, C/b, H, W, b], result [N, C/b, H', W', b], the window over H and W as in NCHW.
Result MaxPool2dRule(ShapeContext& ctx) {
  const Attrs& a = ctx.attrs();
  const std::optional<int64_t> block = ParseChannelLayout(a.GetString("layout"));
  if (!block) {
    return ctx.Error(absl::StrFormat("layout must be NCHW or NCHW<b>c, got %s",
                                     a.GetString("layout")));
  }
  RETURN_IF_ERROR(CheckRank(ctx, 0, *block == 0 ? 4 : 5));
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  if (*block > 0 && ProvablyDifferent(x[4], *block)) {
    return ctx.Error(absl::StrFormat("data %s is not in %s: its last dim is not %d",
                                     ShapeToString(ToVec(x)), ChannelLayoutName(*block), *block));
  }
  ASSIGN_OR_RETURN(auto pool, Pair(ctx, "pool_size"));
  ASSIGN_OR_RETURN(auto pad, Padding4(ctx));
  ASSIGN_OR_RETURN(auto stride, Pair(ctx, "strides"));
  ASSIGN_OR_RETURN(auto dil, Pair(ctx, "dilation"));
  const bool ceil_mode = a.GetBool("ceil_mode");
  ASSIGN_OR_RETURN(const int64_t pad_h, PadSum(ctx, pad[0], pad[2], "height"));
  ASSIGN_OR_RETURN(const int64_t pad_w, PadSum(ctx, pad[1], pad[3], "width"));
  ASSIGN_OR_RETURN(DimExpr h,
                   WindowDim(ctx, x[2], pad_h, pool[0], dil[0], stride[0], ceil_mode, "height"));
  ASSIGN_OR_RETURN(DimExpr w,
                   WindowDim(ctx, x[3], pad_w, pool[1], dil[1], stride[1], ceil_mode, "width"));
  if (*block > 0) return One(Type::Tensor(ctx.dtype(0), {x[0], x[1], h, w, x[4]}));
  return One(Type::Tensor(ctx.dtype(0), {x[0], x[1], h, w}));
}

// The pooling loops' view of a tensor in either layout: `planes` planes (N*C in NCHW, N*C/b
// blocked) of H x W pixels, each pixel `lanes` channels (1, or b) stored together, so that
// element (plane, h, w, lane) is at ((plane * H + h) * W + w) * lanes + lane.
struct PoolPlanes {
  int64_t planes, lanes;
};
PoolPlanes PlanesOf(const std::vector<int64_t>& shape) {
  if (shape.size() == 5) return {shape[0] * shape[1], shape[4]};
  return {shape[0] * shape[1], 1};
}

// Max pooling of x into `out`; with `indices`, also where each maximum is: the first element
// of the window holding the largest value (ONNX's reference scans rows, then columns, and keeps
// a later element only if strictly larger), as a flat position in the whole input
// (nc * H * W + h * W + w, or nc * H * W + h + w * H for storage_order 1). A window whose
// values are all -inf or NaN points at its first element; one entirely in the padding at -1.
void MaxPool2dInto(const Tensor& x, const Attrs& attrs, Tensor& out, Tensor* indices) {
  const Window win = ConcreteWindow(attrs);
  const auto& ps = attrs.GetIntList("pool_size");
  const std::array<int64_t, 2> pool = {ps[0], ps.back()};
  const auto& xs = x.shape();
  const auto& os = out.shape();
  const bool column_major = indices != nullptr && attrs.GetInt("storage_order") == 1;
  const PoolPlanes p = PlanesOf(xs);  // indices only in NCHW (its rule): lanes 1 there
  int64_t o_idx = 0;
  for (int64_t nc = 0; nc < p.planes; ++nc) {
    for (int64_t oh = 0; oh < os[2]; ++oh) {
      for (int64_t ow = 0; ow < os[3]; ++ow) {
        for (int64_t lane = 0; lane < p.lanes; ++lane, ++o_idx) {
          double m = -std::numeric_limits<double>::infinity();
          int64_t at = -1, first = -1;
          for (int64_t kh = 0; kh < pool[0]; ++kh) {
            const int64_t ih = oh * win.stride[0] - win.pad[0] + kh * win.dil[0];
            if (ih < 0 || ih >= xs[2]) continue;
            for (int64_t kw = 0; kw < pool[1]; ++kw) {
              const int64_t iw = ow * win.stride[1] - win.pad[1] + kw * win.dil[1];
              if (iw < 0 || iw >= xs[3]) continue;
              const double v = x.GetDouble(((nc * xs[2] + ih) * xs[3] + iw) * p.lanes + lane);
              if (indices != nullptr) {
                const int64_t pos =
                    nc * xs[2] * xs[3] + (column_major ? ih + iw * xs[2] : ih * xs[3] + iw);
                if (first < 0) first = pos;
                if (v > m) at = pos;
              }
              m = std::max(m, v);
            }
          }
          out.SetDouble(o_idx, m);
          if (indices != nullptr) indices->SetInt64(o_idx, at >= 0 ? at : first);
        }
      }
    }
  }
}

KernelResult MaxPool2dKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                             absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  MaxPool2dInto(in[0], attrs, out, nullptr);
  return std::vector<Tensor>{std::move(out)};
}

// nn.max_pool2d_with_indices: nn.max_pool2d's result and an i64 tensor of the same shape.
Result MaxPool2dWithIndicesRule(ShapeContext& ctx) {
  // The indices are flat NCHW positions (ONNX's), so the data is NCHW.
  if (ctx.attrs().GetString("layout") != "NCHW") {
    return ctx.Error(absl::StrFormat("only NCHW layout is supported (the indices are NCHW "
                                     "positions), got %s",
                                     ctx.attrs().GetString("layout")));
  }
  const int64_t order = ctx.attrs().GetInt("storage_order");
  if (order != 0 && order != 1) {
    return ctx.Error(absl::StrFormat("storage_order must be 0 or 1, got %d", order));
  }
  ASSIGN_OR_RETURN(std::vector<Type> types, MaxPool2dRule(ctx));
  types.push_back(Type::Tensor(DType::kI64, types[0].shape()));
  return types;
}

KernelResult MaxPool2dWithIndicesKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                        absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  Tensor indices = shape_rules::ZerosOf(out_t[1]);
  MaxPool2dInto(in[0], attrs, out, &indices);
  return std::vector<Tensor>{std::move(out), std::move(indices)};
}

// ---- nn.avg_pool2d -------------------------------------------------------------------------

// The mean of each window: over the positions inside the padded input (count_include_pad) or
// inside the input only. Positions a ceil_mode window reaches beyond the padding never count
// (ONNX Runtime's and PyTorch's divisor). An empty window (all padding, exclude mode) gives 0.
KernelResult AvgPool2dKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                             absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const Window win = ConcreteWindow(attrs);
  const auto& ps = attrs.GetIntList("pool_size");
  const std::array<int64_t, 2> pool = {ps[0], ps.back()};
  const bool include_pad = attrs.GetBool("count_include_pad");
  const auto& xs = in[0].shape();
  const auto& os = out.shape();
  // Padded extents: [-pad_begin, in + pad_end) per axis.
  const std::array<int64_t, 2> lo = {-win.pad[0], -win.pad[1]};
  const std::array<int64_t, 2> hi = {xs[2] + win.pad[2], xs[3] + win.pad[3]};
  const PoolPlanes p = PlanesOf(xs);
  int64_t o_idx = 0;
  for (int64_t nc = 0; nc < p.planes; ++nc) {
    for (int64_t oh = 0; oh < os[2]; ++oh) {
      for (int64_t ow = 0; ow < os[3]; ++ow) {
        for (int64_t lane = 0; lane < p.lanes; ++lane, ++o_idx) {
          double sum = 0;
          int64_t count = 0;
          for (int64_t kh = 0; kh < pool[0]; ++kh) {
            const int64_t ih = oh * win.stride[0] - win.pad[0] + kh * win.dil[0];
            if (ih < lo[0] || ih >= hi[0]) continue;
            for (int64_t kw = 0; kw < pool[1]; ++kw) {
              const int64_t iw = ow * win.stride[1] - win.pad[1] + kw * win.dil[1];
              if (iw < lo[1] || iw >= hi[1]) continue;
              const bool inside = ih >= 0 && ih < xs[2] && iw >= 0 && iw < xs[3];
              if (inside) sum += in[0].GetDouble(((nc * xs[2] + ih) * xs[3] + iw) * p.lanes + lane);
              if (inside || include_pad) ++count;
            }
          }
          out.SetDouble(o_idx, count > 0 ? sum / count : 0.0);
        }
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- nn.softmax ----------------------------------------------------------------------------

Result SoftmaxRule(ShapeContext& ctx) {
  if (!IsFloat(ctx.dtype(0))) {
    return ctx.Error(
        absl::StrFormat("data must be floating point, got %s", DTypeName(ctx.dtype(0))));
  }
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  RETURN_IF_ERROR(shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), x.size(), ctx).status());
  return One(Type::Tensor(ctx.dtype(0), ToVec(x)));
}

KernelResult SoftmaxKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                           absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const auto& s = in[0].shape();
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += in[0].rank();
  int64_t inner = 1;
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[axis];
  const int64_t outer = len * inner == 0 ? 0 : in[0].num_elements() / (len * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) m = std::max(m, in[0].GetDouble(base + k * inner));
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(in[0].GetDouble(base + k * inner) - m);
      for (int64_t k = 0; k < len; ++k) {
        out.SetDouble(base + k * inner, std::exp(in[0].GetDouble(base + k * inner) - m) / sum);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- nn.pad / dyn.nn.pad -------------------------------------------------------------------

absl::Status CheckPadMode(const ShapeContext& ctx) {
  const std::string& mode = ctx.attrs().GetString("pad_mode");
  if (mode == "constant" || mode == "edge" || mode == "reflect") return absl::OkStatus();
  return ctx.Error(absl::StrFormat("pad_mode must be constant, edge or reflect, got '%s'", mode));
}

// Output dims of a pad: d + before + after. Negative pads crop (ONNX allows it); a provably
// negative result is an error, and reflect needs pads smaller than the dim.
absl::StatusOr<std::vector<DimExpr>> PaddedShape(const ShapeContext& ctx,
                                                 absl::Span<const DimExpr> shape,
                                                 absl::Span<const DimExpr> pads) {
  if (pads.size() != 2 * shape.size()) {
    return ctx.Error(
        absl::StrFormat("pad_width needs %d values (before/after per axis of rank %d), "
                        "got %d",
                        2 * shape.size(), shape.size(), pads.size()));
  }
  const bool reflect = ctx.attrs().GetString("pad_mode") == "reflect";
  const bool edge = ctx.attrs().GetString("pad_mode") == "edge";
  std::vector<DimExpr> out;
  for (size_t i = 0; i < shape.size(); ++i) {
    const DimExpr& before = pads[2 * i];
    const DimExpr& after = pads[2 * i + 1];
    const DimExpr d = shape[i] + before + after;
    if (d.is_constant() && d.constant() < 0) {
      return ctx.Error(absl::StrFormat("axis %d would have negative size %d", i, d.constant()));
    }
    if (reflect && shape[i].is_constant() && before.is_constant() && after.is_constant() &&
        (std::max(before.constant(), after.constant()) >= shape[i].constant())) {
      return ctx.Error(absl::StrFormat(
          "reflect padding of axis %d must be smaller than its size %d", i, shape[i].constant()));
    }
    // Edge padding copies the border element, which an empty axis does not have (NumPy
    // rejects it too).
    if (edge && shape[i] == DimExpr(0) && d.is_constant() && d.constant() > 0) {
      return ctx.Error(absl::StrFormat("edge padding cannot extend axis %d of size 0", i));
    }
    out.push_back(d);
  }
  return out;
}

Result PadRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckPadMode(ctx));
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  const std::vector<DimExpr> pads = shape_rules::ToDims(ctx.attrs().GetIntList("pad_width"));
  ASSIGN_OR_RETURN(auto out, PaddedShape(ctx, x, pads));
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

Result DynPadRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckPadMode(ctx));
  if (ctx.rank(2) != 0) return ctx.Error("pad_value must be a scalar");
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto pads, shape_rules::IntInput(ctx, 1, "pad_width"));
  if (!pads) return One(Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(x.size())));
  ASSIGN_OR_RETURN(auto out, PaddedShape(ctx, x, *pads));
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

// Source coordinate of output coordinate `o` along an axis of size d; -1 for the fill value.
int64_t PadSource(int64_t o, int64_t before, int64_t d, const std::string& mode) {
  const int64_t c = o - before;
  if (c >= 0 && c < d) return c;
  if (mode == "edge") return c < 0 ? 0 : d - 1;
  if (mode == "reflect") return c < 0 ? -c : 2 * (d - 1) - c;
  return -1;
}

KernelResult PadKernelImpl(const Tensor& x, const std::vector<int64_t>& pads, double fill,
                           const std::string& mode, const Type& out_type) {
  Tensor out = shape_rules::ZerosOf(out_type);
  const std::vector<int64_t> os = out.shape();
  // The shape rule rejects these; a kernel called without it must not read past the data.
  if (mode != "constant" && x.num_elements() == 0 && out.num_elements() > 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("pad: %s padding cannot extend an empty tensor", mode));
  }
  const std::vector<int64_t> strides = shape_rules::Strides(x.shape());
  std::vector<int64_t> idx(os.size(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t src = 0;
    for (size_t a = 0; a < os.size() && src >= 0; ++a) {
      const int64_t c = PadSource(idx[a], pads[2 * a], x.shape()[a], mode);
      src = c < 0 ? -1 : src + c * strides[a];
    }
    out.SetDouble(i, src < 0 ? fill : x.GetDouble(src));
    shape_rules::NextIndex(idx, os);
  }
  return std::vector<Tensor>{std::move(out)};
}

KernelResult PadKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                       absl::Span<const Type> out_t) {
  return PadKernelImpl(in[0], attrs.GetIntList("pad_width"), attrs.GetFloat("pad_value"),
                       attrs.GetString("pad_mode"), out_t[0]);
}

KernelResult DynPadKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  return PadKernelImpl(in[0], in[1].ToInt64s(), in[2].GetDouble(0), attrs.GetString("pad_mode"),
                       out_t[0]);
}

}  // namespace

void RegisterNnOps(OpRegistry::Builder& b) {
  b.Register("nn.dense")
      .Input("data", InputDep::kShape)
      .Input("weight", InputDep::kShape)
      .Attr("units", AttrType::kInt, int64_t{0})
      .Pattern(FusionPattern::kOutElementwiseFusable)
      .Doc("data[.., K] x weight[N, K]^T -> [.., N]; units = 0 takes N from the weight")
      .Rule(DenseRule)
      .Reference(DenseKernel);
  b.Register("nn.bias_add")
      .Input("data", InputDep::kShape)
      .Input("bias", InputDep::kShape)
      .Attr("axis", AttrType::kInt, int64_t{1})
      .Pattern(FusionPattern::kBroadcast)
      .Doc("adds a 1-D bias along `axis`")
      .Rule(BiasAddRule)
      .Reference(BiasAddKernel);
  b.Register("nn.conv2d")
      .Input("data", InputDep::kShape)
      .Input("weight", InputDep::kShape)
      .Attr("strides", AttrType::kIntList, std::vector<int64_t>{1, 1})
      .Attr("padding", AttrType::kIntList, std::vector<int64_t>{0, 0})
      .Attr("dilation", AttrType::kIntList, std::vector<int64_t>{1, 1})
      .Attr("groups", AttrType::kInt, int64_t{1})
      .Attr("channels", AttrType::kInt, int64_t{0})
      .Attr("kernel_size", AttrType::kIntList, std::vector<int64_t>{})
      .Attr("data_layout", AttrType::kString, std::string("NCHW"))
      .Attr("kernel_layout", AttrType::kString, std::string("OIHW"))
      .Attr("out_layout", AttrType::kString, std::string(""))
      .Pattern(FusionPattern::kOutElementwiseFusable)
      .Doc(
          "2-D convolution, NCHW or NCHW<b>c data x OIHW weight -> out_layout (empty: the "
          "data's); padding is 1, 2 or 4 ints (top, left, bottom, right)")
      .Rule(Conv2dRule)
      .Reference(Conv2dKernel);
  b.Register("nn.conv2d_transpose")
      .Input("data", InputDep::kShape)
      .Input("weight", InputDep::kShape)
      .Attr("strides", AttrType::kIntList, std::vector<int64_t>{1, 1})
      .Attr("padding", AttrType::kIntList, std::vector<int64_t>{0, 0})
      .Attr("output_padding", AttrType::kIntList, std::vector<int64_t>{0, 0})
      .Attr("dilation", AttrType::kIntList, std::vector<int64_t>{1, 1})
      .Attr("groups", AttrType::kInt, int64_t{1})
      .Pattern(FusionPattern::kOutElementwiseFusable)
      .Doc(
          "2-D transposed convolution, NCHW x IOHW weight [Cin, Cout/groups, kh, kw]; padding "
          "(top, left, bottom, right) crops the output, output_padding extends its far end")
      .Rule(Conv2dTransposeRule)
      .Reference(Conv2dTransposeKernel);
  // The pooling window attributes both pooling ops share.
  auto pool = [&b](std::string name) -> OpDefBuilder {
    OpDefBuilder op = b.Register(std::move(name));
    op.Input("data", InputDep::kShape)
        .Attr("pool_size", AttrType::kIntList)
        .Attr("strides", AttrType::kIntList, std::vector<int64_t>{1, 1})
        .Attr("padding", AttrType::kIntList, std::vector<int64_t>{0, 0})
        .Attr("dilation", AttrType::kIntList, std::vector<int64_t>{1, 1})
        .Attr("layout", AttrType::kString, std::string("NCHW"))
        .Attr("ceil_mode", AttrType::kBool, false)
        .Pattern(FusionPattern::kOutElementwiseFusable)
        .Rule(MaxPool2dRule);
    return op;
  };
  pool("nn.max_pool2d")
      .Doc("2-D max pooling, NCHW or NCHW<b>c; padded positions never win")
      .Reference(MaxPool2dKernel);
  // Two results: no kernel appends elementwise consumers to it, so it is opaque.
  pool("nn.max_pool2d_with_indices")
      .Attr("storage_order", AttrType::kInt, int64_t{0})
      .Outputs(2)
      .Pattern(FusionPattern::kOpaque)
      .Doc(
          "nn.max_pool2d and the flat input position of each maximum, i64 (ONNX MaxPool's "
          "Indices; storage_order 1: column-major within each plane)")
      .Rule(MaxPool2dWithIndicesRule)
      .Reference(MaxPool2dWithIndicesKernel);
  pool("nn.avg_pool2d")
      .Attr("count_include_pad", AttrType::kBool, false)
      .Doc(
          "2-D average pooling, NCHW or NCHW<b>c; padding counts in the divisor with "
          "count_include_pad")
      .Reference(AvgPool2dKernel);
  b.Register("nn.softmax")
      .Input("data", InputDep::kShape)
      .Attr("axis", AttrType::kInt, int64_t{-1})
      .Pattern(FusionPattern::kOpaque)
      .Doc("exp(x - max) / sum(exp(x - max)) along `axis`")
      .Rule(SoftmaxRule)
      .Reference(SoftmaxKernel);
  b.Register("nn.pad")
      .Input("data", InputDep::kShape)
      .Attr("pad_width", AttrType::kIntList)
      .Attr("pad_value", AttrType::kFloat, 0.0)
      .Attr("pad_mode", AttrType::kString, std::string("constant"))
      .Pattern(FusionPattern::kInjective)
      .Doc("pads by pad_width = [before0, after0, before1, ...]; negative pads crop")
      .Rule(PadRule)
      .Reference(PadKernel);
  b.Register("dyn.nn.pad")
      .Input("data", InputDep::kShape)
      .Input("pad_width", InputDep::kValue)
      .Input("pad_value", InputDep::kNone)
      .Attr("pad_mode", AttrType::kString, std::string("constant"))
      .Pattern(FusionPattern::kInjective)
      .Doc("nn.pad with run-time pad widths (2 x rank integers) and a scalar fill value")
      .Rule(DynPadRule)
      .Reference(DynPadKernel);
}

}  // namespace hetpass
