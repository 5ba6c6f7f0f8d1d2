// Sampling arithmetic of the image ops, shared by the reference kernels (image.cc) and the
// native CPU kernels (compile_engine/image_kernel.cc) (internal header). image.grid_sample's
// arithmetic (the last section) has only the reference kernel so far.
//
// The native kernels must give bit-identical results to the reference (image_kernel_test.cc
// compares them), and they only can if source coordinates, rounding, clamping and weights are
// computed by the same expressions in the same order: so those live here once, and each side
// keeps only its loops (the reference's per-element reads, the native kernels' row blends,
// tap lists and HWC gathers). See image.cc's opening comment for the semantics.
#ifndef HETPASS_SRC_SHAPE_FUNCS_IMAGE_SAMPLING_H_
#define HETPASS_SRC_SHAPE_FUNCS_IMAGE_SAMPLING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "passes/ir/attributes.h"

namespace hetpass {

// ---- image.resize2d ------------------------------------------------------------------------

// ONNX Resize's own parameters of one axis (dyn.image.resize2d_scaled): the scale it was given
// (output / input; once the output size is floored it is not out / in, and ONNX transforms
// coordinates with the scale; 0: none given, use in and out) and tf_crop_and_resize's roi
// (normalized start and end along the axis).
struct ResizeAxisParams {
  double scale = 0;
  double roi_start = 0, roi_end = 1;
};

// The input coordinate of output coordinate `x` along an axis resized from `in` to `out`, per
// coordinate_transformation_mode. With a given scale the expressions are ONNX's reference ones:
// x / scale, and the unfloored in * scale as the resized length.
double ResizeSourceCoord(double x, int64_t in, int64_t out, const std::string& mode,
                         const ResizeAxisParams& p = {});
// Nearest-neighbour index of coordinate `c` per rounding_method ("" resolved by the caller).
int64_t ResizeNearest(double c, const std::string& rounding);
// `i` clamped into [0, n - 1].
int64_t ClampIndex(int64_t i, int64_t n);

// How one output coordinate reads along one axis: input indices lo and hi and their weights
// (w_lo = 1 - w_hi; nearest: lo == hi, weights 1 and 0).
// `outside`: tf_crop_and_resize mapped it outside the input; the value is extrapolation_value.
struct ResizeTap {
  int64_t lo, hi;
  double w_lo, w_hi;
  bool outside = false;
};

// The taps of every output coordinate 0..out-1 along an axis resized from `in` (>= 1) to
// `out`, per the method, coordinate_transformation_mode and rounding_method in `attrs`.
std::vector<ResizeTap> ResizeAxisTaps(int64_t in, int64_t out, const Attrs& attrs,
                                      const ResizeAxisParams& p = {});

// Cubic method (ONNX's, as its reference computes it): four taps floor(c) - 1 .. floor(c) + 2
// (an integral c uses floor(c) - 2 .. floor(c) + 1 with ratio 1, which weighs c itself by 1),
// indices clamped into the input (edge values); cubic_alpha is the coefficient A and
// cubic_exclude drops taps outside the input and renormalizes the rest.
struct CubicTap {
  int64_t idx[4];
  double w[4];
  bool outside = false;
};
std::vector<CubicTap> ResizeCubicTaps(int64_t in, int64_t out, const Attrs& attrs,
                                      const ResizeAxisParams& p = {});

// (a * x.w_lo + b * x.w_hi) * y.w_lo + (c * x.w_lo + d * x.w_hi) * y.w_hi in double: the
// value at (y, x) from the four pixels (y.lo, x.lo), (y.lo, x.hi), (y.hi, x.lo), (y.hi, x.hi).
inline double ResizeBlend(double a, double b, double c, double d, const ResizeTap& y,
                          const ResizeTap& x) {
  const double top = a * x.w_lo + b * x.w_hi;
  const double bottom = c * x.w_lo + d * x.w_hi;
  return top * y.w_lo + bottom * y.w_hi;
}

// ---- image.roi_align -----------------------------------------------------------------------

// image.roi_align's attributes, read once per call.
struct RoiAlignParams {
  int64_t output_height = 1, output_width = 1, sampling_ratio = 0;
  double spatial_scale = 1;
  bool half_pixel = true;  // coordinate_transformation_mode; else output_half_pixel
  bool max_mode = false;   // mode "max"; else "avg"
};
RoiAlignParams RoiAlignParamsOf(const Attrs& attrs);

// The sampling grid of one roi (x1, y1, x2, y2 as read from the rois tensor), as ONNX's
// RoiAlign computes it: scaled by spatial_scale, shifted by 0.5 under half_pixel (else forced
// to at least 1 x 1), split into output_height x output_width bins of grid_h x grid_w samples.
struct RoiGrid {
  double start_h = 0, start_w = 0;  // the roi's top-left corner
  double bin_h = 0, bin_w = 0;      // one bin's size
  int64_t grid_h = 0, grid_w = 0;   // samples per bin and axis (0 for a degenerate roi)
  double count = 1;                 // the avg divisor: max(grid_h * grid_w before clamping, 1)
};
RoiGrid MakeRoiGrid(const double box[4], const RoiAlignParams& params);

// The coordinate of sample i (of `grid`) in bin p along an axis starting at `start`.
inline double RoiSampleCoord(double start, double bin, int64_t p, int64_t i, int64_t grid) {
  return start + p * bin + (i + 0.5) * bin / static_cast<double>(grid);
}

// One coordinate of a bilinear sample along an axis of `size` (>= 1) pixels: outside
// [-1, size] it contributes nothing; otherwise clamped to >= 0 and pinned to the last pixel at
// or past it. Weights: 1 - l for lo, l for hi.
struct RoiAxisSample {
  bool inside = false;
  int64_t lo = 0, hi = 0;
  double l = 0;
};
RoiAxisSample SampleRoiAxis(double y, int64_t size);

// One bilinear sample: four flat offsets into an H x W plane and their weights (all zero for a
// sample outside the image), as ONNX's pre_calc_for_bilinear_interpolate computes it.
struct RoiSample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};
RoiSample BilinearRoiSample(double y, double x, int64_t height, int64_t width);

// ---- image.grid_sample -----------------------------------------------------------------------

// image.grid_sample's attributes, read once per call (the shape rule has checked the names).
struct GridSampleParams {
  enum class Mode { kBilinear, kNearest, kBicubic };
  enum class Padding { kZeros, kBorder, kReflection };
  Mode mode = Mode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};
GridSampleParams GridSampleParamsOf(const Attrs& attrs);

// How one sample reads along one axis: `count` taps (1 nearest, 2 bilinear, 4 bicubic), each a
// pixel index or -1 for a zero (zeros padding outside the image), with its weight. count 0: the
// coordinate is NaN, or infinite and not clamped by border padding: the sample is NaN.
struct GridAxisTaps {
  int count = 0;
  int64_t index[4] = {-1, -1, -1, -1};
  double weight[4] = {0, 0, 0, 0};
};

// The taps of normalized coordinate `v` (-1 and 1 are the image's edges) along an axis of
// `size` >= 1 pixels: denormalize, nearest rounding (half to even), coordinate padding (border
// clamps, reflection folds) and the padding of every tap, as ONNX's GridSample reference does.
GridAxisTaps GridSampleAxis(double v, int64_t size, const GridSampleParams& params);

}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_IMAGE_SAMPLING_H_
