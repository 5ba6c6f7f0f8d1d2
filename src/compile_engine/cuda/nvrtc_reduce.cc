// NVRTC reduction and softmax kernels (see nvrtc_reduce.h).
//
// Compile: match (reduce_match.h, any axis set), then the source: a fixed body of four kernels
// (kKernels) after a per-group part that defines the reduction kind and the prologue / epilogue
// as inline functions of the group's scalar operands (read from device memory by every thread:
// they are one-element device tensors). NVRTC turns it into PTX for compute_80.
// Run: the host checks the arguments as the host kernels do (reduce_match.h), computes the
// line view (adjacent and last: the warp kernel) or the kept / reduced dims with their strides,
// and launches one kernel whose single by-value parameter is a block of 8-byte words (Params:
// pointers and int64s only, so host and device agree on its layout without a shared header).
#include "compile_engine/cuda/nvrtc_reduce.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compile_engine/cuda/nvrtc_listing.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/reduce_match.h"
#include "passes/support/status_macros.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nvrtc.h"
#endif

namespace hetpass::cuda {
namespace {

using namespace ::hetpass::reduce_match;  // NOLINT: the groups this file runs

constexpr int kMaxRank = 8;
constexpr uint32_t kBlock = 256;
constexpr int64_t kBlocksPerMultiprocessor = 32;

// The launch parameter, word for word as `struct P` in kKernels: 8-byte fields only.
struct Params {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t outer = 1, len = 1, inner = 1;  // the line view (warp kernels, softmax_any)
  int64_t n_out = 0;                      // output elements (reduce_any)
  int64_t n_kept = 0, n_red = 0;          // reduce_any: kept / reduced axes (row-major order)
  int64_t kept_dim[kMaxRank] = {}, kept_stride[kMaxRank] = {};
  int64_t red_dim[kMaxRank] = {}, red_stride[kMaxRank] = {};
  const void* scalar[1] = {};  // where the parameters' pointers start (one per parameter)
};

// The kernels every group shares, after P and the group's part: KIND (0 sum, 1 mean, 2 prod,
// 3 max, 4 min), NP (parameters), pro(v, p) and epi(v, p).
constexpr char kParamStruct[] = R"CUDA(
struct P {
  const T* x; T* y;
  long long outer, len, inner, n_out, n_kept, n_red;
  long long kept_dim[8], kept_stride[8], red_dim[8], red_stride[8];
  const float* s[NP];
};
)CUDA";
constexpr char kKernels[] = R"CUDA(
#define IS_SUM (KIND <= 2)
__device__ __forceinline__ T better(T acc, T v) {
#if KIND == 3
  return acc < v ? v : acc;
#else
  return v < acc ? v : acc;
#endif
}
__device__ __forceinline__ T finish_sum(double acc, long long len) {
#if KIND == 1
  return len == 0 ? (T)0 : (T)(acc / (double)len);
#else
  return (T)acc;
#endif
}
__device__ __forceinline__ double add_to(double acc, T v) {
#if KIND == 2
  return acc * (double)v;
#else
  return acc + (double)v;
#endif
}
#if KIND == 2
#define SUM_INIT 1.0
#else
#define SUM_INIT -0.0
#endif
#ifndef WITH_SOFTMAX
// One warp per line; lanes take every 32nd value starting at their own.
extern "C" __global__ void reduce_line(P p) {
  const long long warps = (long long)gridDim.x * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (long long o = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; o < p.outer; o += warps) {
    const T* row = p.x + o * p.len;
    T r;
#if IS_SUM
    double acc = SUM_INIT;
    for (long long i = lane; i < p.len; i += 32) acc = add_to(acc, pro(row[i], p));
    for (int off = 16; off > 0; off >>= 1) {
      const double other = __shfl_down_sync(0xffffffffu, acc, off);
#if KIND == 2
      acc *= other;
#else
      acc += other;
#endif
    }
    r = finish_sum(acc, p.len);
#else
    // A lane past the end starts at the line's first value: the identity of max / min here
    // (lane 0 holds it too, and stays the left operand).
    T e = p.len == 0 ? (T)0 : pro(row[lane < p.len ? lane : 0], p);
    for (long long i = lane + 32; i < p.len; i += 32) e = better(e, pro(row[i], p));
    for (int off = 16; off > 0; off >>= 1) e = better(e, __shfl_down_sync(0xffffffffu, e, off));
    r = e;
#endif
    if (lane == 0) p.y[o] = epi(r, p);
  }
}
// One thread per output element; the reduced index space walked in row-major order.
extern "C" __global__ void reduce_any(P p) {
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < p.n_out;
       o += (long long)gridDim.x * blockDim.x) {
    long long base = 0, rest = o;
    for (int k = (int)p.n_kept - 1; k >= 0; --k) {
      base += (rest % p.kept_dim[k]) * p.kept_stride[k];
      rest /= p.kept_dim[k];
    }
    T r;
#if IS_SUM
    double acc = SUM_INIT;
#else
    T e = (T)0;
#endif
    for (long long i = 0; i < p.len; ++i) {
      long long off = base, q = i;
      for (int k = (int)p.n_red - 1; k >= 0; --k) {
        off += (q % p.red_dim[k]) * p.red_stride[k];
        q /= p.red_dim[k];
      }
      const T v = pro(p.x[off], p);
#if IS_SUM
      acc = add_to(acc, v);
#else
      e = i == 0 ? v : better(e, v);
#endif
    }
#if IS_SUM
    r = finish_sum(acc, p.len);
#else
    r = e;
#endif
    p.y[o] = epi(r, p);
  }
}
#else
__device__ __forceinline__ float fmax_nan_ignored(float a, float b) { return fmaxf(a, b); }
extern "C" __global__ void softmax_line(P p) {
  const long long warps = (long long)gridDim.x * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (long long o = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; o < p.outer; o += warps) {
    const float* row = p.x + o * p.len;
    float* out = p.y + o * p.len;
    float m = -__int_as_float(0x7f800000);
    for (long long i = lane; i < p.len; i += 32) m = fmax_nan_ignored(m, row[i]);
    for (int off = 16; off > 0; off >>= 1) m = fmax_nan_ignored(m, __shfl_xor_sync(0xffffffffu, m, off));
    double sum = 0.0;
    for (long long i = lane; i < p.len; i += 32) sum += (double)expf(row[i] - m);
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const float scale = (float)(1.0 / sum);
    for (long long i = lane; i < p.len; i += 32) out[i] = expf(row[i] - m) * scale;
  }
}
extern "C" __global__ void softmax_any(P p) {
  const long long columns = p.outer * p.inner;
  for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < columns;
       c += (long long)gridDim.x * blockDim.x) {
    const long long o = c / p.inner, j = c % p.inner;
    const float* col = p.x + o * p.len * p.inner + j;
    float* out = p.y + o * p.len * p.inner + j;
    float m = -__int_as_float(0x7f800000);
    for (long long i = 0; i < p.len; ++i) m = fmax_nan_ignored(m, col[i * p.inner]);
    double sum = 0.0;
    for (long long i = 0; i < p.len; ++i) sum += (double)expf(col[i * p.inner] - m);
    const float scale = (float)(1.0 / sum);
    for (long long i = 0; i < p.len; ++i) out[i * p.inner] = expf(col[i * p.inner] - m) * scale;
  }
}
#endif
)CUDA";

// `v = step(v)` as CUDA, the scalar operand read through p.s[k].
std::string StepSource(const Step& s) {
  const std::string c = s.scalar < 0 ? "" : absl::StrCat("(*p.s[", s.scalar, "])");
  switch (s.kind) {
    case StepKind::kNegative:
      return "v = -v;";
    case StepKind::kAbs:
      return "v = fabsf(v);";
    case StepKind::kSquare:
      return "v = v * v;";
    case StepKind::kAdd:
      return absl::StrCat("v = v + ", c, ";");
    case StepKind::kSubtract:
      return s.scalar_left ? absl::StrCat("v = ", c, " - v;") : absl::StrCat("v = v - ", c, ";");
    case StepKind::kMultiply:
      return absl::StrCat("v = v * ", c, ";");
    case StepKind::kDivide:
      return s.scalar_left ? absl::StrCat("v = ", c, " / v;") : absl::StrCat("v = v / ", c, ";");
    case StepKind::kPower:  // x^2 exact in f32 (the double square rounded once), as the host
      return absl::StrCat("{ const float e = ", c, "; v = e == 2.0f ? v * v : e == 1.0f ? v : ",
                          "(float)pow((double)v, (double)e); }");
    // The extended steps as the registry's reference computes them (elementwise_ops.def): in
    // double, rounded once.
    case StepKind::kRelu:
      return "v = v > 0.0f ? v : 0.0f;";
    case StepKind::kExp:
      return "v = (float)exp((double)v);";
    case StepKind::kSigmoid:
      return "v = (float)(1.0 / (1.0 + exp(-(double)v)));";
    case StepKind::kTanh:
      return "v = (float)tanh((double)v);";
    case StepKind::kSqrt:
      return "v = sqrtf(v);";  // correctly rounded in f32 (no fast math), as the double one
    case StepKind::kLog:
      return "v = (float)log((double)v);";
    case StepKind::kFloor:
      return "v = floorf(v);";
    case StepKind::kCeil:
      return "v = ceilf(v);";
    case StepKind::kMaximum:  // std::max(x, y): y only when x < y
      return s.scalar_left ? absl::StrCat("{ const float c = ", c, "; v = c < v ? v : c; }")
                           : absl::StrCat("{ const float c = ", c, "; v = v < c ? c : v; }");
    case StepKind::kMinimum:  // std::min(x, y): y only when y < x
      return s.scalar_left ? absl::StrCat("{ const float c = ", c, "; v = v < c ? v : c; }")
                           : absl::StrCat("{ const float c = ", c, "; v = c < v ? c : v; }");
  }
  return "";
}

std::string StepsFunction(const char* name, const std::vector<Step>& steps) {
  std::string body;
  for (const Step& s : steps) absl::StrAppend(&body, "\n  ", StepSource(s));
  return absl::StrCat("__device__ __forceinline__ T ", name, "(T v, const P& p) {", body,
                      "\n  return v;\n}\n");
}

int KindNumber(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum:
      return 0;
    case ReduceKind::kMean:
      return 1;
    case ReduceKind::kProd:
      return 2;
    case ReduceKind::kMax:
      return 3;
    case ReduceKind::kMin:
      return 4;
  }
  return 0;
}

// The source of a group: its definitions, then the shared kernels (the reduction kernels, or
// with WITH_SOFTMAX the softmax ones, which use neither KIND nor the steps).
std::string Source(bool softmax, int num_params, ReduceKind kind, DType dtype, const std::vector<Step>& prologue,
                   const std::vector<Step>& epilogue) {
  const char* type = dtype == DType::kF64 ? "double" : dtype == DType::kI32 ? "int" : dtype == DType::kI64 ? "long long" : "float";
  return absl::StrCat(softmax ? "#define WITH_SOFTMAX 1\n" : "",
                      absl::StrFormat("#define T %s\n#define KIND %d\n#define NP %d\n", type, KindNumber(kind),
                                      std::max(num_params, 1)),
                      kParamStruct, StepsFunction("pro", prologue), StepsFunction("epi", epilogue), kKernels);
}

struct Program {
  std::optional<ReduceGroup> reduce;
  std::optional<SoftmaxGroup> softmax;
  const Signature& sig() const { return reduce ? reduce->sig : softmax->sig; }
  std::string source, ptx, description;
};

absl::StatusOr<std::shared_ptr<Program>> Build(const Function& f) {
  auto p = std::make_shared<Program>();
  p->reduce = MatchReduce(f, /*any_axes=*/true);
  if (!p->reduce) p->softmax = MatchSoftmax(f);
  if (!p->reduce && !p->softmax) {
    return absl::UnimplementedError(absl::StrCat(
        "nvrtc.reduce does not take @", f.name(), " (not steps, one sum/mean/prod/max/min, steps of f32; nor a softmax)"));
  }
  const int rank = p->reduce ? p->reduce->rank : p->softmax->rank;
  if (rank > kMaxRank) {
    return absl::UnimplementedError(absl::StrCat("nvrtc.reduce: @", f.name(), " reduces a tensor of rank ", rank,
                                                 " (at most ", kMaxRank, ")"));
  }
  p->source = p->reduce ? Source(false, p->reduce->sig.num_params, p->reduce->kind, p->reduce->dtype, p->reduce->prologue,
                                 p->reduce->epilogue)
                        : Source(true, 1, ReduceKind::kSum, DType::kF32, {}, {});
  p->description = p->reduce ? absl::StrCat("nvrtc reduce[", p->reduce->ops, "]") : "nvrtc softmax";
#ifdef HETPASS_HAS_CUDA
  ASSIGN_OR_RETURN(p->ptx, runtime::cuda_api::CompileCudaSource(p->source, absl::StrCat("@", f.name())));
#else
  return absl::UnimplementedError(absl::StrCat("@", f.name(), ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
  return p;
}

#ifdef HETPASS_HAS_CUDA
// Row-major strides of `shape`.
std::vector<int64_t> Strides(absl::Span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

bool AdjacentAndLast(const std::vector<bool>& reduced) {
  const auto first = std::find(reduced.begin(), reduced.end(), true);
  return first != reduced.end() && std::find(first, reduced.end(), false) == reduced.end();
}

class NvrtcReduceInstance final : public KernelInstance {
 public:
  NvrtcReduceInstance(std::shared_ptr<const Program> p, std::unique_ptr<runtime::cuda_api::PtxModule> module,
                      const void* line, const void* any, int multiprocessors)
      : program_(std::move(p)),
        module_(std::move(module)),
        line_(line),
        any_(any),
        max_blocks_(std::max<int64_t>(1, int64_t{multiprocessors} * kBlocksPerMultiprocessor)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const Program& pg = *program_;
    const Signature& sig = pg.sig();
    RETURN_IF_ERROR(CheckCount(sig, args));
    const int data = pg.reduce ? pg.reduce->data : 0;
    const int rank = pg.reduce ? pg.reduce->rank : pg.softmax->rank;
    const TensorArg& in = args[data];
    const TensorArg& out = args[sig.num_params];
    const DType dtype = pg.reduce ? pg.reduce->dtype : DType::kF32;
    RETURN_IF_ERROR(CheckTensor(sig, in, sig.Arg("data", data), rank, dtype));
    RETURN_IF_ERROR(CheckScalars(sig, args));
    std::vector<bool> mask;
    if (pg.reduce) {
      RETURN_IF_ERROR(CheckResult(sig, out, ReducedShape(*pg.reduce, in.shape), dtype));
      mask = pg.reduce->reduced;
    } else {
      RETURN_IF_ERROR(CheckResult(sig, out, in.shape));
      mask.assign(rank, false);
      mask[pg.softmax->axis] = true;
    }
    const int64_t n_out = out.num_elements();
    if (n_out == 0) return absl::OkStatus();
    Params p;
    p.x = in.data;
    p.y = out.data;
    bool line = AdjacentAndLast(mask);
    if (line || pg.softmax) {
      const LineView v = ViewOf(in.shape, mask);
      p.outer = v.outer, p.len = v.len, p.inner = v.inner;
      line = v.inner == 1;
    }
    if (!line && pg.reduce) {
      const std::vector<int64_t> strides = Strides(in.shape);
      p.len = 1;
      for (int i = 0; i < rank; ++i) {
        if (mask[i]) {
          p.red_dim[p.n_red] = in.shape[i], p.red_stride[p.n_red++] = strides[i];
          p.len *= in.shape[i];
        } else {
          p.kept_dim[p.n_kept] = in.shape[i], p.kept_stride[p.n_kept++] = strides[i];
        }
      }
      p.n_out = n_out;
    }
    // Warp kernels: 8 lines per block; thread kernels: one output (softmax: column) per thread.
    const int64_t work = line ? (p.outer + kBlock / 32 - 1) / (kBlock / 32)
                              : ((pg.softmax ? p.outer * p.inner : n_out) + kBlock - 1) / kBlock;
    const int64_t blocks = std::clamp<int64_t>(work, 1, max_blocks_);
    // The block as the kernel reads it: Params without its placeholder, then the scalars.
    std::vector<uint64_t> words(offsetof(Params, scalar) / 8 + std::max(sig.num_params, 1), 0);
    std::memcpy(words.data(), &p, offsetof(Params, scalar));
    for (int i = 0; i < sig.num_params; ++i) {
      std::memcpy(&words[offsetof(Params, scalar) / 8 + i], &args[i].data, sizeof(void*));
    }
    void* params[] = {words.data()};
    return runtime::cuda_api::Launch(line ? line_ : any_, ctx.queue, static_cast<uint32_t>(blocks), kBlock, params,
                                     sig.function);
  }

 private:
  std::shared_ptr<const Program> program_;
  std::unique_ptr<runtime::cuda_api::PtxModule> module_;  // keeps the kernels loaded
  const void* line_;
  const void* any_;
  int64_t max_blocks_;
};
#endif

class NvrtcReduceKernel final : public CompiledKernel {
 public:
  explicit NvrtcReduceKernel(std::shared_ptr<const Program> p) : program_(std::move(p)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(const KernelContext& ctx,
                                                              absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    const std::string& fn = program_->sig().function;
    RETURN_IF_ERROR(runtime::cuda_api::RequireCudaDevice(ctx.device, absl::StrCat(fn, ": nvrtc.reduce")).status());
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::cuda_api::PtxModule> module,
                     runtime::cuda_api::PtxModule::Load(program_->ptx, fn));
    const bool softmax = program_->softmax.has_value();
    ASSIGN_OR_RETURN(const void* line, module->Kernel(softmax ? "softmax_line" : "reduce_line"));
    ASSIGN_OR_RETURN(const void* any, module->Kernel(softmax ? "softmax_any" : "reduce_any"));
    return std::make_unique<NvrtcReduceInstance>(program_, std::move(module), line, any,
                                                 runtime::cuda_api::MultiprocessorCount(ctx.device));
#else
    (void)ctx;
    return absl::UnimplementedError("nvrtc.reduce: this build has no cuda device");
#endif
  }
  std::string Describe() const override { return program_->description; }
  std::string Listing() const override {
    return NvrtcListing(program_->source, program_->ptx);
  }

 private:
  std::shared_ptr<const Program> program_;
};

bool IsNvrtcReduceGroup(const Function& f) {
  return MatchReduce(f, /*any_axes=*/true).has_value() || MatchSoftmax(f).has_value();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvrtcReduce(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Program> p, Build(primitive));
  return std::make_unique<NvrtcReduceKernel>(std::move(p));
}

absl::StatusOr<NvrtcProgram> NvrtcReduceProgram(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Program> p, Build(primitive));
  return NvrtcProgram{p->source, p->ptx};
}

const KernelProvider& NvrtcReduceProvider() {
  static const GroupProvider provider({"nvrtc.reduce", kNeedsKernelLibrary, &IsNvrtcReduceGroup, &CompileNvrtcReduce,
                                       &ReduceRuns, [](const OpDef& op) { return ReduceFuses(op, true); }});
  return provider;
}

}  // namespace hetpass::cuda
