// Sampling arithmetic of image.resize2d, image.roi_align and image.grid_sample (see
// image_sampling.h). The expressions are the reference kernels' own, in their evaluation order:
// the native kernels' bit-identity to the reference depends on it.
//
// image.grid_sample follows ONNX's GridSample reference (onnx/reference/ops/op_grid_sample.py,
// itself after PyTorch's GridSampler.h), per axis of a sample:
//   1. denormalize: align_corners x = (v + 1) / 2 * (size - 1), else ((v + 1) * size - 1) / 2;
//   2. nearest mode rounds x half to even (PyTorch's 2-D nearbyint), BEFORE padding;
//   3. coordinate padding, only outside [lo, hi] = [0, size - 1] (align_corners) or
//      [-0.5, size - 0.5]: border clamps x into [0, size - 1], reflection folds it back by the
//      near border until inside (a zero-width range, size 1 under align_corners, gives lo);
//   4. taps: nearest x itself, bilinear floor(x) and floor(x) + 1 (weights 1 - t and t,
//      t = x - floor(x)), bicubic floor(x) - 1 .. floor(x) + 2 with Keys' weights, A = -0.75;
//   5. every tap is padded again: zeros reads 0 outside [0, size), border clamps, reflection
//      folds the integer tap into [lo, hi] and truncates.
// Tap arithmetic stays in double until an index is known to be inside the image, so no grid
// value (1e30, an infinity) reaches an integer conversion out of range.
#include "shape_funcs/image_sampling.h"

#include <algorithm>
#include <cmath>

namespace hetpass {

double ResizeSourceCoord(double x, int64_t in, int64_t out, const std::string& mode,
                         const ResizeAxisParams& p) {
  const double last = static_cast<double>(in - 1);
  if (mode == "tf_crop_and_resize") {
    const double len = p.scale > 0 ? static_cast<double>(in) * p.scale : static_cast<double>(out);
    const double c = len > 1 ? x * (p.roi_end - p.roi_start) * last / (len - 1)
                             : (p.roi_end - p.roi_start) * last / 2;
    return c + p.roi_start * last;
  }
  if (p.scale > 0) {
    const double len = static_cast<double>(in) * p.scale;  // ONNX's unfloored resized length
    if (mode == "align_corners") return len > 1 ? x * last / (len - 1) : 0.0;
    if (mode == "asymmetric") return x / p.scale;
    if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / p.scale;
    if (mode == "pytorch_half_pixel" && len <= 1) return 0.0;
    return (x + 0.5) / p.scale - 0.5;
  }
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  if (mode == "align_corners") {
    return out > 1 ? x * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  }
  if (mode == "asymmetric") return x * scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) * scale;
  if (mode == "pytorch_half_pixel" && out == 1) return 0.0;
  return (x + 0.5) * scale - 0.5;
}

int64_t ResizeNearest(double c, const std::string& rounding) {
  if (rounding == "round") return static_cast<int64_t>(std::round(c));
  if (rounding == "round_prefer_floor") return static_cast<int64_t>(std::ceil(c - 0.5));
  if (rounding == "round_prefer_ceil") return static_cast<int64_t>(std::floor(c + 0.5));
  if (rounding == "ceil") return static_cast<int64_t>(std::ceil(c));
  return static_cast<int64_t>(std::floor(c));
}

int64_t ClampIndex(int64_t i, int64_t n) { return std::min(std::max<int64_t>(i, 0), n - 1); }

namespace {
// tf_crop_and_resize's coordinates outside [0, in - 1] take extrapolation_value.
bool OutsideCrop(double c, int64_t in, const std::string& mode) {
  return mode == "tf_crop_and_resize" && (c < 0 || c > static_cast<double>(in - 1));
}
}  // namespace

std::vector<ResizeTap> ResizeAxisTaps(int64_t in, int64_t out, const Attrs& attrs,
                                      const ResizeAxisParams& p) {
  const std::string& mode = attrs.GetString("coordinate_transformation_mode");
  const bool nearest = attrs.GetString("method") == "nearest_neighbor";
  std::string rounding = attrs.GetString("rounding_method");
  // TVM's default: round under align_corners, floor otherwise.
  if (rounding.empty()) rounding = mode == "align_corners" ? "round" : "floor";
  std::vector<ResizeTap> taps;
  taps.reserve(out);
  for (int64_t x = 0; x < out; ++x) {
    const double c = ResizeSourceCoord(static_cast<double>(x), in, out, mode, p);
    if (OutsideCrop(c, in, mode)) {
      taps.push_back({0, 0, 0.0, 0.0, true});
    } else if (nearest) {
      const int64_t i = ClampIndex(ResizeNearest(c, rounding), in);
      taps.push_back({i, i, 1.0, 0.0});
    } else {
      const double f = std::floor(c);
      const int64_t i = static_cast<int64_t>(f);
      taps.push_back({ClampIndex(i, in), ClampIndex(i + 1, in), 1 - (c - f), c - f});
    }
  }
  return taps;
}

std::vector<CubicTap> ResizeCubicTaps(int64_t in, int64_t out, const Attrs& attrs,
                                      const ResizeAxisParams& p) {
  const std::string& mode = attrs.GetString("coordinate_transformation_mode");
  const double a = attrs.GetFloat("cubic_alpha");
  const bool exclude = attrs.GetInt("cubic_exclude") != 0;
  std::vector<CubicTap> taps(out);
  for (int64_t x = 0; x < out; ++x) {
    CubicTap& t = taps[x];
    const double c = ResizeSourceCoord(static_cast<double>(x), in, out, mode, p);
    if (OutsideCrop(c, in, mode)) {
      t.outside = true;
      continue;
    }
    double base = std::floor(c);
    double r = c - base;
    if (r == 0) base -= 1, r = 1;  // ONNX's choice of neighbours for an integral coordinate
    const double s = 1 - r;
    const double w[4] = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * s - (a + 3)) * s * s + 1,
                         ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = static_cast<int64_t>(base) - 1 + k;
      t.w[k] = exclude && (i < 0 || i >= in) ? 0.0 : w[k];
      t.idx[k] = ClampIndex(i, in);
      sum += t.w[k];
    }
    if (exclude && sum != 0) {
      for (double& wk : t.w) wk /= sum;
    }
  }
  return taps;
}

RoiAlignParams RoiAlignParamsOf(const Attrs& attrs) {
  RoiAlignParams p;
  p.output_height = attrs.GetInt("output_height");
  p.output_width = attrs.GetInt("output_width");
  p.sampling_ratio = attrs.GetInt("sampling_ratio");
  p.spatial_scale = attrs.GetFloat("spatial_scale");
  p.half_pixel = attrs.GetString("coordinate_transformation_mode") == "half_pixel";
  p.max_mode = attrs.GetString("mode") == "max";
  return p;
}

RoiGrid MakeRoiGrid(const double box[4], const RoiAlignParams& p) {
  const double scale = p.spatial_scale;
  const double offset = p.half_pixel ? 0.5 : 0.0;
  RoiGrid g;
  g.start_w = box[0] * scale - offset;
  g.start_h = box[1] * scale - offset;
  double roi_w = box[2] * scale - offset - g.start_w;
  double roi_h = box[3] * scale - offset - g.start_h;
  if (!p.half_pixel) {  // malformed rois become 1 x 1 (ONNX's aligned = false)
    roi_w = std::max(roi_w, 1.0);
    roi_h = std::max(roi_h, 1.0);
  }
  g.bin_h = roi_h / static_cast<double>(p.output_height);
  g.bin_w = roi_w / static_cast<double>(p.output_width);
  // A non-positive grid (a degenerate half_pixel roi) samples nothing: avg gives 0, as does
  // max (ONNX starts from 0 and never updates it).
  const int64_t grid_h =
      p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(g.bin_h));
  const int64_t grid_w =
      p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(g.bin_w));
  g.grid_h = std::max<int64_t>(grid_h, 0);
  g.grid_w = std::max<int64_t>(grid_w, 0);
  g.count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
  return g;
}

RoiAxisSample SampleRoiAxis(double y, int64_t size) {
  RoiAxisSample s;
  if (y < -1.0 || y > static_cast<double>(size)) return s;
  s.inside = true;
  y = std::max(y, 0.0);
  s.lo = static_cast<int64_t>(y);
  if (s.lo >= size - 1) {
    s.hi = s.lo = size - 1;
    y = static_cast<double>(s.lo);
  } else {
    s.hi = s.lo + 1;
  }
  s.l = y - static_cast<double>(s.lo);
  return s;
}

RoiSample BilinearRoiSample(double y, double x, int64_t height, int64_t width) {
  RoiSample s;
  const RoiAxisSample sy = SampleRoiAxis(y, height);
  const RoiAxisSample sx = SampleRoiAxis(x, width);
  if (!sy.inside || !sx.inside) return s;
  const double ly = sy.l, lx = sx.l;
  const double hy = 1.0 - ly, hx = 1.0 - lx;
  s.pos[0] = sy.lo * width + sx.lo;
  s.pos[1] = sy.lo * width + sx.hi;
  s.pos[2] = sy.hi * width + sx.lo;
  s.pos[3] = sy.hi * width + sx.hi;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

GridSampleParams GridSampleParamsOf(const Attrs& attrs) {
  GridSampleParams p;
  const std::string& mode = attrs.GetString("mode");
  p.mode = mode == "nearest"   ? GridSampleParams::Mode::kNearest
           : mode == "bicubic" ? GridSampleParams::Mode::kBicubic
                               : GridSampleParams::Mode::kBilinear;
  const std::string& padding = attrs.GetString("padding_mode");
  p.padding = padding == "border"       ? GridSampleParams::Padding::kBorder
              : padding == "reflection" ? GridSampleParams::Padding::kReflection
                                        : GridSampleParams::Padding::kZeros;
  p.align_corners = attrs.GetBool("align_corners");
  return p;
}

namespace {

// Folds x into [lo, hi] by reflecting at the near border until inside (step 3 of the file
// comment). floor(dx / range) counts the crossings; its parity picks the border measured from.
double GridReflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const double crossings = std::floor(dx / range);
    const double r = dx - crossings * range;
    return std::fmod(crossings, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double crossings = std::floor(dx / range);
    const double r = dx - crossings * range;
    return std::fmod(crossings, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

// The pixel a tap at integer position i (a double: it may be far outside int64) reads, or -1
// for a zero (step 5).
int64_t GridTap(double i, int64_t size, double lo, double hi, const GridSampleParams& p) {
  const double last = static_cast<double>(size - 1);
  switch (p.padding) {
    case GridSampleParams::Padding::kZeros:
      return i >= 0 && i <= last ? static_cast<int64_t>(i) : -1;
    case GridSampleParams::Padding::kBorder:
      return static_cast<int64_t>(std::clamp(i, 0.0, last));
    case GridSampleParams::Padding::kReflection:
      // The reference truncates the folded value; the clamp only guards rounding at a border.
      return static_cast<int64_t>(std::clamp(std::trunc(GridReflect(i, lo, hi)), 0.0, last));
  }
  return -1;
}

// Keys' cubic convolution weights of taps -1, 0, 1, 2 around a coordinate t in [0, 1) past tap 0.
void CubicWeights(double t, double w[4]) {
  constexpr double kA = -0.75;
  const double t0 = t + 1, t1 = t, t2 = 1 - t, t3 = 2 - t;
  w[0] = ((kA * t0 - 5 * kA) * t0 + 8 * kA) * t0 - 4 * kA;
  w[1] = ((kA + 2) * t1 - (kA + 3)) * t1 * t1 + 1;
  w[2] = ((kA + 2) * t2 - (kA + 3)) * t2 * t2 + 1;
  w[3] = ((kA * t3 - 5 * kA) * t3 + 8 * kA) * t3 - 4 * kA;
}

}  // namespace

GridAxisTaps GridSampleAxis(double v, int64_t size, const GridSampleParams& p) {
  const double n = static_cast<double>(size);
  double x = p.align_corners ? (v + 1) / 2.0 * (n - 1) : ((v + 1) * n - 1) / 2.0;
  if (p.mode == GridSampleParams::Mode::kNearest) x = std::nearbyint(x);
  const double lo = p.align_corners ? 0.0 : -0.5;
  const double hi = p.align_corners ? n - 1 : n - 0.5;
  if (x < lo || x > hi) {
    if (p.padding == GridSampleParams::Padding::kBorder) x = std::clamp(x, 0.0, n - 1);
    if (p.padding == GridSampleParams::Padding::kReflection) x = GridReflect(x, lo, hi);
  }
  GridAxisTaps taps;
  if (!std::isfinite(x)) return taps;
  if (p.mode == GridSampleParams::Mode::kNearest) {
    taps.count = 1;
    taps.index[0] = GridTap(x, size, lo, hi, p);
    taps.weight[0] = 1;
    return taps;
  }
  const double f = std::floor(x);
  const double t = x - f;
  if (p.mode == GridSampleParams::Mode::kBilinear) {
    taps.count = 2;
    taps.weight[0] = 1 - t;
    taps.weight[1] = t;
    for (int k = 0; k < 2; ++k) taps.index[k] = GridTap(f + k, size, lo, hi, p);
    return taps;
  }
  taps.count = 4;
  CubicWeights(t, taps.weight);
  for (int k = 0; k < 4; ++k) taps.index[k] = GridTap(f + k - 1, size, lo, hi, p);
  return taps;
}

}  // namespace hetpass
