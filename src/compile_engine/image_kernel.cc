// Native CPU kernels for single-op image / pad / fill groups; see image_kernel.h for the groups
// taken and the semantics kept.
//
// Phases:
//   match   MatchGroup: one call node, every operand a parameter, its result returned; the op
//           one of kOps; dtypes, ranks and attributes (with the registry's defaults, via
//           CheckAttrs) in the supported set. Op identity is this file's business, as
//           reduce_kernel.cc binds reductions to loops.
//   run     argument count, dtypes and ranks checked; run-time values (sizes, pads, shapes,
//           fill values) read from the arguments; the result's shape checked against what
//           the inputs and values give; then the op's loop.
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
#include "absl/strings/str_join.h"
#include "compile_engine/group_provider.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/image_sampling.h"

namespace hetpass {
namespace {

// ---- ops this file binds --------------------------------------------------------------------

enum class OpKind { kRoiAlign, kResize, kDynResize, kPad, kDynPad, kZeros, kOnes, kFull };

struct OpEntry {
  OpId id;
  OpKind kind;
  int arity;
};
constexpr OpEntry kOps[] = {
    {OpId::kImageRoiAlign, OpKind::kRoiAlign, 3},
    {OpId::kImageResize2d, OpKind::kResize, 1},
    {OpId::kDynImageResize2d, OpKind::kDynResize, 2},
    {OpId::kNnPad, OpKind::kPad, 1},
    {OpId::kDynNnPad, OpKind::kDynPad, 3},
    {OpId::kDynZeros, OpKind::kZeros, 1},
    {OpId::kDynOnes, OpKind::kOnes, 1},
    {OpId::kDynFull, OpKind::kFull, 2},
};

// ---- match ----------------------------------------------------------------------------------

struct Group {
  std::string function;  // "@name"
  int num_params = 0;
  OpKind kind = OpKind::kZeros;
  std::vector<int> param;                  // per operand: its parameter index
  std::vector<std::string> operand_names;  // per operand: "role (%param)"
  Attrs attrs;                             // with the registry's defaults
  int rank = 0;                            // data rank (pad), result rank (fills)
  std::string describe;
};

bool IsF32(const Type& t) { return t.is_tensor() && t.dtype() == DType::kF32; }
bool IsIntTensor(const Type& t) { return t.is_tensor() && IsInteger(t.dtype()); }
// A dtype whose scalar ScalarAt reads.
bool IsReadableScalar(const Type& t) {
  return t.is_tensor() && t.rank() == 0 &&
         (IsInteger(t.dtype()) || t.dtype() == DType::kF32 || t.dtype() == DType::kF64);
}

bool AttrsSupported(const Group& g) {
  const Attrs& a = g.attrs;
  switch (g.kind) {
    case OpKind::kRoiAlign: {
      const std::string& mode = a.GetString("mode");
      const std::string& ctm = a.GetString("coordinate_transformation_mode");
      return (mode == "avg" || mode == "max") &&
             (ctm == "half_pixel" || ctm == "output_half_pixel") && a.GetInt("output_height") > 0 &&
             a.GetInt("output_width") > 0 && a.GetInt("sampling_ratio") >= 0;
    }
    case OpKind::kResize:
    case OpKind::kDynResize: {
      const std::string& layout = a.GetString("layout");
      const std::string& method = a.GetString("method");
      const std::string& ctm = a.GetString("coordinate_transformation_mode");
      const std::string& r = a.GetString("rounding_method");
      return (layout == "NCHW" || layout == "NHWC") &&
             (method == "linear" || method == "nearest_neighbor") &&
             (ctm == "half_pixel" || ctm == "align_corners" || ctm == "asymmetric" ||
              ctm == "pytorch_half_pixel" || ctm == "tf_half_pixel_for_nn") &&
             (r.empty() || r == "round" || r == "floor" || r == "ceil" ||
              r == "round_prefer_floor" || r == "round_prefer_ceil") &&
             (g.kind == OpKind::kDynResize || a.GetIntList("size").size() == 2);
    }
    case OpKind::kPad:
      return a.GetString("pad_mode") == "constant" &&
             static_cast<int>(a.GetIntList("pad_width").size()) == 2 * g.rank;
    case OpKind::kDynPad:
      return a.GetString("pad_mode") == "constant";
    case OpKind::kZeros:
    case OpKind::kOnes:
    case OpKind::kFull:
      return a.GetDType("dtype") == DType::kF32;
  }
  return false;
}

// Operand roles for messages and the types each op takes.
bool OperandsSupported(Group& g, const Node& n) {
  auto type = [&](int i) -> const Type& { return n.operand(i)->type(); };
  std::vector<std::string> roles;
  bool ok = false;
  switch (g.kind) {
    case OpKind::kRoiAlign:
      roles = {"data", "rois", "batch_indices"};
      ok = IsF32(type(0)) && type(0).rank() == 4 && IsF32(type(1)) && type(1).rank() == 2 &&
           IsIntTensor(type(2)) && type(2).rank() == 1;
      break;
    case OpKind::kResize:
      roles = {"data"};
      ok = IsF32(type(0)) && type(0).rank() == 4;
      break;
    case OpKind::kDynResize:
      roles = {"data", "size"};
      ok = IsF32(type(0)) && type(0).rank() == 4 && IsIntTensor(type(1)) && type(1).rank() == 1;
      break;
    case OpKind::kPad:
      roles = {"data"};
      ok = IsF32(type(0));
      g.rank = ok ? type(0).rank() : 0;
      break;
    case OpKind::kDynPad:
      roles = {"data", "pad_width", "pad_value"};
      ok = IsF32(type(0)) && IsIntTensor(type(1)) && type(1).rank() == 1 &&
           IsReadableScalar(type(2));
      g.rank = ok ? type(0).rank() : 0;
      break;
    case OpKind::kZeros:
    case OpKind::kOnes:
      roles = {"shape"};
      ok = IsIntTensor(type(0)) && type(0).rank() == 1;
      break;
    case OpKind::kFull:
      roles = {"fill_value", "shape"};
      ok = IsReadableScalar(type(0)) && IsIntTensor(type(1)) && type(1).rank() == 1;
      break;
  }
  for (size_t i = 0; i < roles.size(); ++i) {
    g.operand_names.push_back(absl::StrFormat(
        "%s (%%%s)", roles[i], n.operand(i)->param_block()->param(g.param[i])->name()));
  }
  return ok;
}

std::optional<Group> MatchGroup(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  if (n.kind() != NodeKind::kCall || n.num_results() != 1 || n.op() == nullptr ||
      body.results()[0] != n.result()) {
    return std::nullopt;
  }
  const OpDef* op = n.op();
  const auto* e = std::find_if(std::begin(kOps), std::end(kOps),
                               [&](const OpEntry& o) { return o.id == OpIdOf(*op); });
  if (e == std::end(kOps) || n.num_operands() != e->arity) return std::nullopt;
  Group g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  g.kind = e->kind;
  for (const Value* v : n.operands()) {
    if (!v->is_param() || v->param_block() != &body) return std::nullopt;
    g.param.push_back(v->index());
  }
  // The result's dtype is the data's (fills: the dtype attribute), checked below; the
  // result type itself may not be inferred yet.
  if (!OperandsSupported(g, n)) return std::nullopt;
  absl::StatusOr<Attrs> attrs = op->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  g.attrs = *std::move(attrs);
  if (!AttrsSupported(g)) return std::nullopt;
  switch (g.kind) {
    case OpKind::kRoiAlign:
      g.describe = "native roi_align";
      break;
    case OpKind::kResize:
    case OpKind::kDynResize:
      g.describe = absl::StrFormat("native resize2d[%s]", g.attrs.GetString("method"));
      break;
    case OpKind::kPad:
    case OpKind::kDynPad:
      g.describe = "native pad";
      break;
    default:
      g.describe = "native fill";
  }
  return g;
}

// ---- argument checks and run-time values ----------------------------------------------------

std::string ShapeStr(absl::Span<const int64_t> shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ", "));
}

absl::Status Invalid(const Group& g, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", g.function, what));
}

absl::Status CheckCount(const Group& g, absl::Span<const TensorArg> args) {
  if (static_cast<int>(args.size()) == g.num_params + 1) return absl::OkStatus();
  return Invalid(g, absl::StrFormat("expected %d arguments (%d parameters, 1 result), got %d",
                                    g.num_params + 1, g.num_params, args.size()));
}

absl::Status CheckData(const Group& g, const TensorArg& t, const std::string& name) {
  for (int64_t d : t.shape) {
    if (d < 0)
      return Invalid(g, absl::StrFormat("%s has a negative dim: %s", name, ShapeStr(t.shape)));
  }
  if (t.data == nullptr && t.num_elements() > 0) {
    return Invalid(g, absl::StrFormat("%s has no data", name));
  }
  return absl::OkStatus();
}

// An f32 tensor of `rank` (rank < 0: any rank) with data.
absl::Status CheckF32(const Group& g, const TensorArg& t, const std::string& name, int rank) {
  if (t.dtype != DType::kF32 || (rank >= 0 && static_cast<int>(t.shape.size()) != rank)) {
    return Invalid(g, absl::StrFormat("%s must be an f32 tensor of rank %d, got %s%s", name, rank,
                                      DTypeName(t.dtype), ShapeStr(t.shape)));
  }
  return CheckData(g, t, name);
}

// A 1-D integer tensor of `len` values (len < 0: any).
absl::Status CheckInts(const Group& g, const TensorArg& t, const std::string& name, int64_t len) {
  if (!IsInteger(t.dtype) || t.shape.size() != 1 || (len >= 0 && t.shape[0] != len)) {
    const std::string want =
        len >= 0 ? absl::StrFormat("%d integers", len) : std::string("a 1-D integer tensor");
    return Invalid(g, absl::StrFormat("%s must be %s, got %s%s", name, want, DTypeName(t.dtype),
                                      ShapeStr(t.shape)));
  }
  return CheckData(g, t, name);
}

absl::Status CheckScalar(const Group& g, const TensorArg& t, const std::string& name) {
  if (!t.shape.empty() || t.data == nullptr ||
      !(IsInteger(t.dtype) || t.dtype == DType::kF32 || t.dtype == DType::kF64)) {
    return Invalid(g, absl::StrFormat("%s must be a scalar, got %s%s", name, DTypeName(t.dtype),
                                      ShapeStr(t.shape)));
  }
  return absl::OkStatus();
}

absl::Status CheckResult(const Group& g, const TensorArg& out, absl::Span<const int64_t> want) {
  if (out.dtype == DType::kF32 &&
      std::equal(want.begin(), want.end(), out.shape.begin(), out.shape.end()) &&
      (out.data != nullptr || out.num_elements() == 0)) {
    return absl::OkStatus();
  }
  return Invalid(g, absl::StrFormat("result must be f32%s, got %s%s", ShapeStr(want),
                                    DTypeName(out.dtype), ShapeStr(out.shape)));
}

// Element i of an integer tensor (dtype checked by the caller).
int64_t IntAt(const TensorArg& t, int64_t i) {
  switch (t.dtype) {
    case DType::kI8:
      return t.as<const int8_t>()[i];
    case DType::kI32:
      return t.as<const int32_t>()[i];
    case DType::kI64:
      return t.as<const int64_t>()[i];
    case DType::kU8:
      return t.as<const uint8_t>()[i];
    default:
      return 0;
  }
}

std::vector<int64_t> Ints(const TensorArg& t) {
  std::vector<int64_t> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = IntAt(t, static_cast<int64_t>(i));
  return v;
}

// A scalar read as double, as Tensor::GetDouble (dtype checked by CheckScalar).
double ScalarAt(const TensorArg& t) {
  switch (t.dtype) {
    case DType::kF32:
      return *t.as<const float>();
    case DType::kF64:
      return *t.as<const double>();
    default:
      return static_cast<double>(IntAt(t, 0));
  }
}

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

absl::Status RunRoiAlign(const Group& g, absl::Span<const TensorArg> args) {
  const TensorArg& data = args[g.param[0]];
  const TensorArg& rois = args[g.param[1]];
  const TensorArg& batch = args[g.param[2]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckF32(g, data, g.operand_names[0], 4));
  RETURN_IF_ERROR(CheckF32(g, rois, g.operand_names[1], 2));
  if (rois.shape[1] != 4) {
    return Invalid(
        g, absl::StrFormat("%s must be [R, 4], got %s", g.operand_names[1], ShapeStr(rois.shape)));
  }
  const int64_t num_rois = rois.shape[0];
  RETURN_IF_ERROR(CheckInts(g, batch, g.operand_names[2], num_rois));
  const Attrs& a = g.attrs;
  const int64_t out_h = a.GetInt("output_height"), out_w = a.GetInt("output_width");
  const int64_t n = data.shape[0], channels = data.shape[1];
  const int64_t height = data.shape[2], width = data.shape[3];
  const int64_t want[4] = {num_rois, channels, out_h, out_w};
  RETURN_IF_ERROR(CheckResult(g, out, want));
  if (out.num_elements() == 0) return absl::OkStatus();
  float* y = out.as<float>();
  const int64_t plane = height * width;
  if (plane == 0) {  // no pixel to sample: every bin 0, as the reference
    std::fill(y, y + out.num_elements(), 0.0f);
    return absl::OkStatus();
  }
  const RoiAlignParams params = RoiAlignParamsOf(a);
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

absl::Status RunResize(const Group& g, absl::Span<const TensorArg> args) {
  const TensorArg& data = args[g.param[0]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckF32(g, data, g.operand_names[0], 4));
  int64_t size[2];
  if (g.kind == OpKind::kDynResize) {
    const TensorArg& s = args[g.param[1]];
    RETURN_IF_ERROR(CheckInts(g, s, g.operand_names[1], 2));
    size[0] = IntAt(s, 0), size[1] = IntAt(s, 1);
  } else {
    size[0] = g.attrs.GetIntList("size")[0], size[1] = g.attrs.GetIntList("size")[1];
  }
  if (size[0] <= 0 || size[1] <= 0) {
    return Invalid(g, absl::StrFormat("size must be positive, got [%d, %d]", size[0], size[1]));
  }
  const bool nchw = g.attrs.GetString("layout") == "NCHW";
  const auto& xs = data.shape;
  const int64_t n = xs[0], channels = nchw ? xs[1] : xs[3];
  const int64_t in_h = nchw ? xs[2] : xs[1], in_w = nchw ? xs[3] : xs[2];
  const int64_t oh = size[0], ow = size[1];
  const std::vector<int64_t> want =
      nchw ? std::vector<int64_t>{n, channels, oh, ow} : std::vector<int64_t>{n, oh, ow, channels};
  RETURN_IF_ERROR(CheckResult(g, out, want));
  if (out.num_elements() == 0) return absl::OkStatus();
  if (in_h == 0 || in_w == 0) {
    return Invalid(
        g, absl::StrFormat("%s has an empty image %s to resize", g.operand_names[0], ShapeStr(xs)));
  }
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

absl::Status RunPad(const Group& g, absl::Span<const TensorArg> args) {
  const TensorArg& data = args[g.param[0]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckF32(g, data, g.operand_names[0], g.rank));
  std::vector<int64_t> pads;
  double fill;
  if (g.kind == OpKind::kDynPad) {
    RETURN_IF_ERROR(CheckInts(g, args[g.param[1]], g.operand_names[1], 2 * g.rank));
    RETURN_IF_ERROR(CheckScalar(g, args[g.param[2]], g.operand_names[2]));
    pads = Ints(args[g.param[1]]);
    fill = ScalarAt(args[g.param[2]]);
  } else {
    pads = g.attrs.GetIntList("pad_width");
    fill = g.attrs.GetFloat("pad_value");
  }
  std::vector<int64_t> want;
  for (int a = 0; a < g.rank; ++a) {
    want.push_back(data.shape[a] + pads[2 * a] + pads[2 * a + 1]);
    if (want.back() < 0) {
      return Invalid(g, absl::StrFormat("axis %d would have negative size %d", a, want.back()));
    }
  }
  RETURN_IF_ERROR(CheckResult(g, out, want));
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

absl::Status RunFill(const Group& g, absl::Span<const TensorArg> args) {
  const int shape_operand = g.kind == OpKind::kFull ? 1 : 0;
  const TensorArg& s = args[g.param[shape_operand]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckInts(g, s, g.operand_names[shape_operand], -1));
  double value = g.kind == OpKind::kOnes ? 1.0 : 0.0;
  if (g.kind == OpKind::kFull) {
    RETURN_IF_ERROR(CheckScalar(g, args[g.param[0]], g.operand_names[0]));
    value = ScalarAt(args[g.param[0]]);
  }
  const std::vector<int64_t> want = Ints(s);
  for (int64_t d : want) {
    if (d < 0) return Invalid(g, absl::StrFormat("shape value %d is negative", d));
  }
  RETURN_IF_ERROR(CheckResult(g, out, want));
  float* y = out.as<float>();
  std::fill(y, y + out.num_elements(), static_cast<float>(value));
  return absl::OkStatus();
}

// ---- kernels --------------------------------------------------------------------------------

class ImageInstance final : public KernelInstance {
 public:
  explicit ImageInstance(const Group& group) : group_(group) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const Group& g = group_;
    RETURN_IF_ERROR(CheckCount(g, args));
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
  const Group& group_;
};

class ImageKernel final : public CompiledKernel {
 public:
  explicit ImageKernel(Group group) : group_(std::move(group)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<ImageInstance>(group_));
  }
  std::string Describe() const override { return group_.describe; }

 private:
  const Group group_;
};

}  // namespace

bool IsImageOrFillGroup(const Function& primitive) { return MatchGroup(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileImageOrFillGroup(const Function& primitive) {
  if (std::optional<Group> g = MatchGroup(primitive)) {
    return std::unique_ptr<CompiledKernel>(std::make_unique<ImageKernel>(*std::move(g)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "@%s: not a single f32 roi_align, resize2d (nearest / linear), constant pad or fill group",
      primitive.name()));
}


namespace {
bool ImageRuns(const OpDef& op) {
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const OpEntry& e) { return e.id == OpIdOf(op); });
}
}  // namespace

const KernelProvider& ImageKernelProvider() {
  static const GroupProvider provider({"native.image", kNeedsKernelLibrary, nullptr,
                                       &CompileImageOrFillGroup, &ImageRuns, nullptr});
  return provider;
}

}  // namespace hetpass
