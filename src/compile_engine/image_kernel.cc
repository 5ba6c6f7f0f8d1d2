// Native CPU kernels for single-op image / pad / fill groups; see image_kernel.h for the groups
// taken and the semantics kept.
//
// Phases:
//   match   image_match::MatchImageGroup (shared with the cuda device's nvrtc.image, so both
//           take the same groups): one call node, every operand a parameter, its result
//           returned; dtypes, ranks and attributes in the supported set.
//   run     image_match's checks (argument count, dtypes, ranks, run-time values read from the
//           arguments, the result's shape against what the inputs and values give); the fill
//           value read; then the op's loop.
//
// Known gaps: f16 / f64 data, resize's cubic method, pad's edge / reflect modes, fills of
// non-f32 dtypes (all fall back to the reference kernel); a single thread.
#include "compile_engine/image_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/image_match.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/image_sampling.h"

namespace hetpass {
namespace {

using image_match::ImageGroup;
using image_match::IntAt;
using image_match::Invalid;
using image_match::OpKind;

// ---- image.roi_align ------------------------------------------------------------------------

// One channel plane of one roi in max mode: `per_bin` samples per bin, each the max of its
// four weighted corners (as the reference).
void RoiBinsMax(const float* plane, const RoiSample* samples, int64_t bins, int64_t per_bin,
                float* out) {
  for (int64_t bin = 0; bin < bins; ++bin) {
    const RoiSample* s = samples + bin * per_bin;
    double acc = 0.0;
    for (int64_t k = 0; k < per_bin; ++k) {
      double v[4];
      for (int j = 0; j < 4; ++j) v[j] = s[k].w[j] * static_cast<double>(plane[s[k].pos[j]]);
      const double m = std::max({v[0], v[1], v[2], v[3]});
      acc = k == 0 ? m : std::max(acc, m);
    }
    out[bin] = static_cast<float>(acc);
  }
}

// avg mode. A sample's four corner weights are products of a row weight (hy or ly; the
// sample drops out when y is outside the image) and a column weight (likewise), so a bin's sum
// of weighted corners is sum over pixels (r, c) of Wy[r] * Wx[c] * pixel(r, c), where Wy (Wx)
// adds up the row (column) weights of the bin's samples over a dense row (column) range. Each
// bin becomes a short list of (pixel, weight) taps, computed once per roi (maskrcnn_tiny's
// sub-pixel bins with sampling_ratio 2: ~4-9 taps instead of 16 corner reads). The same
// products are summed in another order: within ~1e-15 relative of the reference before the
// rounding to f32 (a NaN or infinite pixel under a zero weight is the one difference: the
// reference gives NaN there).
struct AxisWeights {
  int64_t begin = 0;      // first row (column) of the range
  std::vector<double> w;  // weights from `begin` on; empty: nothing sampled
};

// The weights of bin `p` along one axis: `grid` samples at RoiSampleCoord, each coordinate
// taken as BilinearRoiSample takes it (SampleRoiAxis).
AxisWeights BinWeights(double start, double bin, int64_t p, int64_t grid, int64_t size) {
  AxisWeights a;
  int64_t lo_all = size, hi_all = -1;
  struct Tap {
    int64_t lo, hi;
    double wlo, whi;
  };
  std::vector<Tap> taps;
  for (int64_t i = 0; i < grid; ++i) {
    const RoiAxisSample s = SampleRoiAxis(RoiSampleCoord(start, bin, p, i, grid), size);
    if (!s.inside) continue;
    taps.push_back({s.lo, s.hi, 1.0 - s.l, s.l});
    lo_all = std::min(lo_all, s.lo);
    hi_all = std::max(hi_all, s.hi);
  }
  if (taps.empty()) return a;
  a.begin = lo_all;
  a.w.assign(hi_all - lo_all + 1, 0.0);
  for (const Tap& t : taps) {
    a.w[t.lo - lo_all] += t.wlo;
    a.w[t.hi - lo_all] += t.whi;
  }
  return a;
}

// The taps of every bin of one roi: bin k's are [start[k], start[k + 1]).
struct RoiTaps {
  std::vector<int64_t> start, pos;  // pos: offset into an H x W plane
  std::vector<double> w;
};

void BuildTaps(const std::vector<AxisWeights>& ys, const std::vector<AxisWeights>& xs,
               int64_t width, RoiTaps& t) {
  t.start.clear();
  t.pos.clear();
  t.w.clear();
  for (const AxisWeights& wy : ys) {
    for (const AxisWeights& wx : xs) {
      t.start.push_back(static_cast<int64_t>(t.pos.size()));
      for (size_t ky = 0; ky < wy.w.size(); ++ky) {
        for (size_t kx = 0; kx < wx.w.size(); ++kx) {
          t.pos.push_back((wy.begin + static_cast<int64_t>(ky)) * width + wx.begin +
                          static_cast<int64_t>(kx));
          t.w.push_back(wy.w[ky] * wx.w[kx]);
        }
      }
    }
  }
  t.start.push_back(static_cast<int64_t>(t.pos.size()));
}

// Compiled twice (AVX2 and the baseline, chosen once by the CPU at load, as in
// reduce_kernel.cc); no FMA contraction either way, so both round alike.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HETPASS_IMAGE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HETPASS_IMAGE_CLONES
#endif

// One roi from NCHW planes: per channel, per bin, a gather over the bin's taps.
void RoiAvgPlanes(const float* image, int64_t channels, int64_t plane, const RoiTaps& t,
                  double count, float* out) {
  const int64_t bins = static_cast<int64_t>(t.start.size()) - 1;
  for (int64_t c = 0; c < channels; ++c) {
    const float* p = image + c * plane;
    for (int64_t bin = 0; bin < bins; ++bin) {
      double acc = 0.0;
      for (int64_t k = t.start[bin]; k < t.start[bin + 1]; ++k) {
        acc += t.w[k] * static_cast<double>(p[t.pos[k]]);
      }
      out[c * bins + bin] = static_cast<float>(acc / count);
    }
  }
}

// One roi from an HWC copy of its image: per bin, every channel at once (contiguous, vectorised).
HETPASS_IMAGE_CLONES void RoiAvgHwc(const float* hwc, int64_t channels, const RoiTaps& t,
                                    double count, double* acc, float* out) {
  const int64_t bins = static_cast<int64_t>(t.start.size()) - 1;
  for (int64_t bin = 0; bin < bins; ++bin) {
    std::fill(acc, acc + channels, 0.0);
    for (int64_t k = t.start[bin]; k < t.start[bin + 1]; ++k) {
      const double w = t.w[k];
      const float* px = hwc + t.pos[k] * channels;
      for (int64_t c = 0; c < channels; ++c) acc[c] += w * static_cast<double>(px[c]);
    }
    for (int64_t c = 0; c < channels; ++c) out[c * bins + bin] = static_cast<float>(acc[c] / count);
  }
}

absl::Status RunRoiAlign(const ImageGroup& g, absl::Span<const TensorArg> args) {
  ASSIGN_OR_RETURN(const image_match::RoiAlignShape shape, image_match::CheckRoiAlign(g, args));
  const TensorArg& data = args[g.param[0]];
  const TensorArg& rois = args[g.param[1]];
  const TensorArg& batch = args[g.param[2]];
  const TensorArg& out = args[g.num_params];
  const int64_t num_rois = shape.num_rois, out_h = shape.out_h, out_w = shape.out_w;
  const int64_t n = shape.n, channels = shape.channels, height = shape.height, width = shape.width;
  if (out.num_elements() == 0) return absl::OkStatus();
  float* y = out.as<float>();
  const int64_t plane = height * width;
  if (plane == 0) {  // no pixel to sample: every bin 0, as the reference
    std::fill(y, y + out.num_elements(), 0.0f);
    return absl::OkStatus();
  }
  const RoiAlignParams params = RoiAlignParamsOf(g.attrs);
  const bool max_mode = params.max_mode;
  const float* x = data.as<const float>();
  const float* r4 = rois.as<const float>();
  std::vector<RoiSample> samples;
  RoiTaps taps;
  // avg mode reads every channel of a tap at once from an HWC copy of the images when the rois
  // touch more pixels than the images hold (the copy costs one pass over them); otherwise it
  // gathers plane by plane.
  std::vector<float> hwc;
  std::vector<double> acc;
  if (!max_mode && channels > 1 && num_rois * out_h * out_w * 4 >= n * plane) {
    hwc.resize(n * plane * channels);
    acc.resize(channels);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < channels; ++c) {
        const float* src = x + (i * channels + c) * plane;
        float* dst = hwc.data() + i * plane * channels + c;
        for (int64_t k = 0; k < plane; ++k) dst[k * channels] = src[k];
      }
    }
  }
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = IntAt(batch, r);
    if (b < 0 || b >= n) {
      return Invalid(
          g, absl::StrFormat("batch index %d of roi %d is outside the batch of %d", b, r, n));
    }
    const double box[4] = {r4[r * 4 + 0], r4[r * 4 + 1], r4[r * 4 + 2], r4[r * 4 + 3]};
    const RoiGrid grid = MakeRoiGrid(box, params);
    const int64_t gh = grid.grid_h, gw = grid.grid_w;
    const int64_t bins = out_h * out_w;
    if (!max_mode) {
      std::vector<AxisWeights> ys, xs;
      for (int64_t ph = 0; ph < out_h; ++ph) {
        ys.push_back(BinWeights(grid.start_h, grid.bin_h, ph, gh, height));
      }
      for (int64_t pw = 0; pw < out_w; ++pw) {
        xs.push_back(BinWeights(grid.start_w, grid.bin_w, pw, gw, width));
      }
      BuildTaps(ys, xs, width, taps);
      float* o = y + r * channels * bins;
      if (hwc.empty()) {
        RoiAvgPlanes(x + b * channels * plane, channels, plane, taps, grid.count, o);
      } else {
        RoiAvgHwc(hwc.data() + b * plane * channels, channels, taps, grid.count, acc.data(), o);
      }
      continue;
    }
    samples.clear();
    for (int64_t ph = 0; ph < out_h; ++ph) {
      for (int64_t pw = 0; pw < out_w; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = RoiSampleCoord(grid.start_h, grid.bin_h, ph, iy, gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            const double xx = RoiSampleCoord(grid.start_w, grid.bin_w, pw, ix, gw);
            samples.push_back(BilinearRoiSample(yy, xx, height, width));
          }
        }
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      RoiBinsMax(x + (b * channels + c) * plane, samples.data(), bins, gh * gw,
                 y + (r * channels + c) * bins);
    }
  }
  return absl::OkStatus();
}

// ---- image.resize2d / dyn.image.resize2d ----------------------------------------------------

// (a, b, c, d) blended in double as the reference blends them, rounded to f32.
inline float Blend(float a, float b, float c, float d, const ResizeTap& y, const ResizeTap& x) {
  return static_cast<float>(ResizeBlend(a, b, c, d, y, x));
}

absl::Status RunResize(const ImageGroup& g, absl::Span<const TensorArg> args) {
  ASSIGN_OR_RETURN(const image_match::ResizeShape shape, image_match::CheckResize(g, args));
  const TensorArg& data = args[g.param[0]];
  const TensorArg& out = args[g.num_params];
  if (out.num_elements() == 0) return absl::OkStatus();
  const bool nchw = shape.nchw;
  const int64_t n = shape.n, channels = shape.channels, in_h = shape.in_h, in_w = shape.in_w;
  const int64_t oh = shape.out_h, ow = shape.out_w;
  const std::vector<ResizeTap> ty = ResizeAxisTaps(in_h, oh, g.attrs);
  const std::vector<ResizeTap> tx = ResizeAxisTaps(in_w, ow, g.attrs);
  const float* x = data.as<const float>();
  float* y = out.as<float>();
  if (nchw) {
    for (int64_t p = 0; p < n * channels; ++p) {
      const float* src = x + p * in_h * in_w;
      float* dst = y + p * oh * ow;
      for (int64_t r = 0; r < oh; ++r) {
        const ResizeTap& t = ty[r];
        const float* lo = src + t.lo * in_w;
        const float* hi = src + t.hi * in_w;
        float* row = dst + r * ow;
        for (int64_t c = 0; c < ow; ++c) {
          const ResizeTap& s = tx[c];
          row[c] = Blend(lo[s.lo], lo[s.hi], hi[s.lo], hi[s.hi], t, s);
        }
      }
    }
  } else {
    for (int64_t b = 0; b < n; ++b) {
      const float* src = x + b * in_h * in_w * channels;
      for (int64_t r = 0; r < oh; ++r) {
        const ResizeTap& t = ty[r];
        for (int64_t c = 0; c < ow; ++c) {
          const ResizeTap& s = tx[c];
          const float* a = src + (t.lo * in_w + s.lo) * channels;
          const float* bb = src + (t.lo * in_w + s.hi) * channels;
          const float* cc = src + (t.hi * in_w + s.lo) * channels;
          const float* d = src + (t.hi * in_w + s.hi) * channels;
          float* dst = y + ((b * oh + r) * ow + c) * channels;
          for (int64_t k = 0; k < channels; ++k) dst[k] = Blend(a[k], bb[k], cc[k], d[k], t, s);
        }
      }
    }
  }
  return absl::OkStatus();
}

// ---- nn.pad / dyn.nn.pad (constant) ---------------------------------------------------------

// Writes the padded block of axis `axis` onward: `src` the input block (nullptr: all fill).
void PadAxis(const float* src, float* dst, int axis, absl::Span<const int64_t> in_shape,
             absl::Span<const int64_t> out_shape, const std::vector<int64_t>& pads,
             const std::vector<int64_t>& in_stride, const std::vector<int64_t>& out_stride,
             float fill) {
  const int64_t len = out_shape[axis];
  const int64_t before = pads[2 * axis], d = in_shape[axis];
  // Output coordinates [lo, hi) read the input at o - before.
  const int64_t lo = std::clamp<int64_t>(before, 0, len);
  const int64_t hi = std::clamp<int64_t>(before + d, lo, len);
  if (src == nullptr || axis + 1 == static_cast<int>(out_shape.size())) {
    const int64_t stride = out_stride[axis];
    if (src == nullptr || hi == lo) {
      std::fill(dst, dst + len * stride, fill);
      return;
    }
    std::fill(dst, dst + lo, fill);
    std::memcpy(dst + lo, src + (lo - before), (hi - lo) * sizeof(float));
    std::fill(dst + hi, dst + len, fill);
    return;
  }
  const int64_t os = out_stride[axis];
  std::fill(dst, dst + lo * os, fill);
  for (int64_t o = lo; o < hi; ++o) {
    PadAxis(src + (o - before) * in_stride[axis], dst + o * os, axis + 1, in_shape, out_shape, pads,
            in_stride, out_stride, fill);
  }
  std::fill(dst + hi * os, dst + len * os, fill);
}

absl::Status RunPad(const ImageGroup& g, absl::Span<const TensorArg> args) {
  ASSIGN_OR_RETURN(const image_match::PadShape shape, image_match::CheckPad(g, args));
  const TensorArg& data = args[g.param[0]];
  const TensorArg& out = args[g.num_params];
  const std::vector<int64_t>& pads = shape.pads;
  const std::vector<int64_t>& want = shape.out_shape;
  const double fill = g.kind == OpKind::kDynPad ? image_match::ScalarAt(args[g.param[2]])
                                                : g.attrs.GetFloat("pad_value");
  if (out.num_elements() == 0) return absl::OkStatus();
  float* y = out.as<float>();
  if (g.rank == 0) {
    *y = *data.as<const float>();
    return absl::OkStatus();
  }
  std::vector<int64_t> in_stride(g.rank, 1), out_stride(g.rank, 1);
  for (int a = g.rank - 2; a >= 0; --a) {
    in_stride[a] = in_stride[a + 1] * data.shape[a + 1];
    out_stride[a] = out_stride[a + 1] * want[a + 1];
  }
  const float* x = data.num_elements() > 0 ? data.as<const float>() : nullptr;
  PadAxis(x, y, 0, data.shape, out.shape, pads, in_stride, out_stride, static_cast<float>(fill));
  return absl::OkStatus();
}

// ---- dyn.zeros / dyn.ones / dyn.full --------------------------------------------------------

absl::Status RunFill(const ImageGroup& g, absl::Span<const TensorArg> args) {
  RETURN_IF_ERROR(image_match::CheckFill(g, args).status());
  const TensorArg& out = args[g.num_params];
  double value = g.kind == OpKind::kOnes ? 1.0 : 0.0;
  if (g.kind == OpKind::kFull) value = image_match::ScalarAt(args[g.param[0]]);
  float* y = out.as<float>();
  std::fill(y, y + out.num_elements(), static_cast<float>(value));
  return absl::OkStatus();
}

// ---- kernels --------------------------------------------------------------------------------

class ImageInstance final : public KernelInstance {
 public:
  explicit ImageInstance(const ImageGroup& group) : group_(group) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const ImageGroup& g = group_;
    RETURN_IF_ERROR(image_match::CheckCount(g, args));
    switch (g.kind) {
      case OpKind::kRoiAlign:
        return RunRoiAlign(g, args);
      case OpKind::kResize:
      case OpKind::kDynResize:
        return RunResize(g, args);
      case OpKind::kPad:
      case OpKind::kDynPad:
        return RunPad(g, args);
      case OpKind::kZeros:
      case OpKind::kOnes:
      case OpKind::kFull:
        return RunFill(g, args);
    }
    return absl::InternalError("unknown op kind");
  }

 private:
  const ImageGroup& group_;
};

class ImageKernel final : public CompiledKernel {
 public:
  explicit ImageKernel(ImageGroup group) : group_(std::move(group)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<ImageInstance>(group_));
  }
  std::string Describe() const override { return "native " + image_match::OpLabel(group_); }

 private:
  const ImageGroup group_;
};

}  // namespace

bool IsImageOrFillGroup(const Function& primitive) {
  return image_match::MatchImageGroup(primitive).has_value();
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileImageOrFillGroup(const Function& primitive) {
  if (std::optional<ImageGroup> g = image_match::MatchImageGroup(primitive)) {
    return std::unique_ptr<CompiledKernel>(std::make_unique<ImageKernel>(*std::move(g)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "@%s: not a single f32 roi_align, resize2d (nearest / linear), constant pad or fill group",
      primitive.name()));
}


const KernelProvider& ImageKernelProvider() {
  static const GroupProvider provider({"native.image", kNeedsKernelLibrary, nullptr,
                                       &CompileImageOrFillGroup, &image_match::ImageRuns, nullptr});
  return provider;
}

}  // namespace hetpass
