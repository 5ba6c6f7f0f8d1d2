// Image ops: image.resize2d, dyn.image.resize2d, dyn.image.resize2d_scaled, image.roi_align
// and image.grid_sample.
//
// Masks: the resized image is `shape` (only N and C, or N and C in NHWC, reach the output);
// the run-time output size of dyn.image.resize2d is `value`. TVM declared dyn.image.resize2d
// data dependent as a whole, copying the image to the host to learn two integers.
//
// dyn.image.resize2d_scaled(data, size, scales, roi) is ONNX Resize with its own inputs: size
// [H, W] or empty, and scales, one per data dim (those of N and C must be 1) or empty, are
// `value` (the size is floor(in * scale) when size is empty); unlike a size, scales transform
// coordinates with the scale itself (ONNX's x / scale, and the unfloored in * scale as the
// resized length). roi, ONNX's [starts.., ends..] per data dim, is read by the kernel alone
// (`none`), for tf_crop_and_resize, whose coordinates outside the input give
// extrapolation_value.
//
// Coordinate transformation modes (output coordinate x, input size in, output size out,
// scale = in / out): half_pixel (x + 0.5) * scale - 0.5; align_corners x * (in - 1) / (out - 1);
// asymmetric x * scale; pytorch_half_pixel like half_pixel but 0 when out == 1;
// tf_half_pixel_for_nn (x + 0.5) * scale. Nearest neighbour rounds with `rounding_method`;
// the default "" means "round" under align_corners and "floor" otherwise (TVM's choice).
// Linear interpolates between floor(c) and floor(c) + 1 with indices clamped into the image.
// Cubic (the reference kernel only) takes four taps per axis with ONNX's coefficients
// (cubic_alpha is A, cubic_exclude renormalizes without the taps outside the input).
//
// image.roi_align (ONNX RoiAlign, Mask R-CNN's box and mask heads): data f32[N, C, H, W],
// rois f32[R, 4] as (x1, y1, x2, y2) in image coordinates, batch_indices int[R] naming the image
// of each roi; output [R, C, output_height, output_width]. Every input is `shape`: the output
// takes R from the rois and C from the data, never a value, so the rois (computed on the
// device by the proposal stages) stay there. The reference kernel follows ONNX's reference
// (and ONNX Runtime's CPU kernel) exactly:
//   - a roi is scaled by spatial_scale; half_pixel subtracts 0.5 from every coordinate,
//     output_half_pixel (ONNX's aligned = false, the only mode before opset 16) does not and
//     forces the roi to at least 1 x 1;
//   - each output bin averages (avg) or takes the max of a grid of samples: sampling_ratio per
//     axis, or ceil(roi size / output size) when sampling_ratio is 0;
//   - a sample with y < -1, y > H, x < -1 or x > W contributes 0; otherwise it is clamped to
//     >= 0, and at or past the last row/column it is pinned there (no interpolation);
//   - max mode takes, per sample, the max of the four weighted corner values (w * v), not the
//     max of interpolated values: that is what ONNX defines (and ONNX Runtime computes).
//
// image.grid_sample (ONNX GridSample-16, 2-D; PyTorch's grid_sample): data [N, C, H, W] and a
// flow field grid [N, H_out, W_out, 2] of normalized (x, y) positions (-1 and 1 are the image's
// edges: pixel centres under align_corners, outer pixel borders otherwise) give
// [N, C, H_out, W_out]. Modes bilinear, nearest (halves to even), bicubic (A = -0.75);
// padding_mode zeros, border, reflection; the per-axis arithmetic is in image_sampling.cc.
// Both inputs are `shape`: the grid is data a kernel reads, never the shape rule, so a grid
// computed on the device stays there. Data and grid are f32 or f64 (ONNX allows any data
// type; integer images are refused with an error naming the dtype). An empty image (H or W 0)
// samples zeros; a NaN coordinate, or an infinite one not clamped by border padding, gives NaN.
#include "shape_funcs/image.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/image_sampling.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

absl::Status CheckOneOf(const ShapeContext& ctx, absl::string_view attr,
                        std::initializer_list<absl::string_view> allowed) {
  const std::string& v = ctx.attrs().GetString(attr);
  for (absl::string_view a : allowed) {
    if (v == a) return absl::OkStatus();
  }
  return ctx.Error(absl::StrFormat("unsupported %s '%s'", attr, v));
}

// Output type for `size` (nullopt: unknown now). tf_crop_and_resize needs a roi: only the
// scaled op has one.
Result ResizeType(ShapeContext& ctx, std::optional<std::vector<DimExpr>> size,
                  bool with_roi = false) {
  RETURN_IF_ERROR(CheckOneOf(ctx, "layout", {"NCHW", "NHWC"}));
  RETURN_IF_ERROR(CheckOneOf(ctx, "method", {"nearest_neighbor", "linear", "cubic"}));
  if (with_roi) {
    RETURN_IF_ERROR(CheckOneOf(ctx, "coordinate_transformation_mode",
                               {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                                "tf_half_pixel_for_nn", "tf_crop_and_resize"}));
  } else {
    RETURN_IF_ERROR(CheckOneOf(ctx, "coordinate_transformation_mode",
                               {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                                "tf_half_pixel_for_nn"}));
  }
  RETURN_IF_ERROR(
      CheckOneOf(ctx, "rounding_method",
                 {"", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}));
  if (ctx.rank(0) != 4) {
    return ctx.Error(absl::StrFormat("data must have rank 4, got rank %d", ctx.rank(0)));
  }
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  std::vector<DimExpr> hw = {DimExpr::Unknown(), DimExpr::Unknown()};
  if (size) {
    if (size->size() != 2) {
      return ctx.Error(absl::StrFormat("size must have 2 values, got %d", size->size()));
    }
    for (const DimExpr& d : *size) {
      if (d.is_constant() && d.constant() <= 0) {
        return ctx.Error(absl::StrFormat("size must be positive, got %d", d.constant()));
      }
    }
    hw = *size;
  }
  const bool nchw = ctx.attrs().GetString("layout") == "NCHW";
  std::vector<DimExpr> out = nchw ? std::vector<DimExpr>{in[0], in[1], hw[0], hw[1]}
                                  : std::vector<DimExpr>{in[0], hw[0], hw[1], in[3]};
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

Result ResizeRule(ShapeContext& ctx) {
  return ResizeType(ctx, shape_rules::ToDims(ctx.attrs().GetIntList("size")));
}

Result DynResizeRule(ShapeContext& ctx) {
  if (ctx.rank(1) != 1) {
    return ctx.Error(absl::StrFormat("size must be 1-D, got rank %d", ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto size, shape_rules::IntInput(ctx, 1, "size"));
  return ResizeType(ctx, std::move(size));
}

// dyn.image.resize2d_scaled: the size given, or floor(in * scale) per spatial dim (unknown
// while the scales or that input dim are).
Result DynResizeScaledRule(ShapeContext& ctx) {
  constexpr const char* kNames[] = {"data", "size", "scales", "roi"};
  for (int i = 1; i < 4; ++i) {
    if (ctx.rank(i) != 1) {
      return ctx.Error(absl::StrFormat("%s must be 1-D, got rank %d", kNames[i], ctx.rank(i)));
    }
  }
  if (!IsInteger(ctx.dtype(1))) {
    return ctx.Error(absl::StrFormat("size must be integers, got %s", DTypeName(ctx.dtype(1))));
  }
  for (int i : {2, 3}) {
    if (!IsFloat(ctx.dtype(i))) {
      return ctx.Error(absl::StrFormat("%s must be floating point, got %s", kNames[i],
                                       DTypeName(ctx.dtype(i))));
    }
  }
  const int rank = ctx.rank(0);
  ASSIGN_OR_RETURN(DimExpr num_size, ctx.NumValues(1));
  ASSIGN_OR_RETURN(DimExpr num_scales, ctx.NumValues(2));
  const bool nchw = ctx.attrs().GetString("layout") == "NCHW";
  const int hd = nchw ? 2 : 1;
  if (num_scales.is_constant() && num_scales.constant() != 0 && num_scales.constant() != rank) {
    return ctx.Error(absl::StrFormat("scales must be empty or have %d values, got %d", rank,
                                     num_scales.constant()));
  }
  ASSIGN_OR_RETURN(auto scales, ctx.FloatValues(2));
  if (scales && !scales->empty()) {
    for (int d = 0; d < rank && d < static_cast<int>(scales->size()); ++d) {
      const double s = (*scales)[d];
      const bool spatial = d == hd || d == hd + 1;
      if (!spatial && s != 1.0) {
        return ctx.Error(absl::StrFormat("scales[%d] = %g: only the spatial dims may be scaled",
                                         d, s));
      }
      if (!(s > 0)) return ctx.Error(absl::StrFormat("scales[%d] = %g is not positive", d, s));
    }
  }
  if (num_size.is_constant() && num_size.constant() != 0) {
    ASSIGN_OR_RETURN(auto size, shape_rules::IntInput(ctx, 1, "size"));
    return ResizeType(ctx, std::move(size), /*with_roi=*/true);
  }
  if (num_scales.is_constant() && num_scales.constant() == 0 && num_size.is_constant()) {
    return ctx.Error("needs a size or scales");
  }
  std::optional<std::vector<DimExpr>> size;
  if (rank == 4 && scales && static_cast<int>(scales->size()) == rank) {
    ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
    size.emplace();
    for (int d : {hd, hd + 1}) {
      if (!in[d].is_constant()) {
        size->push_back(DimExpr::Unknown());
        continue;
      }
      // floor(in * scale), checked before the cast (scales are user input: 3e38 or NaN).
      const double o = std::floor(static_cast<double>(in[d].constant()) * (*scales)[d]);
      if (!(o >= 1 && o < 9223372036854775808.0)) {
        return ctx.Error(absl::StrFormat("scales[%d] = %g on dim %d gives output size %g", d,
                                         (*scales)[d], in[d].constant(), o));
      }
      size->push_back(DimExpr(static_cast<int64_t>(o)));
    }
  }
  return ResizeType(ctx, std::move(size), /*with_roi=*/true);
}

// The given scales and roi of dyn.image.resize2d_scaled along the H and W dims (hd, wd).
std::array<ResizeAxisParams, 2> ScaledAxisParams(absl::Span<const Tensor> in, int hd, int wd) {
  std::array<ResizeAxisParams, 2> p;
  if (in.size() < 4) return p;
  const Tensor& scales = in[2];
  const Tensor& roi = in[3];
  const int rank = static_cast<int>(in[0].shape().size());
  for (int k = 0; k < 2; ++k) {
    const int d = k == 0 ? hd : wd;
    if (scales.num_elements() == rank) p[k].scale = scales.GetDouble(d);
    if (roi.num_elements() == 2 * rank) {
      p[k].roi_start = roi.GetDouble(d);
      p[k].roi_end = roi.GetDouble(rank + d);
    }
  }
  return p;
}

KernelResult ResizeKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  // The roi is the kernel's alone (mask none: the rule never reads it), so it is checked here.
  if (in.size() == 4 && attrs.GetString("coordinate_transformation_mode") == "tf_crop_and_resize" &&
      in[3].num_elements() != 2 * in[0].rank()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dyn.image.resize2d_scaled: tf_crop_and_resize needs a roi of %d values, "
                        "got %d",
                        2 * in[0].rank(), in[3].num_elements()));
  }
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const bool nchw = attrs.GetString("layout") == "NCHW";
  const auto& xs = in[0].shape();
  const auto& os = out.shape();
  const int hd = nchw ? 2 : 1, wd = hd + 1, cd = nchw ? 1 : 3;
  const std::array<ResizeAxisParams, 2> p = ScaledAxisParams(in, hd, wd);
  const std::vector<int64_t> st = shape_rules::Strides(xs);
  const double extrapolated = attrs.GetFloat("extrapolation_value");
  std::vector<int64_t> idx(4, 0);
  if (attrs.GetString("method") == "cubic") {
    const std::vector<CubicTap> ty = ResizeCubicTaps(xs[hd], os[hd], attrs, p[0]);
    const std::vector<CubicTap> tx = ResizeCubicTaps(xs[wd], os[wd], attrs, p[1]);
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      const CubicTap& y = ty[idx[hd]];
      const CubicTap& x = tx[idx[wd]];
      const int64_t base = idx[0] * st[0] + idx[cd] * st[cd];
      double v = extrapolated;
      if (!y.outside && !x.outside) {
        v = 0;
        for (int r = 0; r < 4; ++r) {  // rows of interpolated columns, ONNX's order
          double row = 0;
          for (int c = 0; c < 4; ++c) {
            row += x.w[c] * in[0].GetDouble(base + y.idx[r] * st[hd] + x.idx[c] * st[wd]);
          }
          v += y.w[r] * row;
        }
      }
      out.SetDouble(i, v);
      shape_rules::NextIndex(idx, os);
    }
    return std::vector<Tensor>{std::move(out)};
  }
  const std::vector<ResizeTap> ty = ResizeAxisTaps(xs[hd], os[hd], attrs, p[0]);
  const std::vector<ResizeTap> tx = ResizeAxisTaps(xs[wd], os[wd], attrs, p[1]);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const ResizeTap& y = ty[idx[hd]];
    const ResizeTap& x = tx[idx[wd]];
    const int64_t base = idx[0] * st[0] + idx[cd] * st[cd];
    auto at = [&](int64_t r, int64_t c) { return in[0].GetDouble(base + r * st[hd] + c * st[wd]); };
    out.SetDouble(i, y.outside || x.outside ? extrapolated
                                            : ResizeBlend(at(y.lo, x.lo), at(y.lo, x.hi),
                                                          at(y.hi, x.lo), at(y.hi, x.hi), y, x));
    shape_rules::NextIndex(idx, os);
  }
  return std::vector<Tensor>{std::move(out)};
}

void ResizeAttrs(OpDefBuilder& op) {
  op.Attr("layout", AttrType::kString, std::string("NCHW"))
      .Attr("method", AttrType::kString, std::string("linear"))
      .Attr("coordinate_transformation_mode", AttrType::kString, std::string("half_pixel"))
      .Attr("rounding_method", AttrType::kString, std::string(""))
      .Attr("cubic_alpha", AttrType::kFloat, -0.5)
      .Attr("cubic_exclude", AttrType::kInt, int64_t{0})
      .Attr("extrapolation_value", AttrType::kFloat, 0.0);
}

// ---- image.roi_align ---------------------------------------------------------------------------

Result RoiAlignRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckOneOf(ctx, "mode", {"avg", "max"}));
  RETURN_IF_ERROR(
      CheckOneOf(ctx, "coordinate_transformation_mode", {"half_pixel", "output_half_pixel"}));
  const Attrs& a = ctx.attrs();
  for (absl::string_view attr : {"output_height", "output_width"}) {
    if (a.GetInt(attr) <= 0) {
      return ctx.Error(absl::StrFormat("%s must be positive, got %d", attr, a.GetInt(attr)));
    }
  }
  if (a.GetInt("sampling_ratio") < 0) {
    return ctx.Error(
        absl::StrFormat("sampling_ratio must be >= 0, got %d", a.GetInt("sampling_ratio")));
  }
  if (!IsFloat(ctx.dtype(0))) {
    return ctx.Error(
        absl::StrFormat("data must be floating point, got %s", DTypeName(ctx.dtype(0))));
  }
  if (ctx.dtype(1) != ctx.dtype(0)) {
    return ctx.Error(absl::StrFormat("rois must have the data's dtype %s, got %s",
                                     DTypeName(ctx.dtype(0)), DTypeName(ctx.dtype(1))));
  }
  if (!IsInteger(ctx.dtype(2))) {
    return ctx.Error(
        absl::StrFormat("batch_indices must be integers, got %s", DTypeName(ctx.dtype(2))));
  }
  if (ctx.rank(0) != 4) {
    return ctx.Error(absl::StrFormat("data must have rank 4, got rank %d", ctx.rank(0)));
  }
  if (ctx.rank(1) != 2) {
    return ctx.Error(absl::StrFormat("rois must have rank 2, got rank %d", ctx.rank(1)));
  }
  if (ctx.rank(2) != 1) {
    return ctx.Error(absl::StrFormat("batch_indices must have rank 1, got rank %d", ctx.rank(2)));
  }
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto rois, ctx.Shape(1));
  ASSIGN_OR_RETURN(auto batch, ctx.Shape(2));
  if (shape_rules::ProvablyDifferent(rois[1], 4)) {
    return ctx.Error(
        absl::StrFormat("rois must be [R, 4], got %s", ShapeToString({rois[0], rois[1]})));
  }
  if (shape_rules::ProvablyDifferent(rois[0], batch[0])) {
    return ctx.Error(
        absl::StrFormat("%d rois but %d batch_indices", rois[0].constant(), batch[0].constant()));
  }
  return One(Type::Tensor(ctx.dtype(0),
                          {rois[0], data[1], a.GetInt("output_height"), a.GetInt("output_width")}));
}

KernelResult RoiAlignKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                            absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const Tensor& data = in[0];
  const Tensor& rois = in[1];
  const Tensor& batch = in[2];
  const int64_t n = data.shape()[0], channels = data.shape()[1];
  const int64_t height = data.shape()[2], width = data.shape()[3];
  const int64_t num_rois = out.shape()[0];
  const RoiAlignParams params = RoiAlignParamsOf(attrs);
  const int64_t out_h = params.output_height, out_w = params.output_width;
  const int64_t plane = height * width;
  // An empty image has no pixel to sample (ONNX's clamping would index row or column -1):
  // every bin is 0, as for samples outside the image.
  if (plane == 0) return std::vector<Tensor>{std::move(out)};
  // Read once as doubles: every pixel is read by many samples, and per-element dtype dispatch
  // dominated the kernel (maskrcnn_tiny's box-head roi_align: 9.5 ms per call through
  // Tensor::GetDouble, 2.5 ms from this copy).
  const std::vector<double> pixels = data.ToDoubles();
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = batch.GetInt64(r);
    // The shape rule cannot see indices (they are data); an index past the batch is a user
    // error the kernel reports instead of reading out of bounds.
    if (b < 0 || b >= n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "op 'image.roi_align': batch index %d of roi %d is outside the batch of %d", b, r, n));
    }
    const double box[4] = {rois.GetDouble(r * 4 + 0), rois.GetDouble(r * 4 + 1),
                           rois.GetDouble(r * 4 + 2), rois.GetDouble(r * 4 + 3)};
    const RoiGrid grid = MakeRoiGrid(box, params);
    const int64_t gh = grid.grid_h, gw = grid.grid_w;
    // Samples are shared by every channel: computed once per roi.
    std::vector<RoiSample> samples;
    samples.reserve(out_h * out_w * gh * gw);
    for (int64_t ph = 0; ph < out_h; ++ph) {
      for (int64_t pw = 0; pw < out_w; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double y = RoiSampleCoord(grid.start_h, grid.bin_h, ph, iy, gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            const double x = RoiSampleCoord(grid.start_w, grid.bin_w, pw, ix, gw);
            samples.push_back(BilinearRoiSample(y, x, height, width));
          }
        }
      }
    }
    const int64_t per_bin = gh * gw;
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (b * channels + c) * plane;
      for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
        double acc = 0.0;
        for (int64_t k = 0; k < per_bin; ++k) {
          const RoiSample& s = samples[bin * per_bin + k];
          double v[4];
          for (int j = 0; j < 4; ++j) v[j] = s.w[j] * pixels[base + s.pos[j]];
          if (params.max_mode) {
            const double m = std::max({v[0], v[1], v[2], v[3]});
            acc = k == 0 ? m : std::max(acc, m);
          } else {
            acc += v[0] + v[1] + v[2] + v[3];
          }
        }
        out.SetDouble((r * channels + c) * out_h * out_w + bin,
                      params.max_mode ? acc : acc / grid.count);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- image.grid_sample -------------------------------------------------------------------------

absl::Status CheckF32OrF64(const ShapeContext& ctx, int i, absl::string_view what) {
  if (ctx.dtype(i) == DType::kF32 || ctx.dtype(i) == DType::kF64) return absl::OkStatus();
  return ctx.Error(absl::StrFormat("%s must be f32 or f64, got %s", what, DTypeName(ctx.dtype(i))));
}

Result GridSampleRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckOneOf(ctx, "mode", {"bilinear", "nearest", "bicubic"}));
  RETURN_IF_ERROR(CheckOneOf(ctx, "padding_mode", {"zeros", "border", "reflection"}));
  RETURN_IF_ERROR(CheckF32OrF64(ctx, 0, "data"));
  RETURN_IF_ERROR(CheckF32OrF64(ctx, 1, "grid"));
  if (ctx.rank(0) != 4) {
    return ctx.Error(absl::StrFormat("data must have rank 4, got rank %d", ctx.rank(0)));
  }
  if (ctx.rank(1) != 4) {
    return ctx.Error(absl::StrFormat("grid must have rank 4, got rank %d", ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto grid, ctx.Shape(1));
  if (shape_rules::ProvablyDifferent(grid[3], 2)) {
    return ctx.Error(absl::StrFormat("grid must be [N, H_out, W_out, 2], got %s",
                                     ShapeToString(shape_rules::ToVec(grid))));
  }
  if (shape_rules::ProvablyDifferent(data[0], grid[0])) {
    return ctx.Error(absl::StrFormat("data has batch %d but grid has %d", data[0].constant(),
                                     grid[0].constant()));
  }
  return One(Type::Tensor(ctx.dtype(0), {data[0], data[1], grid[1], grid[2]}));
}

KernelResult GridSampleKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                              absl::Span<const Type> out_t) {
  const Tensor& data = in[0];
  const Tensor& grid = in[1];
  const std::vector<int64_t>& ds = data.shape();
  const std::vector<int64_t>& gs = grid.shape();
  // Symbolic batch dims or a symbolic last dim pass type inference without a shape function:
  // the kernel is where run-time shapes meet.
  if (gs[0] != ds[0] || gs[3] != 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "op 'image.grid_sample': grid %s does not fit data %s (want [%d, H_out, W_out, 2])",
        ShapeToString(shape_rules::ToDims(gs)), ShapeToString(shape_rules::ToDims(ds)), ds[0]));
  }
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const int64_t channels = ds[1], height = ds[2], width = ds[3];
  const int64_t plane = height * width, out_plane = gs[1] * gs[2];
  if (plane == 0) return std::vector<Tensor>{std::move(out)};
  const GridSampleParams params = GridSampleParamsOf(attrs);
  // Each pixel is read by many samples: one conversion to doubles, as image.roi_align does.
  const std::vector<double> pixels = data.ToDoubles();
  const std::vector<double> coords = grid.ToDoubles();
  for (int64_t n = 0; n < ds[0]; ++n) {
    for (int64_t o = 0; o < out_plane; ++o) {
      const int64_t g = (n * out_plane + o) * 2;
      // The taps are shared by every channel.
      const GridAxisTaps tx = GridSampleAxis(coords[g], width, params);
      const GridAxisTaps ty = GridSampleAxis(coords[g + 1], height, params);
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t base = (n * channels + c) * plane;
        double v = std::numeric_limits<double>::quiet_NaN();
        if (tx.count > 0 && ty.count > 0) {
          v = 0;
          for (int i = 0; i < ty.count; ++i) {
            if (ty.index[i] < 0) continue;
            double row = 0;
            for (int j = 0; j < tx.count; ++j) {
              if (tx.index[j] >= 0)
                row += tx.weight[j] * pixels[base + ty.index[i] * width + tx.index[j]];
            }
            v += ty.weight[i] * row;
          }
        }
        out.SetDouble((n * channels + c) * out_plane + o, v);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterImageOps(OpRegistry::Builder& b) {
  OpDefBuilder resize = b.Register("image.resize2d");
  // Injective, as in TVM. Whether it fuses is the devices' business: fuse-ops asks the kernel
  // providers (rule h), and today's run it only alone (compile_engine/image_kernel.h).
  resize.Input("data", InputDep::kShape)
      .Attr("size", AttrType::kIntList)
      .Pattern(FusionPattern::kInjective)
      .Placed(Placement::kTarget)  // arithmetic per element: a kernel, not data movement
      .Doc("resizes the spatial dims to size = [height, width]")
      .Rule(ResizeRule)
      .Reference(ResizeKernel);
  ResizeAttrs(resize);
  OpDefBuilder dyn = b.Register("dyn.image.resize2d");
  dyn.Input("data", InputDep::kShape)
      .Input("size", InputDep::kValue)
      .Pattern(FusionPattern::kInjective)  // as image.resize2d
      .Placed(Placement::kTarget)
      .Doc("image.resize2d to a run-time size [height, width]")
      .Rule(DynResizeRule)
      .Reference(ResizeKernel);
  ResizeAttrs(dyn);
  OpDefBuilder scaled = b.Register("dyn.image.resize2d_scaled");
  scaled.Input("data", InputDep::kShape)
      .Input("size", InputDep::kValue)
      .Input("scales", InputDep::kValue)
      .Input("roi", InputDep::kNone)
      .Pattern(FusionPattern::kInjective)  // as image.resize2d
      .Placed(Placement::kTarget)
      .Doc("ONNX Resize: image.resize2d to a given size, or by scales that also transform the "
           "coordinates; roi for tf_crop_and_resize (see image.cc)")
      .Rule(DynResizeScaledRule)
      .Reference(ResizeKernel);
  ResizeAttrs(scaled);
  b.Register("image.roi_align")
      .Input("data", InputDep::kShape)
      .Input("rois", InputDep::kShape)
      .Input("batch_indices", InputDep::kShape)
      .Attr("mode", AttrType::kString, std::string("avg"))
      .Attr("output_height", AttrType::kInt, int64_t{1})
      .Attr("output_width", AttrType::kInt, int64_t{1})
      .Attr("sampling_ratio", AttrType::kInt, int64_t{0})
      .Attr("spatial_scale", AttrType::kFloat, 1.0)
      .Attr("coordinate_transformation_mode", AttrType::kString, std::string("half_pixel"))
      .Pattern(FusionPattern::kOpaque)
      .Doc(
          "pools data[N, C, H, W] over rois[R, 4] (x1, y1, x2, y2) of images batch_indices[R] "
          "into [R, C, output_height, output_width] by bilinear sampling (ONNX RoiAlign)")
      .Rule(RoiAlignRule)
      .Reference(RoiAlignKernel);
  b.Register("image.grid_sample")
      .Input("data", InputDep::kShape)
      .Input("grid", InputDep::kShape)
      .Attr("mode", AttrType::kString, std::string("bilinear"))
      .Attr("padding_mode", AttrType::kString, std::string("zeros"))
      .Attr("align_corners", AttrType::kBool, false)
      .Pattern(FusionPattern::kOpaque)
      .Doc(
          "samples data[N, C, H, W] at the normalized (x, y) positions of grid[N, H_out, W_out, "
          "2] into [N, C, H_out, W_out] (ONNX GridSample-16: bilinear / nearest / bicubic, "
          "padding zeros / border / reflection)")
      .Rule(GridSampleRule)
      .Reference(GridSampleKernel);
}

}  // namespace hetpass
