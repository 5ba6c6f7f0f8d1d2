// Random valid inputs for every registered op: one generator per op, shared by the tests that
// must cover the whole registry (the mask verification in src/shape_funcs, the op-by-op runtime
// check in test/unit). A new op needs a generator here, or both tests fail.
//
// Values are small integers and halves (ties are likely: exercises stable ordering); shapes are
// small (dims 1..4 by default) so trials are cheap.
#ifndef HETPASS_TEST_SUPPORT_OP_GENERATORS_H_
#define HETPASS_TEST_SUPPORT_OP_GENERATORS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/ir/attributes.h"
#include "passes/ir/tensor.h"
#include "passes/shape_funcs/channel_layout.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {

// ---- random inputs -------------------------------------------------------------------------

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool Coin() { return Int(0, 1) == 1; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, static_cast<int64_t>(v.size()) - 1)];
  }
  std::vector<int64_t> Shape(int rank, int64_t lo = 1, int64_t hi = 4) {
    std::vector<int64_t> s;
    for (int i = 0; i < rank; ++i) s.push_back(Int(lo, hi));
    return s;
  }
  // Small integers (ties are likely: exercises stable ordering) and halves.
  Tensor F(std::vector<int64_t> shape, DType dt = DType::kF32) {
    Tensor t = Tensor::Zeros(dt, std::move(shape));
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, Int(-6, 6) * 0.5);
    return t;
  }
  Tensor I(std::vector<int64_t> shape, int64_t lo, int64_t hi, DType dt = DType::kI64) {
    Tensor t = Tensor::Zeros(dt, std::move(shape));
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetInt64(i, Int(lo, hi));
    return t;
  }
  Tensor Vec(const std::vector<int64_t>& v) { return I64s(v); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

struct Trial {
  Attrs attrs;
  std::vector<Tensor> inputs;
  // Squeeze without axes: the symbolic rule keeps symbolic dims (documented), so the rank may
  // differ from the concrete one.
  bool symbolic_rank_may_differ = false;
  // Inputs whose last dim decides the result's rank (gather_nd's and scatter_nd's index
  // length): it stays a constant where the tests make dims symbolic.
  std::vector<int> static_last_dim;
};
using Generator = std::function<Trial(Gen&)>;

// Two shapes that broadcast to `out`: each operand drops leading dims or has 1s.
inline std::vector<int64_t> BroadcastOperand(Gen& g, const std::vector<int64_t>& out) {
  const int drop = static_cast<int>(g.Int(0, static_cast<int64_t>(out.size())));
  std::vector<int64_t> s(out.begin() + drop, out.end());
  for (int64_t& d : s) d = g.Int(0, 3) == 0 ? 1 : d;
  return s;
}

inline Generator Unary() {
  return [](Gen& g) { return Trial{{}, {g.F(g.Shape(g.Int(0, 3)))}}; };
}

inline Generator Binary() {
  return [](Gen& g) {
    const auto out = g.Shape(g.Int(0, 3));
    return Trial{{}, {g.F(BroadcastOperand(g, out)), g.F(BroadcastOperand(g, out))}};
  };
}

// Integer shifts: values of a random integer dtype, amounts that reach past the bit width.
inline Generator Shift() {
  return [](Gen& g) {
    const auto out = g.Shape(g.Int(0, 3));
    constexpr DType kTypes[] = {DType::kU8, DType::kU16, DType::kU32, DType::kU64, DType::kI32};
    const DType dt = kTypes[g.Int(0, 4)];
    return Trial{{}, {g.I(BroadcastOperand(g, out), -300, 300, dt),
                      g.I(BroadcastOperand(g, out), 0, DTypeSize(dt) * 8 + 2, dt)}};
  };
}

inline Generator Reduce(bool arg) {
  return [arg](Gen& g) {
    const int rank = static_cast<int>(g.Int(1, 3));
    std::vector<int64_t> axes;
    for (int i = 0; i < rank; ++i) {
      if (g.Coin()) axes.push_back(g.Coin() ? i : i - rank);
    }
    Attrs a = {{"axis", axes}, {"keepdims", g.Coin()}, {"exclude", g.Int(0, 3) == 0}};
    if (arg) {
      a.Set("select_last_index", g.Coin());
      a.Set("dtype", g.Coin() ? DType::kI32 : DType::kI64);
    }
    return Trial{a, {g.F(g.Shape(rank))}};
  };
}

// A newshape for `in` using Relay's 0 and -1: the dims reversed, possibly merged.
inline std::vector<int64_t> RandomNewShape(Gen& g, const std::vector<int64_t>& in) {
  std::vector<int64_t> out(in.rbegin(), in.rend());
  if (out.size() >= 2 && g.Coin()) {
    out[0] *= out[1];
    out.erase(out.begin() + 1);
  }
  if (out.empty() || g.Int(0, 4) == 0) out.push_back(1);
  for (size_t i = 0; i < out.size() && i < in.size(); ++i) {
    if (out[i] == in[i] && g.Coin()) out[i] = 0;
  }
  if (g.Coin()) out[g.Int(0, static_cast<int64_t>(out.size()) - 1)] = -1;
  return out;
}

inline std::vector<int64_t> RandomPads(Gen& g, const std::vector<int64_t>& shape, bool reflect) {
  std::vector<int64_t> pads;
  for (int64_t d : shape) {
    for (int k = 0; k < 2; ++k)
      pads.push_back(g.Int(reflect ? 0 : -1, reflect ? std::min<int64_t>(2, d - 1) : 2));
  }
  // Cropping must leave a non-negative size.
  for (size_t i = 0; i < shape.size(); ++i) {
    while (shape[i] + pads[2 * i] + pads[2 * i + 1] < 0) ++pads[2 * i];
  }
  return pads;
}

struct SliceArgs {
  std::vector<int64_t> begin, end, strides;
};

inline SliceArgs RandomSlice(Gen& g, const std::vector<int64_t>& shape) {
  SliceArgs s;
  const int n = static_cast<int>(g.Int(1, static_cast<int64_t>(shape.size())));
  for (int i = 0; i < n; ++i) {
    const int64_t d = shape[i];
    s.begin.push_back(g.Int(-d - 1, d + 1));
    s.end.push_back(g.Int(0, 5) == 0 ? 2147483647 : g.Int(-d - 1, d + 1));
    s.strides.push_back(g.Pick<int64_t>({-2, -1, 1, 1, 2}));
  }
  return s;
}

inline Trial ConvTrial(Gen& g, bool pool) {
  const int64_t groups = pool ? 1 : g.Int(1, 2);
  const int64_t cin = g.Int(1, 2), cout = g.Int(1, 2) * groups;
  const std::vector<int64_t> k = {g.Int(1, 3), g.Int(1, 3)};
  const std::vector<int64_t> stride = {g.Int(1, 2), g.Int(1, 2)};
  const std::vector<int64_t> dil = {g.Int(1, 2), g.Int(1, 2)};
  std::vector<int64_t> pad = g.Shape(static_cast<int>(g.Pick<int64_t>({1, 2, 4})), 0, 1);
  const std::vector<int64_t> x = {g.Int(1, 2), cin * groups, dil[0] * (k[0] - 1) + g.Int(1, 3),
                                  dil[1] * (k[1] - 1) + g.Int(1, 3)};
  Attrs a = {{"strides", stride}, {"padding", pad}, {"dilation", dil}};
  if (pool) {
    a.Set("pool_size", k);
    a.Set("ceil_mode", g.Coin());
    return Trial{a, {g.F(x)}};
  }
  a.Set("groups", groups);
  std::vector<int64_t> data = x;
  if (g.Coin()) {  // blocked channel layouts (NCHW<b>c) for data and result, where b divides
    const int64_t in_block = g.Pick<int64_t>({0, 1, 2}), out_block = g.Pick<int64_t>({0, 1, 2});
    if (in_block > 0 && x[1] % in_block == 0) {
      a.Set("data_layout", ChannelLayoutName(in_block));
      data = {x[0], x[1] / in_block, x[2], x[3], in_block};
    }
    a.Set("out_layout", out_block > 0 && cout % out_block == 0 ? ChannelLayoutName(out_block)
                                                               : std::string("NCHW"));
  }
  return Trial{a, {g.F(data), g.F({cout, cin, k[0], k[1]})}};
}

// layout_transform: any pair of NCHW, NCHW1c, NCHW2c and NCHW4c over 4 or 8 channels.
inline Trial LayoutTransformTrial(Gen& g) {
  const int64_t src = g.Pick<int64_t>({0, 1, 2, 4}), dst = g.Pick<int64_t>({0, 1, 2, 4});
  const int64_t n = g.Int(0, 2), c = 4 * g.Int(1, 2), h = g.Int(1, 3), w = g.Int(1, 3);
  const std::vector<int64_t> x =
      src == 0 ? std::vector<int64_t>{n, c, h, w} : std::vector<int64_t>{n, c / src, h, w, src};
  return Trial{{{"src_layout", ChannelLayoutName(src)}, {"dst_layout", ChannelLayoutName(dst)}},
               {g.F(x)}};
}

// nn.conv2d_transpose: groups, channels, kernels, strides, dilations and output_padding (below
// max(stride, dilation), the useful range) all small; input spatial dims >= 3 so that padding
// (0 or 1 per side) never crops the whole output.
inline Trial ConvTransposeTrial(Gen& g) {
  const int64_t groups = g.Int(1, 2);
  const int64_t cin = g.Int(1, 2) * groups, cout_g = g.Int(1, 2);
  const std::vector<int64_t> k = {g.Int(1, 3), g.Int(1, 3)};
  const std::vector<int64_t> stride = {g.Int(1, 2), g.Int(1, 2)};
  const std::vector<int64_t> dil = {g.Int(1, 2), g.Int(1, 2)};
  const std::vector<int64_t> out_pad = {g.Int(0, std::max(stride[0], dil[0]) - 1),
                                        g.Int(0, std::max(stride[1], dil[1]) - 1)};
  const std::vector<int64_t> pad = g.Shape(static_cast<int>(g.Pick<int64_t>({1, 2, 4})), 0, 1);
  const std::vector<int64_t> x = {g.Int(1, 2), cin, g.Int(3, 5), g.Int(3, 5)};
  Attrs a = {{"strides", stride}, {"padding", pad}, {"dilation", dil}, {"groups", groups}};
  if (g.Coin()) a.Set("output_padding", out_pad);
  return Trial{a, {g.F(x), g.F({cin, cout_g, k[0], k[1]})}};
}

// image.roi_align: 1-3 rois on a small image, corners in halves from just outside the image
// to just past it (so some samples fall outside, some rois are flipped or empty), sampling
// ratio 0 (adaptive) to 2, every mode.
inline Trial RoiAlignTrial(Gen& g) {
  const int64_t n = g.Int(1, 2), h = g.Int(1, 5), w = g.Int(1, 5), r = g.Int(1, 3);
  Tensor rois = Tensor::Zeros(DType::kF32, {r, 4});
  for (int64_t i = 0; i < r; ++i) {
    for (int k = 0; k < 4; ++k) {
      const int64_t extent = k % 2 == 0 ? w : h;
      rois.SetDouble(i * 4 + k, g.Int(-2, 2 * extent + 2) * 0.5);
    }
  }
  Attrs a = {{"mode", g.Pick<std::string>({"avg", "max"})},
             {"output_height", g.Int(1, 3)},
             {"output_width", g.Int(1, 3)},
             {"sampling_ratio", g.Int(0, 2)},
             {"spatial_scale", g.Pick<double>({0.5, 1.0, 2.0})},
             {"coordinate_transformation_mode",
              g.Pick<std::string>({"half_pixel", "output_half_pixel"})}};
  return Trial{a, {g.F({n, g.Int(1, 3), h, w}), rois, g.I({r}, 0, n - 1)}};
}

// image.grid_sample: a small image and grid positions in eighths from -1.5 to 1.5, so some
// fall outside the image (every padding mode matters) and some on pixel centres and halves
// (rounding ties of nearest), every mode and both align_corners.
inline Trial GridSampleTrial(Gen& g) {
  const int64_t n = g.Int(1, 2);
  Tensor grid = Tensor::Zeros(DType::kF32, {n, g.Int(1, 3), g.Int(1, 3), 2});
  for (int64_t i = 0; i < grid.num_elements(); ++i) grid.SetDouble(i, g.Int(-12, 12) * 0.125);
  Attrs a = {{"mode", g.Pick<std::string>({"bilinear", "nearest", "bicubic"})},
             {"padding_mode", g.Pick<std::string>({"zeros", "border", "reflection"})},
             {"align_corners", g.Coin()}};
  return Trial{a, {g.F({n, g.Int(1, 3), g.Int(1, 4), g.Int(1, 4)}), grid}};
}

// nn.max_unpool2d and its dyn form: a small pooled tensor, window attributes whose unpooled
// dims stay >= 1, indices anywhere in the unpooled tensor (repeats included: the last write
// wins), and sometimes (always for dyn) an output_shape up to 2 larger per dim.
inline Trial MaxUnpoolTrial(Gen& g, bool dyn) {
  const std::vector<int64_t> x = {g.Int(1, 2), g.Int(1, 2), g.Int(1, 3), g.Int(1, 3)};
  const std::vector<int64_t> k = {g.Int(1, 3), g.Int(1, 3)}, s = {g.Int(1, 2), g.Int(1, 2)};
  std::vector<int64_t> pad(4, 0), unpooled = {x[0], x[1]};
  for (int a = 0; a < 2; ++a) {
    const int64_t full = (x[2 + a] - 1) * s[a] + k[a];
    pad[a] = g.Int(0, (full - 1) / 2);
    pad[a + 2] = g.Int(0, (full - 1) / 2);
    unpooled.push_back(full - pad[a] - pad[a + 2]);
  }
  int64_t total = 1;
  for (int64_t d : unpooled) total *= d;
  std::vector<int64_t> out = unpooled;
  for (int64_t& d : out) d += g.Int(0, 2);
  Attrs a = {{"kernel_size", k}, {"strides", s}, {"padding", pad}};
  Trial t{a, {g.F(x), g.I(x, 0, total - 1)}};
  if (dyn) {
    t.inputs.push_back(g.Vec(out));
  } else if (g.Coin()) {
    t.attrs.Set("output_shape", out);
  }
  return t;
}

// unique and its counter: rank 0-3 (a rank-0 tensor only flattened), values from a few
// integers or halves so repeats are likely, flattened or along a possibly negative axis,
// sorted or by first occurrence.
inline Trial UniqueTrial(Gen& g) {
  const auto s = g.Shape(g.Int(0, 3), 0, 4);
  const int64_t rank = static_cast<int64_t>(s.size());
  Tensor x = g.Coin() ? g.I(s, -1, 2) : Tensor::Zeros(DType::kF32, s);
  if (x.dtype() == DType::kF32) {
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, g.Int(-1, 2) * 0.5);
  }
  Attrs a = {{"sorted", g.Coin()}};
  if (rank > 0 && g.Coin()) a.Set("axis", std::vector<int64_t>{g.Int(-rank, rank - 1)});
  return Trial{a, {x}};
}

inline Trial ResizeTrial(Gen& g, bool dyn) {
  const bool nchw = g.Coin();
  const std::vector<int64_t> x =
      nchw ? std::vector<int64_t>{g.Int(1, 2), g.Int(1, 2), g.Int(1, 4), g.Int(1, 4)}
           : std::vector<int64_t>{g.Int(1, 2), g.Int(1, 4), g.Int(1, 4), g.Int(1, 2)};
  const std::vector<int64_t> size = {g.Int(1, 5), g.Int(1, 5)};
  Attrs a = {{"layout", std::string(nchw ? "NCHW" : "NHWC")},
             {"method", g.Pick<std::string>({"nearest_neighbor", "linear"})},
             {"coordinate_transformation_mode",
              g.Pick<std::string>({"half_pixel", "align_corners", "asymmetric",
                                   "pytorch_half_pixel", "tf_half_pixel_for_nn"})},
             {"rounding_method", g.Pick<std::string>({"", "round", "floor", "ceil",
                                                      "round_prefer_floor", "round_prefer_ceil"})}};
  if (dyn) return Trial{a, {g.F(x), g.Vec(size)}};
  a.Set("size", size);
  return Trial{a, {g.F(x)}};
}

// dyn.image.resize2d_scaled: a size or scales (fractional ones too, whose coordinates use the
// scale), every method including cubic, and tf_crop_and_resize with a roi.
inline Trial ResizeScaledTrial(Gen& g) {
  Trial t = ResizeTrial(g, true);
  const bool nchw = t.attrs.GetString("layout") == "NCHW";
  const std::vector<int64_t>& x = t.inputs[0].shape();
  const int hd = nchw ? 2 : 1;
  t.attrs.Set("method", g.Pick<std::string>({"nearest_neighbor", "linear", "cubic"}));
  t.attrs.Set("cubic_alpha", g.Coin() ? -0.75 : -0.5);
  t.attrs.Set("cubic_exclude", g.Int(0, 1));
  t.attrs.Set("extrapolation_value", g.Int(-2, 2) * 0.5);
  const bool crop = g.Int(0, 3) == 0;
  if (crop) t.attrs.Set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  Tensor roi = Tensor::Zeros(DType::kF32, {crop ? 8 : 0});
  for (int d = 0; crop && d < 4; ++d) {
    roi.SetDouble(d, g.Int(-1, 4) * 0.1);
    roi.SetDouble(4 + d, 1 - g.Int(-1, 4) * 0.1);
  }
  if (g.Coin()) {  // scales
    Tensor scales = Tensor::Zeros(DType::kF32, {4});
    for (int d = 0; d < 4; ++d) {
      const bool spatial = d == hd || d == hd + 1;
      scales.SetDouble(d, !spatial ? 1.0 : x[d] >= 2 ? g.Pick<double>({0.6, 1, 1.5, 2, 2.7})
                                                      : g.Pick<double>({1, 1.5, 2, 2.7}));
    }
    t.inputs = {t.inputs[0], Tensor::Zeros(DType::kI64, {0}), scales, roi};
  } else {
    t.inputs = {t.inputs[0], t.inputs[1], Tensor::Zeros(DType::kF32, {0}), roi};
  }
  return t;
}

inline Trial TopKTrial(Gen& g, bool dyn) {
  const auto shape = g.Shape(static_cast<int>(g.Int(1, 3)));
  const int64_t axis = g.Int(-static_cast<int64_t>(shape.size()), shape.size() - 1);
  const int64_t d = shape[axis < 0 ? axis + shape.size() : axis];
  const int64_t k = g.Int(-1, d + 1);
  Attrs a = {
      {"axis", axis}, {"is_ascend", g.Coin()}, {"dtype", g.Coin() ? DType::kI32 : DType::kI64}};
  if (dyn) return Trial{a, {g.F(shape), I64Scalar(k)}};
  a.Set("k", k);
  return Trial{a, {g.F(shape)}};
}

// non_max_suppression and its counter: 2-5 boxes on a coarse grid, either scattered (sides
// 0..2: partial overlaps, ties, flipped corners, zero-area boxes) or clustered (unit boxes a
// quarter apart, which suppress each other until one coordinate moves); limits and thresholds
// mostly let suppression decide the count. So perturbing one coordinate often changes the
// count, which the mask verification needs to see that the boxes' values matter. Parameters
// are scalars or [1] tensors, as exporters write them.
inline Trial NonMaxSuppressionTrial(Gen& g) {
  const int64_t batches = g.Int(1, 2), classes = g.Int(1, 3), boxes = g.Int(2, 5);
  const bool center = g.Coin(), clustered = g.Coin();
  Tensor b = Tensor::Zeros(DType::kF32, {batches, boxes, 4});
  for (int64_t i = 0; i < batches * boxes; ++i) {
    // A corner (center: the center) and the sides (center: width, height).
    const double p0 = g.Int(0, clustered ? 1 : 4) * (clustered ? 0.25 : 0.5);
    const double p1 = g.Int(0, clustered ? 1 : 4) * (clustered ? 0.25 : 0.5);
    const double s0 = clustered ? 1 : g.Int(0, 8) * 0.25, s1 = clustered ? 1 : g.Int(1, 8) * 0.25;
    const bool flip = !center && g.Int(0, 3) == 0;
    const std::vector<double> v = center ? std::vector<double>{p0, p1, s0, s1}
                                  : flip ? std::vector<double>{p0 + s0, p1 + s1, p0, p1}
                                         : std::vector<double>{p0, p1, p0 + s0, p1 + s1};
    for (int k = 0; k < 4; ++k) b.SetDouble(i * 4 + k, v[k]);
  }
  Tensor s = Tensor::Zeros(DType::kF32, {batches, classes, boxes});
  for (int64_t i = 0; i < s.num_elements(); ++i) s.SetDouble(i, g.Int(1, 4) * 0.25);
  auto scalar = [&](Tensor t) { return g.Coin() ? t : t.Reshaped({1}); };
  Attrs a = {{"center_point_box", int64_t{center ? 1 : 0}}};
  if (g.Int(0, 3) == 0) a.Set("has_score_threshold", false);
  return Trial{a,
               {b, s, scalar(I64Scalar(g.Pick<int64_t>({0, 1, 2, 3, 4, 4, 4, 4}))),
                scalar(FT({}, {g.Pick<double>({0, 0, 0, 0.25, 0.5, 1})})),
                scalar(FT({}, {g.Pick<double>({0, 0.25, 0.5})}))}};
}

inline const std::map<std::string, Generator>& Generators() {
  static const auto* table = new std::map<std::string, Generator>{
      {"nn.relu", Unary()},
      {"exp", Unary()},
      {"sigmoid", Unary()},
      {"tanh", Unary()},
      {"sqrt", Unary()},
      {"floor", Unary()},
      {"ceil", Unary()},
      {"log", Unary()},
      {"negative", Unary()},
      {"abs", Unary()},
      {"round", Unary()},
      {"erf", Unary()},
      {"sin", Unary()},
      {"cos", Unary()},
      {"tan", Unary()},
      {"asin", Unary()},
      {"acos", Unary()},
      {"atan", Unary()},
      {"sinh", Unary()},
      {"cosh", Unary()},
      {"asinh", Unary()},
      {"acosh", Unary()},
      {"atanh", Unary()},
      {"mod", Binary()},
      {"fmod", Binary()},
      {"left_shift", Shift()},
      {"right_shift", Shift()},
      {"add", Binary()},
      {"subtract", Binary()},
      {"multiply", Binary()},
      {"divide", Binary()},
      {"power", Binary()},
      {"maximum", Binary()},
      {"minimum", Binary()},
      {"equal", Binary()},
      {"greater", Binary()},
      {"less", Binary()},
      {"where",
       [](Gen& g) {
         const auto out = g.Shape(g.Int(0, 3));
         return Trial{{},
                      {g.I(BroadcastOperand(g, out), 0, 1, DType::kBool),
                       g.F(BroadcastOperand(g, out)), g.F(BroadcastOperand(g, out))}};
       }},
      {"device_copy",
       [](Gen& g) {
         return Trial{{{"src", std::string("cpu")}, {"dst", std::string(g.Pick<std::string>({"sim", "cuda"}))}},
                      {g.F(g.Shape(g.Int(0, 3)))}};
       }},
      {"count_nonzero",
       [](Gen& g) {
         return Trial{{}, {g.F(g.Shape(g.Int(0, 3)))}};
       }},
      {"cast",
       [](Gen& g) {
         return Trial{{{"dtype", g.Pick<DType>({DType::kF32, DType::kI32, DType::kI64})}},
                      {g.F(g.Shape(g.Int(0, 3)))}};
       }},
      {"nn.dense",
       [](Gen& g) {
         std::vector<int64_t> x = g.Shape(g.Int(1, 3));
         const int64_t n = g.Int(1, 4);
         Attrs a;
         if (g.Coin()) a.Set("units", n);
         return Trial{a, {g.F(x), g.F({n, x.back()})}};
       }},
      {"nn.batch_matmul",
       [](Gen& g) {
         // Batch dims that broadcast (either side may drop leading dims or have 1s).
         const auto batch = g.Shape(g.Int(0, 2));
         const int64_t m = g.Int(1, 3), k = g.Int(0, 3), n = g.Int(1, 3);
         auto a = BroadcastOperand(g, batch), b = BroadcastOperand(g, batch);
         a.insert(a.end(), {m, k});
         b.insert(b.end(), {k, n});
         return Trial{{}, {g.F(a), g.F(b)}};
       }},
      {"nn.bias_add",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 4));
         const int64_t axis = g.Int(-static_cast<int64_t>(x.size()), x.size() - 1);
         return Trial{{{"axis", axis}}, {g.F(x), g.F({x[axis < 0 ? axis + x.size() : axis]})}};
       }},
      {"nn.conv2d", [](Gen& g) { return ConvTrial(g, false); }},
      {"nn.max_pool2d", [](Gen& g) { return ConvTrial(g, true); }},
      {"nn.max_pool2d_with_indices",
       [](Gen& g) {
         Trial t = ConvTrial(g, true);
         t.attrs.Set("storage_order", g.Int(0, 1));
         return t;
       }},
      {"nn.avg_pool2d",
       [](Gen& g) {
         Trial t = ConvTrial(g, true);
         t.attrs.Set("count_include_pad", g.Coin());
         return t;
       }},
      {"nn.conv2d_transpose", ConvTransposeTrial},
      {"layout_transform", LayoutTransformTrial},
      {"nn.softmax",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         return Trial{{{"axis", g.Int(-static_cast<int64_t>(x.size()), x.size() - 1)}}, {g.F(x)}};
       }},
      {"nn.pad",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const std::string mode = g.Pick<std::string>({"constant", "edge", "reflect"});
         return Trial{{{"pad_width", RandomPads(g, x, mode == "reflect")},
                       {"pad_mode", mode},
                       {"pad_value", 1.5}},
                      {g.F(x)}};
       }},
      {"dyn.nn.pad",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const std::string mode = g.Pick<std::string>({"constant", "edge", "reflect"});
         const Tensor pads = g.Vec(RandomPads(g, x, mode == "reflect"));
         return Trial{{{"pad_mode", mode}},
                      {g.F(x), g.Coin() ? pads.Reshaped({static_cast<int64_t>(x.size()), 2}) : pads,
                       g.F({})}};
       }},
      {"reshape",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(0, 3));
         return Trial{{{"newshape", RandomNewShape(g, x)}}, {g.F(x)}};
       }},
      {"dyn.reshape",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(0, 3));
         if (g.Int(0, 3) == 0) {  // allowzero: the dims reversed, a 0 being a zero dim
           return Trial{{{"allowzero", true}}, {g.F(x), g.Vec(std::vector<int64_t>(x.rbegin(), x.rend()))}};
         }
         return Trial{{}, {g.F(x), g.Vec(RandomNewShape(g, x))}};
       }},
      {"transpose",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(0, 4));
         std::vector<int64_t> perm;
         if (g.Coin()) {
           for (size_t i = 0; i < x.size(); ++i) perm.push_back(i);
           std::shuffle(perm.begin(), perm.end(), g.rng());
         }
         return Trial{{{"axes", perm}}, {g.F(x)}};
       }},
      {"expand_dims",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(0, 3));
         const int64_t r = x.size();
         return Trial{{{"axis", g.Int(-r - 1, r)}, {"num_newaxis", g.Int(0, 2)}}, {g.F(x)}};
       }},
      {"squeeze",
       [](Gen& g) {
         auto x = g.Shape(g.Int(1, 4), 1, 3);
         std::vector<int64_t> axes;
         for (size_t i = 0; i < x.size(); ++i) {
           if (x[i] == 1 && g.Coin()) axes.push_back(i);
         }
         Trial t{{{"axis", axes}}, {g.F(x)}};
         t.symbolic_rank_may_differ = axes.empty();
         return t;
       }},
      {"dyn.squeeze",
       [](Gen& g) {
         // Some dims forced to 1, a random subset of those squeezed (negative or not, in any
         // order; none at all squeezes nothing).
         auto x = g.Shape(g.Int(1, 4), 1, 3);
         for (int64_t& d : x) d = g.Coin() ? 1 : d;
         const int64_t r = x.size();
         std::vector<int64_t> axes;
         for (int64_t i = 0; i < r; ++i) {
           if (x[i] == 1 && g.Coin()) axes.push_back(g.Coin() ? i : i - r);
         }
         std::shuffle(axes.begin(), axes.end(), g.rng());
         return Trial{{}, {g.F(x), g.Vec(axes)}};
       }},
      {"dyn.unsqueeze",
       [](Gen& g) {
         // Distinct output positions, negative or not, in any order.
         const auto x = g.Shape(g.Int(0, 3));
         const int64_t n = g.Int(1, 3), out_rank = static_cast<int64_t>(x.size()) + n;
         std::vector<int64_t> positions(out_rank);
         for (int64_t i = 0; i < out_rank; ++i) positions[i] = i;
         std::shuffle(positions.begin(), positions.end(), g.rng());
         positions.resize(n);
         for (int64_t& a : positions) a = g.Coin() ? a : a - out_rank;
         return Trial{{}, {g.F(x), g.Vec(positions)}};
       }},
      {"concatenate",
       [](Gen& g) {
         const auto base = g.Shape(g.Int(1, 3));
         const int64_t axis = g.Int(0, base.size() - 1);
         Trial t{{{"axis", g.Coin() ? axis : axis - static_cast<int64_t>(base.size())}}, {}};
         for (int64_t n = g.Int(1, 3); n > 0; --n) {
           auto s = base;
           s[axis] = g.Int(0, 3);
           t.inputs.push_back(g.F(s));
         }
         return t;
       }},
      {"broadcast_to",
       [](Gen& g) {
         const auto target = g.Shape(g.Int(0, 3));
         return Trial{{{"shape", target}}, {g.F(BroadcastOperand(g, target))}};
       }},
      {"dyn.broadcast_to",
       [](Gen& g) {
         const auto target = g.Shape(g.Int(0, 3));
         return Trial{{}, {g.F(BroadcastOperand(g, target)), g.Vec(target)}};
       }},
      {"tile",
       [](Gen& g) {
         return Trial{{{"reps", g.Shape(g.Int(0, 3), 1, 3)}}, {g.F(g.Shape(g.Int(0, 3)))}};
       }},
      {"dyn.tile",
       [](Gen& g) {
         return Trial{{}, {g.F(g.Shape(g.Int(0, 3))), g.Vec(g.Shape(g.Int(1, 3), 1, 3))}};
       }},
      {"strided_slice",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const SliceArgs s = RandomSlice(g, x);
         Attrs a = {{"begin", s.begin}, {"end", s.end}};
         if (g.Coin()) a.Set("strides", s.strides);
         if (g.Int(0, 3) == 0) {  // explicit axes, in a shuffled order
           std::vector<int64_t> axes(x.size());
           for (size_t i = 0; i < x.size(); ++i) axes[i] = i;
           std::shuffle(axes.begin(), axes.end(), g.rng());
           axes.resize(s.begin.size());
           std::vector<int64_t> ends;
           for (size_t i = 0; i < axes.size(); ++i)
             ends.push_back(g.Int(-x[axes[i]] - 1, x[axes[i]] + 1));
           a.Set("axes", axes);
           a.Set("end", ends);
         } else if (g.Int(0, 3) == 0) {  // slice_mode size: end holds sizes (-1: to the end)
           std::vector<int64_t> sizes;
           for (size_t i = 0; i < s.begin.size(); ++i) sizes.push_back(g.Int(-1, x[i] + 1));
           a.Set("end", sizes);
           a.Set("slice_mode", std::string("size"));
         }
         return Trial{a, {g.F(x)}};
       }},
      {"dyn.strided_slice",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const SliceArgs s = RandomSlice(g, x);
         return Trial{{}, {g.F(x), g.Vec(s.begin), g.Vec(s.end), g.Vec(s.strides)}};
       }},
      {"gather_elements",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const int64_t axis = g.Int(0, x.size() - 1);
         std::vector<int64_t> is;
         for (size_t d = 0; d < x.size(); ++d) {
           is.push_back(static_cast<int64_t>(d) == axis ? g.Int(0, 4) : g.Int(1, x[d]));
         }
         const int64_t n = x[axis];
         return Trial{{{"axis", g.Coin() ? axis : axis - static_cast<int64_t>(x.size())}},
                      {g.F(x), g.I(is, -n, n - 1)}};
       }},
      {"cumsum",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const int64_t rank = static_cast<int64_t>(x.size());
         return Trial{{{"exclusive", g.Coin()}, {"reverse", g.Coin()}},
                      {g.F(x), I64Scalar(g.Int(-rank, rank - 1))}};
       }},
      {"gather_nd",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const int64_t b = g.Int(0, static_cast<int64_t>(x.size()) - 1);
         const int64_t k = g.Int(1, static_cast<int64_t>(x.size()) - b);
         std::vector<int64_t> is(x.begin(), x.begin() + b);
         for (int64_t extra = g.Int(0, 2); extra > 0; --extra) is.push_back(g.Int(1, 3));
         is.push_back(k);
         Tensor idx = Tensor::Zeros(DType::kI64, is);
         for (int64_t i = 0; i < idx.num_elements(); ++i) {
           const int64_t n = x[b + i % k];
           idx.SetInt64(i, g.Int(-n, n - 1));
         }
         Trial t{{{"batch_dims", b}}, {g.F(x), idx}};
         t.static_last_dim = {1};
         return t;
       }},
      {"scatter_elements",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const int64_t axis = g.Int(0, x.size() - 1);
         std::vector<int64_t> is;
         for (size_t d = 0; d < x.size(); ++d) is.push_back(g.Int(1, x[d]));
         const int64_t n = x[axis];
         return Trial{{{"axis", axis},
                       {"reduction", g.Pick<std::string>({"none", "add", "mul", "max", "min"})}},
                      {g.F(x), g.I(is, -n, n - 1), g.F(is)}};
       }},
      {"scatter_nd",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const int64_t k = g.Int(1, x.size());
         std::vector<int64_t> is = g.Shape(g.Int(0, 2));
         is.push_back(k);
         Tensor idx = Tensor::Zeros(DType::kI64, is);
         for (int64_t i = 0; i < idx.num_elements(); ++i) {
           const int64_t n = x[i % k];
           idx.SetInt64(i, g.Int(-n, n - 1));
         }
         std::vector<int64_t> us(is.begin(), is.end() - 1);
         us.insert(us.end(), x.begin() + k, x.end());
         Trial t{{{"reduction", g.Pick<std::string>({"none", "add", "mul", "max", "min"})}},
                 {g.F(x), idx, g.F(us)}};
         t.static_last_dim = {1};
         return t;
       }},
      {"take",
       [](Gen& g) {
         const auto x = g.Shape(g.Int(1, 3));
         const int64_t axis = g.Int(0, x.size() - 1);
         const std::string mode = g.Pick<std::string>({"clip", "wrap", "fast"});
         const int64_t d = x[axis];
         const Tensor idx = mode == "fast" ? g.I(g.Shape(g.Int(0, 2)), -d, d - 1)
                                           : g.I(g.Shape(g.Int(0, 2)), -d - 2, d + 2);
         return Trial{{{"axis", axis}, {"mode", mode}}, {g.F(x), idx}};
       }},
      {"shape_of",
       [](Gen& g) {
         return Trial{{{"dtype", g.Coin() ? DType::kI32 : DType::kI64}},
                      {g.F(g.Shape(g.Int(0, 3), 0, 3))}};
       }},
      {"arange",
       [](Gen& g) {
         if (g.Coin()) {
           return Trial{{{"dtype", DType::kI64}},
                        {I64Scalar(g.Int(-5, 5)), I64Scalar(g.Int(-5, 5)),
                         I64Scalar(g.Pick<int64_t>({-2, -1, 1, 2, 3}))}};
         }
         return Trial{{}, {g.F({}), g.F({}), FT({}, {g.Pick<double>({-1.5, -0.5, 0.5, 0.75, 2})})}};
       }},
      {"dyn.full",
       [](Gen& g) {
         return Trial{{{"dtype", g.Coin() ? DType::kF32 : DType::kI64}},
                      {g.F({}), g.Vec(g.Shape(g.Int(0, 3), 0, 3))}};
       }},
      {"dyn.zeros",
       [](Gen& g) {
         return Trial{{}, {g.Vec(g.Shape(g.Int(0, 3), 0, 3))}};
       }},
      {"dyn.ones",
       [](Gen& g) {
         return Trial{{}, {g.Vec(g.Shape(g.Int(0, 3), 0, 3))}};
       }},
      {"sum", Reduce(false)},
      {"dyn.sum",
       [](Gen& g) {
         const int rank = static_cast<int>(g.Int(1, 3));
         std::vector<int64_t> axes;
         for (int i = 0; i < rank; ++i) {
           if (g.Coin()) axes.push_back(g.Coin() ? i : i - rank);
         }
         return Trial{{{"keepdims", g.Coin()}, {"noop_with_empty_axes", g.Coin()}},
                      {g.F(g.Shape(rank)), g.Vec(axes)}};
       }},
      {"mean", Reduce(false)},
      {"prod", Reduce(false)},
      {"max", Reduce(false)},
      {"min", Reduce(false)},
      {"argmax", Reduce(true)},
      {"argmin", Reduce(true)},
      {"topk", [](Gen& g) { return TopKTrial(g, false); }},
      {"dyn.topk", [](Gen& g) { return TopKTrial(g, true); }},
      {"argwhere",
       [](Gen& g) {
         const auto s = g.Shape(g.Int(0, 3), 0, 3);
         return Trial{{}, {g.Coin() ? g.I(s, 0, 1, DType::kBool) : g.F(s)}};
       }},
      {"non_max_suppression", NonMaxSuppressionTrial},
      {"non_max_suppression_count", NonMaxSuppressionTrial},
      {"image.resize2d", [](Gen& g) { return ResizeTrial(g, false); }},
      {"dyn.image.resize2d", [](Gen& g) { return ResizeTrial(g, true); }},
      {"dyn.image.resize2d_scaled", ResizeScaledTrial},
      // Seeded, so every kernel and run draws the same numbers.
      {"random.uniform_like",
       [](Gen& g) {
         return Trial{{{"seed", g.Int(0, 1000)}, {"low", -1.0}, {"high", g.Int(0, 3) * 1.0}},
                      {g.F(g.Shape(g.Int(0, 3)))}};
       }},
      {"random.normal_like",
       [](Gen& g) {
         return Trial{{{"seed", g.Int(0, 1000)}, {"dtype", g.Coin() ? DType::kF32 : DType::kF64}},
                      {g.F(g.Shape(g.Int(0, 3)))}};
       }},
      {"image.roi_align", RoiAlignTrial},
      {"image.grid_sample", GridSampleTrial},
      {"unique", UniqueTrial},
      {"unique_count", UniqueTrial},
      {"nn.max_unpool2d", [](Gen& g) { return MaxUnpoolTrial(g, false); }},
      {"dyn.nn.max_unpool2d", [](Gen& g) { return MaxUnpoolTrial(g, true); }},
      {"linalg.det",
       [](Gen& g) {
         std::vector<int64_t> s = g.Shape(g.Int(0, 2));
         const int64_t m = g.Int(1, 4);
         s.push_back(m);
         s.push_back(m);
         return Trial{{}, {g.F(s)}};
       }},
  };
  return *table;
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_OP_GENERATORS_H_
