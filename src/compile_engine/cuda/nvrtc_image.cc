// NVRTC kernels for the single-op roi_align, resize2d, pad and fill groups (see nvrtc_image.h).
//
// Compile: image_match::MatchImageGroup (the host's matcher, so both devices take the same
// groups); the op picks one fixed kernel text, roi_align's batch index type its `IT`; NVRTC
// compiles it once per source (cached). Run: the value operands are checked to be host memory,
// then image_match's argument checks (reading those values), then one launch whose parameter
// is one struct of 8-byte fields (pointers, long long, double), so host and device agree on its
// layout. The sampling arithmetic is image_sampling.cc's, transcribed expression by expression
// (same operations in the same order, in double, --fmad=false): that is what makes the results
// bit-identical to the reference.
#include "compile_engine/cuda/nvrtc_image.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compile_engine/cuda/nvrtc_listing.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/image_match.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/image_sampling.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nvrtc.h"
#endif

namespace hetpass::cuda {
namespace {

using image_match::ImageGroup;
using image_match::OpKind;

constexpr int kMaxRank = 8;
constexpr uint32_t kBlock = 256;
constexpr int64_t kBlocksPerMultiprocessor = 32;

// Codes of the fill value's dtype, read on the GPU by scalar_at (kPrelude).
enum ScalarCode : int64_t { kF32 = 0, kF64 = 1, kI8 = 2, kI32 = 3, kI64 = 4, kU8 = 5, kBool = 6, kF16 = 7, kBF16 = 8 };
// coordinate_transformation_mode and rounding_method codes (kResize).
enum CoordMode : int64_t { kHalfPixel = 0, kAlignCorners, kAsymmetric, kPytorchHalfPixel, kTfHalfPixelForNn };
enum Rounding : int64_t { kRound = 0, kFloor, kCeil, kRoundPreferFloor, kRoundPreferCeil };

// Shared by every kernel: the error flag, the grid-stride loop, the scalar read.
constexpr char kPrelude[] = R"CUDA(
#define FLAG_BATCH 16u
#define GRID_STRIDE(i, n) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)
// A scalar of dtype code `code` (f32, f64, i8, i32, i64, u8) as double, as Tensor::GetDouble.
__device__ double scalar_at(const void* p, long long code) {
  switch (code) {
    case 0: return (double)*(const float*)p;
    case 1: return *(const double*)p;
    case 2: return (double)*(const signed char*)p;
    case 3: return (double)*(const int*)p;
    case 4: return (double)*(const long long*)p;
    default: return (double)*(const unsigned char*)p;
  }
}
)CUDA";

// image.roi_align: MakeRoiGrid, RoiSampleCoord, SampleRoiAxis and BilinearRoiSample of
// image_sampling.cc, and the reference kernel's accumulation (std::max as `a < b ? b : a`).
constexpr char kRoiAlign[] = R"CUDA(
struct RoiP {
  const float* x;
  const float* rois;
  const IT* batch;
  float* y;
  long long n, channels, height, width, out_h, out_w, sampling_ratio, half_pixel, max_mode, total;
  double spatial_scale;
  unsigned int* err;
};
struct AxisSample {
  bool inside;
  long long lo, hi;
  double l;
};
__device__ AxisSample sample_axis(double y, long long size) {
  AxisSample s;
  s.inside = false, s.lo = 0, s.hi = 0, s.l = 0.0;
  if (y < -1.0 || y > (double)size) return s;
  s.inside = true;
  y = y < 0.0 ? 0.0 : y;
  s.lo = (long long)y;
  if (s.lo >= size - 1) {
    s.hi = s.lo = size - 1;
    y = (double)s.lo;
  } else {
    s.hi = s.lo + 1;
  }
  s.l = y - (double)s.lo;
  return s;
}
extern "C" __global__ void roi_align_kernel(RoiP p) {
  GRID_STRIDE(i, p.total) {
    const long long pw = i % p.out_w;
    long long t = i / p.out_w;
    const long long ph = t % p.out_h;
    t /= p.out_h;
    const long long c = t % p.channels, r = t / p.channels;
    const long long b = (long long)p.batch[r];
    if (b < 0 || b >= p.n) {
      atomicOr(p.err, FLAG_BATCH);
      p.y[i] = 0.0f;
      continue;
    }
    const double box[4] = {(double)p.rois[r * 4], (double)p.rois[r * 4 + 1], (double)p.rois[r * 4 + 2],
                           (double)p.rois[r * 4 + 3]};
    const double scale = p.spatial_scale, offset = p.half_pixel ? 0.5 : 0.0;
    const double start_w = box[0] * scale - offset;
    const double start_h = box[1] * scale - offset;
    double roi_w = box[2] * scale - offset - start_w;
    double roi_h = box[3] * scale - offset - start_h;
    if (!p.half_pixel) {
      roi_w = roi_w < 1.0 ? 1.0 : roi_w;
      roi_h = roi_h < 1.0 ? 1.0 : roi_h;
    }
    const double bin_h = roi_h / (double)p.out_h, bin_w = roi_w / (double)p.out_w;
    const long long gh0 = p.sampling_ratio > 0 ? p.sampling_ratio : (long long)ceil(bin_h);
    const long long gw0 = p.sampling_ratio > 0 ? p.sampling_ratio : (long long)ceil(bin_w);
    const long long gh = gh0 < 0 ? 0 : gh0, gw = gw0 < 0 ? 0 : gw0;
    const long long cells = gh0 * gw0;
    const double count = (double)(cells < 1 ? 1 : cells);
    const float* plane = p.x + (b * p.channels + c) * p.height * p.width;
    double acc = 0.0;
    for (long long iy = 0; iy < gh; ++iy) {
      const double yy = start_h + ph * bin_h + (iy + 0.5) * bin_h / (double)gh;
      const AxisSample sy = sample_axis(yy, p.height);
      for (long long ix = 0; ix < gw; ++ix) {
        const double xx = start_w + pw * bin_w + (ix + 0.5) * bin_w / (double)gw;
        const AxisSample sx = sample_axis(xx, p.width);
        long long pos[4] = {0, 0, 0, 0};
        double w[4] = {0.0, 0.0, 0.0, 0.0};
        if (sy.inside && sx.inside) {
          const double ly = sy.l, lx = sx.l;
          const double hy = 1.0 - ly, hx = 1.0 - lx;
          pos[0] = sy.lo * p.width + sx.lo;
          pos[1] = sy.lo * p.width + sx.hi;
          pos[2] = sy.hi * p.width + sx.lo;
          pos[3] = sy.hi * p.width + sx.hi;
          w[0] = hy * hx;
          w[1] = hy * lx;
          w[2] = ly * hx;
          w[3] = ly * lx;
        }
        double v[4];
        for (int j = 0; j < 4; ++j) v[j] = w[j] * (double)plane[pos[j]];
        if (p.max_mode) {
          double m = v[0];
          for (int j = 1; j < 4; ++j) m = m < v[j] ? v[j] : m;
          acc = iy == 0 && ix == 0 ? m : (acc < m ? m : acc);
        } else {
          acc += v[0] + v[1] + v[2] + v[3];
        }
      }
    }
    p.y[i] = (float)(p.max_mode ? acc : acc / count);
  }
}
)CUDA";

// image.resize2d: ResizeSourceCoord, ResizeNearest, ClampIndex, ResizeAxisTaps and ResizeBlend
// of image_sampling.h/.cc.
constexpr char kResize[] = R"CUDA(
struct ResizeP {
  const float* x;
  float* y;
  long long n, channels, in_h, in_w, out_h, out_w, nchw, nearest, mode, rounding, total;
};
struct Tap {
  long long lo, hi;
  double w_lo, w_hi;
};
__device__ double source_coord(double x, long long in, long long out, long long mode) {
  const double scale = (double)in / (double)out;
  if (mode == 1) return out > 1 ? x * (double)(in - 1) / (double)(out - 1) : 0.0;  // align_corners
  if (mode == 2) return x * scale;                                                   // asymmetric
  if (mode == 4) return (x + 0.5) * scale;                                           // tf_half_pixel_for_nn
  if (mode == 3 && out == 1) return 0.0;                                             // pytorch_half_pixel
  return (x + 0.5) * scale - 0.5;
}
__device__ long long clamp_index(long long i, long long n) {
  i = i < 0 ? 0 : i;
  return i < n - 1 ? i : n - 1;
}
__device__ Tap axis_tap(long long x, long long in, long long out, const ResizeP& p) {
  const double c = source_coord((double)x, in, out, p.mode);
  Tap t;
  if (p.nearest) {
    double r;
    switch (p.rounding) {
      case 0: r = round(c); break;
      case 3: r = ceil(c - 0.5); break;
      case 4: r = floor(c + 0.5); break;
      case 2: r = ceil(c); break;
      default: r = floor(c);
    }
    t.lo = t.hi = clamp_index((long long)r, in);
    t.w_lo = 1.0, t.w_hi = 0.0;
  } else {
    const double f = floor(c);
    const long long i = (long long)f;
    t.lo = clamp_index(i, in), t.hi = clamp_index(i + 1, in);
    t.w_lo = 1 - (c - f), t.w_hi = c - f;
  }
  return t;
}
extern "C" __global__ void resize_kernel(ResizeP p) {
  GRID_STRIDE(i, p.total) {
    long long ox, oy, t, step;
    const float* src;
    if (p.nchw) {
      ox = i % p.out_w, t = i / p.out_w;
      oy = t % p.out_h, t /= p.out_h;
      src = p.x + t * p.in_h * p.in_w;
      step = 1;
    } else {
      const long long ch = i % p.channels;
      t = i / p.channels;
      ox = t % p.out_w, t /= p.out_w;
      oy = t % p.out_h, t /= p.out_h;
      src = p.x + t * p.in_h * p.in_w * p.channels + ch;
      step = p.channels;
    }
    const Tap ty = axis_tap(oy, p.in_h, p.out_h, p), tx = axis_tap(ox, p.in_w, p.out_w, p);
    const double a = src[(ty.lo * p.in_w + tx.lo) * step], b = src[(ty.lo * p.in_w + tx.hi) * step];
    const double c = src[(ty.hi * p.in_w + tx.lo) * step], d = src[(ty.hi * p.in_w + tx.hi) * step];
    const double top = a * tx.w_lo + b * tx.w_hi;
    const double bottom = c * tx.w_lo + d * tx.w_hi;
    p.y[i] = (float)(top * ty.w_lo + bottom * ty.w_hi);
  }
}
)CUDA";

// nn.pad / dyn.nn.pad, constant mode; the fill read on the GPU when fill_ptr is set.
constexpr char kPad[] = R"CUDA(
struct PadP {
  const float* x;
  float* y;
  long long rank, total;
  long long in_dim[8], out_dim[8], before[8];
  const void* fill_ptr;
  long long fill_code;
  double fill;
};
extern "C" __global__ void pad_constant(PadP p) {
  const float fill = p.fill_ptr ? (float)scalar_at(p.fill_ptr, p.fill_code) : (float)p.fill;
  GRID_STRIDE(i, p.total) {
    long long rest = i, src = 0, stride = 1;
    bool inside = true;
    for (int a = (int)p.rank - 1; a >= 0; --a) {
      const long long o = rest % p.out_dim[a];
      rest /= p.out_dim[a];
      const long long k = o - p.before[a];
      inside = inside && k >= 0 && k < p.in_dim[a];
      src += k * stride;
      stride *= p.in_dim[a];
    }
    p.y[i] = inside ? p.x[src] : fill;
  }
}
)CUDA";

// dyn.zeros / dyn.ones / dyn.full of any dtype. The element's bytes come from the host
// (`bits`, made by Tensor::SetDouble / SetInt64 as the reference's Fill makes them) unless the
// value is device memory: then each thread converts it as Fill does (integer to integer
// exactly, else through double; f16 / bf16 by cvt.rn).
constexpr char kFill[] = R"CUDA(
struct FillP {
  void* y;
  long long total, out_code;  // out_code: scalar_at's codes, 6 bool, 7 f16, 8 bf16
  const void* src;
  long long src_code;
  unsigned long long bits;
};
__device__ long long saturate(double v) {
  if (v != v) return 0;
  return v >= 9.2233720368547758e18 ? 9223372036854775807ll : v <= -9.2233720368547758e18 ? (-9223372036854775807ll - 1) : (long long)v;
}
__device__ unsigned long long convert(const FillP& p) {
  const bool src_int = p.src_code >= 2, out_int = p.out_code >= 2 && p.out_code <= 6;
  const double v = scalar_at(p.src, p.src_code);
  long long i;
  if (src_int && out_int) {
    i = p.src_code == 2 ? *(const signed char*)p.src : p.src_code == 3 ? *(const int*)p.src
      : p.src_code == 4 ? *(const long long*)p.src : *(const unsigned char*)p.src;
  } else {
    i = saturate(v);
  }
  switch (p.out_code) {
    case 0: { const float f = (float)v; return (unsigned long long)__float_as_uint(f); }
    case 1: return (unsigned long long)__double_as_longlong(v);
    case 6: return src_int && out_int ? (i != 0 ? 1ull : 0ull) : (v != 0 ? 1ull : 0ull);
    case 7: { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"((float)v)); return h; }
    case 8: { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"((float)v)); return h; }
    default: return (unsigned long long)i;  // truncated to the element size when stored
  }
}
extern "C" __global__ void fill_values(FillP p) {
  const unsigned long long bits = p.src ? convert(p) : p.bits;
  const long long size = p.out_code == 1 || p.out_code == 4 ? 8 : p.out_code == 0 || p.out_code == 3 ? 4
                       : p.out_code >= 7 ? 2 : 1;
  GRID_STRIDE(i, p.total) {
    if (size == 8) ((unsigned long long*)p.y)[i] = bits;
    else if (size == 4) ((unsigned int*)p.y)[i] = (unsigned int)bits;
    else if (size == 2) ((unsigned short*)p.y)[i] = (unsigned short)bits;
    else ((unsigned char*)p.y)[i] = (unsigned char)bits;
  }
}
)CUDA";

std::optional<int64_t> ScalarCodeOf(DType t) {
  switch (t) {
    case DType::kF32:
      return kF32;
    case DType::kF64:
      return kF64;
    case DType::kI8:
      return kI8;
    case DType::kI32:
      return kI32;
    case DType::kI64:
      return kI64;
    case DType::kU8:
      return kU8;
    case DType::kBool:
      return kBool;
    case DType::kF16:
      return kF16;
    case DType::kBF16:
      return kBF16;
    default:
      return std::nullopt;
  }
}

const char* IndexCType(DType t) {
  switch (t) {
    case DType::kI8:
      return "signed char";
    case DType::kI32:
      return "int";
    case DType::kU8:
      return "unsigned char";
    case DType::kI16:
      return "short";
    case DType::kU16:
      return "unsigned short";
    case DType::kU32:
      return "unsigned int";
    case DType::kU64:
      return "unsigned long long";
    default:
      return "long long";
  }
}

struct Group {
  ImageGroup g;
  const char* entry = nullptr;  // the kernel launched
  std::string source, ptx;
};

std::optional<Group> Match(const Function& f) {
  std::optional<ImageGroup> g = image_match::MatchImageGroup(f, /*any_fill_dtype=*/true);
  if (!g) return std::nullopt;
  if ((g->kind == OpKind::kPad || g->kind == OpKind::kDynPad) && g->rank > kMaxRank) return std::nullopt;
  Group r;
  switch (g->kind) {
    case OpKind::kRoiAlign: {
      const DType index = f.body().param(g->param[2])->type().dtype();
      r.entry = "roi_align_kernel";
      r.source = absl::StrCat("#define IT ", IndexCType(index), "\n", kPrelude, kRoiAlign);
      break;
    }
    case OpKind::kResize:
    case OpKind::kDynResize:
      r.entry = "resize_kernel";
      r.source = absl::StrCat(kPrelude, kResize);
      break;
    case OpKind::kPad:
    case OpKind::kDynPad:
      r.entry = "pad_constant";
      r.source = absl::StrCat(kPrelude, kPad);
      break;
    default:
      r.entry = "fill_values";
      r.source = absl::StrCat(kPrelude, kFill);
  }
  r.g = *std::move(g);
  return r;
}

absl::StatusOr<std::shared_ptr<Group>> Build(const Function& f) {
  std::optional<Group> g = Match(f);
  if (!g) {
    return absl::UnimplementedError(absl::StrCat(
        "nvrtc.image does not take @", f.name(),
        " (one f32 roi_align, resize2d (nearest / linear), constant pad of rank <= 8 or fill of its parameters)"));
  }
#ifdef HETPASS_HAS_CUDA
  ASSIGN_OR_RETURN(g->ptx, runtime::cuda_api::CompileCudaSource(g->source, g->g.function));
  return std::make_shared<Group>(*std::move(g));
#else
  return absl::UnimplementedError(absl::StrCat(g->g.function, ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
}

#ifdef HETPASS_HAS_CUDA
static_assert(runtime::cuda_api::kErrorRoiBatchIndex == 16, "FLAG_BATCH in kPrelude");

// Launch parameter blocks, field for field as in the kernel texts.
struct RoiParams {
  const void* x = nullptr;
  const void* rois = nullptr;
  const void* batch = nullptr;
  void* y = nullptr;
  int64_t n = 0, channels = 0, height = 0, width = 0, out_h = 0, out_w = 0, sampling_ratio = 0, half_pixel = 0,
          max_mode = 0, total = 0;
  double spatial_scale = 1;
  uint32_t* err = nullptr;
};
struct ResizeParams {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t n = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0, nchw = 0, nearest = 0, mode = 0,
          rounding = 0, total = 0;
};
struct PadParams {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t rank = 0, total = 0;
  int64_t in_dim[kMaxRank] = {}, out_dim[kMaxRank] = {}, before[kMaxRank] = {};
  const void* fill_ptr = nullptr;
  int64_t fill_code = 0;
  double fill = 0;
};
struct FillParams {
  void* y = nullptr;
  int64_t total = 0, out_code = 0;
  const void* src = nullptr;
  int64_t src_code = 0;
  uint64_t bits = 0;
};

int64_t CoordModeOf(const std::string& m) {
  if (m == "align_corners") return kAlignCorners;
  if (m == "asymmetric") return kAsymmetric;
  if (m == "pytorch_half_pixel") return kPytorchHalfPixel;
  if (m == "tf_half_pixel_for_nn") return kTfHalfPixelForNn;
  return kHalfPixel;
}

// rounding_method, "" resolved as ResizeAxisTaps resolves it (TVM's default).
int64_t RoundingOf(const std::string& r, int64_t mode) {
  if (r.empty()) return mode == kAlignCorners ? kRound : kFloor;
  if (r == "round") return kRound;
  if (r == "ceil") return kCeil;
  if (r == "round_prefer_floor") return kRoundPreferFloor;
  if (r == "round_prefer_ceil") return kRoundPreferCeil;
  return kFloor;
}

class ImageInstance final : public KernelInstance {
 public:
  ImageInstance(std::shared_ptr<const Group> g, std::unique_ptr<runtime::cuda_api::PtxModule> module,
                const void* kernel, uint32_t* err, int multiprocessors)
      : g_(std::move(g)),
        module_(std::move(module)),
        kernel_(kernel),
        err_(err),
        max_blocks_(std::max<int64_t>(1, int64_t{multiprocessors} * kBlocksPerMultiprocessor)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const ImageGroup& g = g_->g;
    RETURN_IF_ERROR(image_match::CheckCount(g, args));
    // The values image_match's checks read on the host must be host memory.
    const std::vector<int> host = image_match::HostValueParams(g);
    for (size_t i = 0; i < g.param.size(); ++i) {
      const TensorArg& a = args[g.param[i]];
      if (std::find(host.begin(), host.end(), g.param[i]) != host.end() && a.num_elements() > 0 &&
          ctx.device->Owns(a.data)) {
        return image_match::Invalid(
            g, absl::StrCat(g.operand_names[i],
                            " is device memory, but nvrtc.image reads it on the host (a shape function's value "
                            "input: it must be a host tensor passed by value)"));
      }
    }
    switch (g.kind) {
      case OpKind::kRoiAlign:
        return RoiAlign(ctx, args);
      case OpKind::kResize:
      case OpKind::kDynResize:
        return Resize(ctx, args);
      case OpKind::kPad:
      case OpKind::kDynPad:
        return Pad(ctx, args);
      default:
        return Fill(ctx, args);
    }
  }

 private:
  absl::Status Launch(const KernelContext& ctx, int64_t total, void* params) {
    const int64_t blocks = std::clamp<int64_t>((total + kBlock - 1) / kBlock, 1, max_blocks_);
    void* p[] = {params};
    return runtime::cuda_api::Launch(kernel_, ctx.queue, static_cast<uint32_t>(blocks), kBlock, p, g_->g.function);
  }

  // A fill operand: read on the GPU when it is device memory, else here (passed by value).
  absl::Status FillSource(const KernelContext& ctx, const TensorArg& t, const void** ptr, int64_t* code,
                          double* value) {
    if (ctx.device->Owns(t.data)) {
      const std::optional<int64_t> c = ScalarCodeOf(t.dtype);
      if (!c) return image_match::Invalid(g_->g, absl::StrCat("no GPU read of a ", DTypeName(t.dtype), " scalar"));
      *ptr = t.data, *code = *c;
      return absl::OkStatus();
    }
    *ptr = nullptr, *value = image_match::ScalarAt(t);
    return absl::OkStatus();
  }

  absl::Status RoiAlign(const KernelContext& ctx, absl::Span<const TensorArg> args) {
    const ImageGroup& g = g_->g;
    ASSIGN_OR_RETURN(const image_match::RoiAlignShape s, image_match::CheckRoiAlign(g, args));
    const TensorArg& out = args[g.num_params];
    if (out.num_elements() == 0) return absl::OkStatus();
    if (s.height * s.width == 0) {  // no pixel to sample: every bin 0, as the reference
      return runtime::cuda_api::ZeroAsync(out.data, out.num_elements() * sizeof(float), ctx.queue);
    }
    RoiParams p;
    p.x = args[g.param[0]].data, p.rois = args[g.param[1]].data, p.batch = args[g.param[2]].data, p.y = out.data;
    p.n = s.n, p.channels = s.channels, p.height = s.height, p.width = s.width, p.out_h = s.out_h, p.out_w = s.out_w;
    const RoiAlignParams a = RoiAlignParamsOf(g.attrs);
    p.sampling_ratio = a.sampling_ratio, p.half_pixel = a.half_pixel, p.max_mode = a.max_mode;
    p.spatial_scale = a.spatial_scale;
    p.total = out.num_elements(), p.err = err_;
    return Launch(ctx, p.total, &p);
  }

  absl::Status Resize(const KernelContext& ctx, absl::Span<const TensorArg> args) {
    const ImageGroup& g = g_->g;
    ASSIGN_OR_RETURN(const image_match::ResizeShape s, image_match::CheckResize(g, args));
    const TensorArg& out = args[g.num_params];
    if (out.num_elements() == 0) return absl::OkStatus();
    ResizeParams p;
    p.x = args[g.param[0]].data, p.y = out.data;
    p.n = s.n, p.channels = s.channels, p.in_h = s.in_h, p.in_w = s.in_w, p.out_h = s.out_h, p.out_w = s.out_w;
    p.nchw = s.nchw, p.nearest = g.attrs.GetString("method") == "nearest_neighbor";
    p.mode = CoordModeOf(g.attrs.GetString("coordinate_transformation_mode"));
    p.rounding = RoundingOf(g.attrs.GetString("rounding_method"), p.mode);
    p.total = out.num_elements();
    return Launch(ctx, p.total, &p);
  }

  absl::Status Pad(const KernelContext& ctx, absl::Span<const TensorArg> args) {
    const ImageGroup& g = g_->g;
    ASSIGN_OR_RETURN(const image_match::PadShape s, image_match::CheckPad(g, args));
    const TensorArg& data = args[g.param[0]];
    const TensorArg& out = args[g.num_params];
    if (out.num_elements() == 0) return absl::OkStatus();
    PadParams p;
    p.x = data.data, p.y = out.data, p.rank = g.rank, p.total = out.num_elements();
    for (int a = 0; a < g.rank; ++a) {
      p.in_dim[a] = data.shape[a], p.out_dim[a] = s.out_shape[a], p.before[a] = s.pads[2 * a];
    }
    if (g.kind == OpKind::kDynPad) {
      RETURN_IF_ERROR(FillSource(ctx, args[g.param[2]], &p.fill_ptr, &p.fill_code, &p.fill));
    } else {
      p.fill = g.attrs.GetFloat("pad_value");
    }
    return Launch(ctx, p.total, &p);
  }

  absl::Status Fill(const KernelContext& ctx, absl::Span<const TensorArg> args) {
    const ImageGroup& g = g_->g;
    RETURN_IF_ERROR(image_match::CheckFill(g, args).status());
    const TensorArg& out = args[g.num_params];
    if (out.num_elements() == 0) return absl::OkStatus();
    FillParams p;
    p.y = out.data, p.total = out.num_elements(), p.out_code = *ScalarCodeOf(g.result_dtype);
    // The element as the reference's Fill writes it: integer to integer exactly, else through
    // double (Tensor::SetDouble).
    Tensor one = Tensor::Zeros(g.result_dtype, {1});
    if (g.kind != OpKind::kFull) {
      one.SetDouble(0, g.kind == OpKind::kOnes ? 1.0 : 0.0);
    } else {
      const TensorArg& v = args[g.param[0]];
      if (ctx.device->Owns(v.data)) {
        p.src = v.data, p.src_code = *ScalarCodeOf(v.dtype);  // a readable scalar (CheckFill)
      } else if (!IsFloat(v.dtype) && !IsFloat(g.result_dtype)) {
        one.SetInt64(0, image_match::IntAt(v, 0));
      } else {
        one.SetDouble(0, image_match::ScalarAt(v));
      }
    }
    std::memcpy(&p.bits, one.data(), static_cast<size_t>(DTypeSize(g.result_dtype)));
    return Launch(ctx, p.total, &p);
  }

  std::shared_ptr<const Group> g_;
  std::unique_ptr<runtime::cuda_api::PtxModule> module_;  // keeps the kernel loaded
  const void* kernel_;
  uint32_t* err_;
  int64_t max_blocks_;
};
#endif

class ImageKernel final : public CompiledKernel {
 public:
  explicit ImageKernel(std::shared_ptr<const Group> g) : g_(std::move(g)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(const KernelContext& ctx,
                                                              absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    ASSIGN_OR_RETURN(uint32_t* err,
                     runtime::cuda_api::RequireCudaDevice(ctx.device, absl::StrCat(g_->g.function, ": nvrtc.image")));
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::cuda_api::PtxModule> module,
                     runtime::cuda_api::PtxModule::Load(g_->ptx, g_->g.function));
    ASSIGN_OR_RETURN(const void* kernel, module->Kernel(g_->entry));
    return std::make_unique<ImageInstance>(g_, std::move(module), kernel, err,
                                           runtime::cuda_api::MultiprocessorCount(ctx.device));
#else
    (void)ctx;
    return absl::UnimplementedError("nvrtc.image: this build has no cuda device");
#endif
  }
  std::string Describe() const override { return absl::StrCat("nvrtc ", image_match::OpLabel(g_->g)); }
  std::string Listing() const override {
    return NvrtcListing(g_->source, g_->ptx);
  }

 private:
  std::shared_ptr<const Group> g_;
};

bool IsImageGroup(const Function& f) { return Match(f).has_value(); }

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvrtcImage(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Group> g, Build(primitive));
  return std::make_unique<ImageKernel>(std::move(g));
}

absl::StatusOr<NvrtcImageProgram> NvrtcImageSource(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Group> g, Build(primitive));
  return NvrtcImageProgram{g->source, g->ptx};
}

const KernelProvider& NvrtcImageProvider() {
  static const GroupProvider provider(
      {"nvrtc.image", kNeedsKernelLibrary, &IsImageGroup, &CompileNvrtcImage, &image_match::ImageRuns, nullptr});
  return provider;
}

}  // namespace hetpass::cuda
