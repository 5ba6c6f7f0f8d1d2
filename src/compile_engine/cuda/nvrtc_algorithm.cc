// NVRTC kernels for count_nonzero, argwhere, non_max_suppression (+ count) and topk (see
// nvrtc_algorithm.h).
//
// Compile: the group is one call of one of those ops on the function's parameters in order,
// its results returned; the element type picks the source's `T` (one compiled source per type,
// shared by every group of it through the NVRTC cache). Run: argument checks (count, dtypes,
// shapes against the op's rules, the scalars of non_max_suppression one value each in device
// memory), then the launches; scratch memory (NMS's orders and selections) comes from the
// device's pool and goes back at once (stream-ordered). Every by-value launch parameter is a
// struct of 8-byte fields, so host and device agree on its layout.
#include "compile_engine/cuda/nvrtc_algorithm.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/cuda/nvrtc_listing.h"
#include "compile_engine/group_provider.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/support/status_macros.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nvrtc.h"
#endif

namespace hetpass::cuda {
namespace {

constexpr int kMaxRank = 8;

enum class Kind { kCountNonzero, kArgwhere, kNmsCount, kNms, kTopk };

constexpr std::pair<OpId, Kind> kOps[] = {
    {OpId::kCountNonzero, Kind::kCountNonzero}, {OpId::kArgwhere, Kind::kArgwhere},
    {OpId::kNonMaxSuppressionCount, Kind::kNmsCount}, {OpId::kNonMaxSuppression, Kind::kNms},
    {OpId::kTopk, Kind::kTopk}, {OpId::kDynTopk, Kind::kTopk},
};

// Shared by every kernel: the element type T of the data (count_nonzero, argwhere, topk) with
// its non-zero test and NaN test, IT the index type of topk's indices.
constexpr char kKernels[] = R"CUDA(
#define FLAG_IOU 4u
#define FLAG_COUNT 8u
__device__ __forceinline__ bool is_nan(T v) { return v != v; }

extern "C" __global__ void nonzero_count(const T* x, unsigned long long* out, long long n) {
  unsigned long long c = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    c += NONZERO(x[i]) ? 1ull : 0ull;
  }
  for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
  if ((threadIdx.x & 31) == 0 && c != 0) atomicAdd(out, c);
}

struct ArgwhereP {
  long long n, rank, rows;
  long long dim[8];
  unsigned int* err;
};
// One block of 1024 threads.
extern "C" __global__ void nonzero_rows(const T* x, long long* out, ArgwhereP p) {
  __shared__ long long warp_off[33];
  __shared__ long long base;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (threadIdx.x == 0) base = 0;
  __syncthreads();
  for (long long start = 0; start < p.n; start += blockDim.x) {
    const long long i = start + threadIdx.x;
    const bool flag = i < p.n && NONZERO(x[i]);
    const unsigned int ballot = __ballot_sync(0xffffffffu, flag);
    if (lane == 0) warp_off[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
      long long acc = 0;
      for (int w = 0; w < warps; ++w) {
        const long long c = warp_off[w];
        warp_off[w] = acc;
        acc += c;
      }
      warp_off[32] = acc;
    }
    __syncthreads();
    if (flag) {
      const long long row = base + warp_off[warp] + __popc(ballot & ((1u << lane) - 1u));
      if (row < p.rows) {
        long long rest = i;
        for (int a = (int)p.rank - 1; a >= 0; --a) {
          out[row * p.rank + a] = rest % p.dim[a];
          rest /= p.dim[a];
        }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) base += warp_off[32];
    __syncthreads();
  }
  if (threadIdx.x == 0 && base != p.rows) atomicOr(p.err, FLAG_COUNT);
}

struct NmsP {
  const float* boxes;
  const float* scores;
  const long long* max_out;
  const float* iou;
  const float* score_threshold;
  long long has_threshold, center, batches, classes, boxes_n, rows;
  int* order;   // [batches * classes, boxes_n]: candidates by rank
  int* sel;     // [batches * classes, boxes_n]: selected boxes in order
  int* counts;  // [batches * classes]
  long long* out;
  unsigned int* err;
};
struct Box {
  float y_min, x_min, y_max, x_max, area;
};
__device__ Box prepare(const float* b, long long center) {
  Box r;
  if (!center) {
    r.y_min = fminf(b[0], b[2]);
    r.y_max = fmaxf(b[0], b[2]);
    r.x_min = fminf(b[1], b[3]);
    r.x_max = fmaxf(b[1], b[3]);
    r.area = (r.y_max - r.y_min) * (r.x_max - r.x_min);
  } else {
    const float half_w = b[2] / 2, half_h = b[3] / 2;
    r.x_min = b[0] - half_w;
    r.x_max = b[0] + half_w;
    r.y_min = b[1] - half_h;
    r.y_max = b[1] + half_h;
    r.area = b[2] * b[3];
  }
  return r;
}
__device__ bool suppresses(const Box& a, const Box& b, float threshold) {
  const float ix_min = fmaxf(a.x_min, b.x_min), ix_max = fminf(a.x_max, b.x_max);
  if (ix_max <= ix_min) return false;
  const float iy_min = fmaxf(a.y_min, b.y_min), iy_max = fminf(a.y_max, b.y_max);
  if (iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  if (inter <= 0.0f) return false;
  const float uni = a.area + b.area - inter;
  return inter / uni > threshold;
}
__device__ __forceinline__ bool candidate(const NmsP& p, float s) {
  return !(s != s) && (!p.has_threshold || s > *p.score_threshold);
}
// One block per (batch, class).
extern "C" __global__ void nms_select(NmsP p) {
  __shared__ int n_sel, suppressed;
  const long long bc = blockIdx.x, b = bc / p.classes;
  const float* score = p.scores + bc * p.boxes_n;
  const float* boxes = p.boxes + b * p.boxes_n * 4;
  int* order = p.order + bc * p.boxes_n;
  int* sel = p.sel + bc * p.boxes_n;
  const float iou = *p.iou;
  if (!(iou >= 0.0f && iou <= 1.0f)) {
    if (threadIdx.x == 0) {
      atomicOr(p.err, FLAG_IOU);
      p.counts[bc] = 0;
    }
    return;
  }
  const long long max_out = *p.max_out;
  if (threadIdx.x == 0) n_sel = 0;
  // Ranks: candidates before i in (score descending, index ascending).
  int local = 0;
  for (long long i = threadIdx.x; i < p.boxes_n; i += blockDim.x) {
    const float si = score[i];
    if (!candidate(p, si)) continue;
    int rank = 0;
    for (long long j = 0; j < p.boxes_n; ++j) {
      const float sj = score[j];
      if (candidate(p, sj) && (sj > si || (sj == si && j < i))) ++rank;
    }
    order[rank] = (int)i;
    ++local;
  }
  __shared__ int n_cand;
  if (threadIdx.x == 0) n_cand = 0;
  __syncthreads();
  if (local) atomicAdd(&n_cand, local);
  __syncthreads();
  for (int k = 0; k < n_cand && n_sel < max_out; ++k) {
    const int i = order[k];
    const Box cand = prepare(boxes + i * 4, p.center);
    if (threadIdx.x == 0) suppressed = 0;
    __syncthreads();
    for (int s = threadIdx.x; s < n_sel; s += blockDim.x) {
      if (suppresses(prepare(boxes + sel[s] * 4, p.center), cand, iou)) suppressed = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0 && !suppressed) sel[n_sel++] = i;
    __syncthreads();
  }
  if (threadIdx.x == 0) p.counts[bc] = max_out <= 0 ? 0 : n_sel;
}
// One block: the rows, batch-major then class then selection order.
extern "C" __global__ void nms_rows(NmsP p) {
  __shared__ long long base;
  if (threadIdx.x == 0) base = 0;
  __syncthreads();
  for (long long bc = 0; bc < p.batches * p.classes; ++bc) {
    const int n = p.counts[bc];
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const long long row = base + j;
      if (row < p.rows) {
        p.out[row * 3] = bc / p.classes;
        p.out[row * 3 + 1] = bc % p.classes;
        p.out[row * 3 + 2] = p.sel[bc * p.boxes_n + j];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) base += n;
    __syncthreads();
  }
  if (threadIdx.x == 0 && base != p.rows) atomicOr(p.err, FLAG_COUNT);
}
extern "C" __global__ void nms_count(NmsP p) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  long long total = 0;
  for (long long bc = 0; bc < p.batches * p.classes; ++bc) total += p.counts[bc];
  p.out[0] = total;
}

struct TopkP {
  const T* x;
  T* values;
  IT* indices;
  long long len, inner, k, lines, ascend;
};
// a comes before b (values va at index ia, vb at ib): NaN last, equal values by index.
__device__ __forceinline__ bool before(T va, long long ia, T vb, long long ib, bool ascend) {
  const bool na = is_nan(va), nb = is_nan(vb);
  if (na || nb) return !na || (nb && ia < ib);
  if (va == vb) return ia < ib;
  return ascend ? va < vb : va > vb;
}
// One thread per element (line, i): its rank is how many elements of its line come before it,
// and it lands at that rank when the rank is below k. A line is split over blocks of 256
// elements (a single line of 20k RPN scores is 79 blocks, not one), and each block walks its
// line in tiles of 256 staged in shared memory, stopping once every thread's rank reached k.
// The blocks walk (line, chunk) pairs grid-stride, so the whole block agrees on each pair and
// the barriers are uniform.
extern "C" __global__ void topk_lines(TopkP p) {
  __shared__ T tile[256];
  const long long chunks = (p.len + 255) / 256;
  for (long long b = blockIdx.x; b < p.lines * chunks; b += gridDim.x) {
    const long long line = b / chunks, i = (b % chunks) * 256 + threadIdx.x;
    const long long o = line / p.inner, in = line % p.inner;
    const T* x = p.x + o * p.len * p.inner + in;
    const bool mine = i < p.len;
    const T v = mine ? x[i * p.inner] : (T)0;
    long long rank = 0;
    for (long long j0 = 0; j0 < p.len; j0 += 256) {
      const long long n = p.len - j0 < 256 ? p.len - j0 : 256;
      if (threadIdx.x < n) tile[threadIdx.x] = x[(j0 + threadIdx.x) * p.inner];
      __syncthreads();
      if (mine) {
        for (long long t = 0; t < n && rank < p.k; ++t) {
          if (before(tile[t], j0 + t, v, i, p.ascend)) ++rank;
        }
      }
      // The tile is reused by the next step; stop when no thread of the block needs more.
      if (!__syncthreads_or(mine && rank < p.k)) break;
    }
    if (mine && rank < p.k) {
      const long long dst = o * p.k * p.inner + rank * p.inner + in;
      p.values[dst] = v;
      p.indices[dst] = (IT)i;
    }
  }
}
)CUDA";

// The CUDA element type of a dtype and its non-zero test.
struct CType {
  const char* name;
  const char* nonzero;
};
std::optional<CType> CTypeOf(DType t) {
  switch (t) {
    case DType::kF32:
      return CType{"float", "(v != 0.0f)"};
    case DType::kF64:
      return CType{"double", "(v != 0.0)"};
    case DType::kI32:
      return CType{"int", "(v != 0)"};
    case DType::kI64:
      return CType{"long long", "(v != 0)"};
    case DType::kI8:
      return CType{"signed char", "(v != 0)"};
    case DType::kI16:
      return CType{"short", "(v != 0)"};
    case DType::kU16:
      return CType{"unsigned short", "(v != 0)"};
    case DType::kU32:
      return CType{"unsigned int", "(v != 0)"};
    case DType::kU64:
      return CType{"unsigned long long", "(v != 0)"};
    case DType::kU8:
    case DType::kBool:
      return CType{"unsigned char", "(v != 0)"};
    case DType::kF16:
    case DType::kBF16:  // by bits: every pattern but +-0 is non-zero (NaN too, as != 0)
      return CType{"unsigned short", "((v & 0x7fff) != 0)"};
  }
  return std::nullopt;
}

struct Group {
  std::string function;  // "@name"
  std::string op;
  Kind kind = Kind::kCountNonzero;
  int num_params = 0, num_results = 1;
  std::vector<int> operand_param;  // per operand of the op, its parameter
  std::vector<int> result_slot;    // per result of the op, its place among the function's, or -1
  DType dtype = DType::kF32;       // the data's
  DType index_dtype = DType::kI64;  // topk's indices
  int rank = 0;                    // the data's
  int axis = 0;                    // topk
  bool ascend = false;             // topk
  int64_t center = 0;              // NMS
  bool has_threshold = true;       // NMS
  std::string source, ptx;
};

std::optional<Group> Match(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  if (n.kind() != NodeKind::kCall || n.op() == nullptr) return std::nullopt;
  const auto* e = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return o.first == OpIdOf(*n.op()); });
  if (e == std::end(kOps)) return std::nullopt;
  // Operands: parameters (one may feed several operands: NMS's two thresholds from one
  // constant); results: the node's, in order, or a subset (a topk whose values go unused
  // returns only its indices; the kernel writes the other into scratch memory).
  std::vector<int> result_slot(n.num_results(), -1);
  for (int r = 0; r < static_cast<int>(body.results().size()); ++r) {
    const Value* v = body.results()[r];
    int i = 0;
    while (i < n.num_results() && n.result(i) != v) ++i;
    if (i == n.num_results() || result_slot[i] >= 0) return std::nullopt;
    result_slot[i] = r;
  }
  if (body.results().empty()) return std::nullopt;
  std::vector<int> operand_param;
  for (int i = 0; i < n.num_operands(); ++i) {
    const Value* v = n.operand(i);
    if (!v->is_param() || v->param_block() != &body) return std::nullopt;
    operand_param.push_back(v->index());
  }
  for (int i = 0; i < body.num_params(); ++i) {
    if (!body.param(i)->type().is_tensor()) return std::nullopt;
  }
  absl::StatusOr<Attrs> attrs = n.op()->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  Group g;
  g.function = "@" + f.name();
  g.op = std::string(n.op()->name());
  g.kind = e->second;
  g.num_params = body.num_params();
  g.num_results = static_cast<int>(body.results().size());
  g.result_slot = std::move(result_slot);
  g.operand_param = std::move(operand_param);
  if (g.operand_param.empty()) return std::nullopt;
  const Type& data = n.operand(0)->type();
  g.dtype = data.dtype();
  g.rank = data.rank();
  if (!CTypeOf(g.dtype) || g.rank > kMaxRank) return std::nullopt;
  switch (g.kind) {
    case Kind::kCountNonzero:
    case Kind::kArgwhere:
      break;
    case Kind::kNmsCount:
    case Kind::kNms:
      g.center = attrs->GetInt("center_point_box");
      g.has_threshold = attrs->GetBool("has_score_threshold");
      if (n.num_operands() != 5 || g.dtype != DType::kF32 || (g.center != 0 && g.center != 1)) return std::nullopt;
      break;
    case Kind::kTopk: {
      g.index_dtype = attrs->GetDType("dtype");
      const int64_t axis = attrs->GetInt("axis");
      if (g.rank < 1 || axis < -g.rank || axis >= g.rank) return std::nullopt;
      g.axis = static_cast<int>(axis < 0 ? axis + g.rank : axis);
      g.ascend = attrs->GetBool("is_ascend");
      if (n.num_results() != 2 || g.dtype == DType::kF16 || g.dtype == DType::kBF16 ||
          (g.index_dtype != DType::kI64 && g.index_dtype != DType::kI32)) {
        return std::nullopt;
      }
      break;
    }
  }
  return g;
}

absl::StatusOr<std::shared_ptr<Group>> Build(const Function& f) {
  std::optional<Group> g = Match(f);
  if (!g) {
    return absl::UnimplementedError(absl::StrCat(
        "nvrtc.algorithm does not take @", f.name(),
        " (one count_nonzero, argwhere, non_max_suppression[_count], topk or dyn.topk of its parameters)"));
  }
  const CType t = *CTypeOf(g->dtype);
  g->source = absl::StrCat("#define T ", t.name, "\n#define NONZERO(v) ", t.nonzero, "\n#define IT ",
                           g->index_dtype == DType::kI32 ? "int" : "long long", "\n", kKernels);
#ifdef HETPASS_HAS_CUDA
  ASSIGN_OR_RETURN(g->ptx, runtime::cuda_api::CompileCudaSource(g->source, g->function));
  return std::make_shared<Group>(*std::move(g));
#else
  return absl::UnimplementedError(absl::StrCat(g->function, ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
}

#ifdef HETPASS_HAS_CUDA
static_assert(runtime::cuda_api::kErrorNmsIouThreshold == 4 && runtime::cuda_api::kErrorCountChanged == 8,
              "FLAG_IOU and FLAG_COUNT in kKernels");

struct Kernels {
  const void* count_nonzero = nullptr;
  const void* argwhere = nullptr;
  const void* nms_select = nullptr;
  const void* nms_rows = nullptr;
  const void* nms_count = nullptr;
  const void* topk = nullptr;
};

// Launch parameter blocks, field for field as in kKernels.
struct ArgwhereParams {
  int64_t n = 0, rank = 0, rows = 0;
  int64_t dim[kMaxRank] = {};
  uint32_t* err = nullptr;
};
struct NmsParams {
  const void* boxes = nullptr;
  const void* scores = nullptr;
  const void* max_out = nullptr;
  const void* iou = nullptr;
  const void* score_threshold = nullptr;
  int64_t has_threshold = 0, center = 0, batches = 0, classes = 0, boxes_n = 0, rows = 0;
  void* order = nullptr;
  void* sel = nullptr;
  void* counts = nullptr;
  void* out = nullptr;
  uint32_t* err = nullptr;
};
struct TopkParams {
  const void* x = nullptr;
  void* values = nullptr;
  void* indices = nullptr;
  int64_t len = 0, inner = 0, k = 0, lines = 0, ascend = 0;
};

std::string ShapeText(const TensorArg& a) {
  return absl::StrCat(DTypeName(a.dtype), "[", absl::StrJoin(a.shape, ", "), "]");
}

class AlgorithmInstance final : public KernelInstance {
 public:
  AlgorithmInstance(std::shared_ptr<const Group> g, std::unique_ptr<runtime::cuda_api::PtxModule> module, Kernels k,
                    uint32_t* err, int multiprocessors)
      : g_(std::move(g)), module_(std::move(module)), k_(k), err_(err), sms_(std::max(1, multiprocessors)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const Group& g = *g_;
    auto invalid = [&](const std::string& m) { return absl::InvalidArgumentError(absl::StrCat(g.function, ": ", m)); };
    if (static_cast<int>(args.size()) != g.num_params + g.num_results) {
      return invalid(absl::StrCat("expects ", g.num_params + g.num_results, " arguments, got ", args.size()));
    }
    // The op's operands, then its results (a result the function does not return: scratch
    // shaped like the returned one, topk's only case).
    std::vector<TensorArg> view;
    for (int p : g.operand_param) view.push_back(args[p]);
    runtime::PoolingAllocator::Block scratch;
    for (size_t r = 0; r < g.result_slot.size(); ++r) {
      if (g.result_slot[r] >= 0) {
        view.push_back(args[g.num_params + g.result_slot[r]]);
        continue;
      }
      const TensorArg& other = args[g.num_params];  // the one returned result
      TensorArg t{nullptr, r == 0 ? g.dtype : g.index_dtype, other.shape};
      if (ctx.workspace == nullptr) return invalid("no workspace pool");
      ASSIGN_OR_RETURN(scratch, ctx.workspace->Allocate(std::max<size_t>(
                                    1, static_cast<size_t>(t.num_elements()) * DTypeSize(t.dtype))));
      t.data = scratch.ptr;
      view.push_back(t);
    }
    const absl::Status s = Dispatch(ctx, view, invalid);
    if (scratch.ptr != nullptr) ctx.workspace->Release(scratch);  // stream-ordered
    return s;
  }

 private:
  template <typename Invalid>
  absl::Status Dispatch(const KernelContext& ctx, const std::vector<TensorArg>& view, Invalid invalid) {
    const Group& g = *g_;
    const int operands = static_cast<int>(g.operand_param.size());
    const TensorArg& x = view[0];
    if (x.dtype != g.dtype || static_cast<int>(x.shape.size()) != g.rank) {
      return invalid(absl::StrCat("data is ", ShapeText(x), ", the group's is ", DTypeName(g.dtype), " of rank ", g.rank));
    }
    switch (g.kind) {
      case Kind::kCountNonzero:
        return CountNonzero(ctx, x, view[operands], invalid);
      case Kind::kArgwhere:
        return Argwhere(ctx, x, view[operands], invalid);
      case Kind::kNmsCount:
      case Kind::kNms:
        return Nms(ctx, absl::MakeConstSpan(view), invalid);
      case Kind::kTopk:
        return Topk(ctx, x, view[operands], view[operands + 1], invalid);
    }
    return absl::OkStatus();
  }

  template <typename Invalid>
  absl::Status CountNonzero(const KernelContext& ctx, const TensorArg& x, const TensorArg& out, Invalid invalid) {
    if (out.dtype != DType::kI64 || out.num_elements() != 1) return invalid(absl::StrCat("result is ", ShapeText(out)));
    RETURN_IF_ERROR(runtime::cuda_api::ZeroAsync(out.data, sizeof(int64_t), ctx.queue));
    int64_t n = x.num_elements();
    if (n == 0) return absl::OkStatus();
    const void* data = x.data;
    void* dst = out.data;
    void* params[] = {&data, &dst, &n};
    const int64_t blocks = std::clamp<int64_t>((n + 255) / 256, 1, int64_t{sms_} * 8);
    return runtime::cuda_api::Launch(k_.count_nonzero, ctx.queue, static_cast<uint32_t>(blocks), 256, params,
                                     g_->function);
  }

  template <typename Invalid>
  absl::Status Argwhere(const KernelContext& ctx, const TensorArg& x, const TensorArg& out, Invalid invalid) {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (out.dtype != DType::kI64 || out.shape.size() != 2 || out.shape[1] != rank) {
      return invalid(absl::StrCat("result is ", ShapeText(out), ", not i64[count, ", rank, "]"));
    }
    ArgwhereParams p;
    p.n = x.num_elements(), p.rank = rank, p.rows = out.shape[0], p.err = err_;
    for (int64_t a = 0; a < rank; ++a) p.dim[a] = x.shape[a];
    if (p.n == 0 && p.rows == 0) return absl::OkStatus();
    const void* data = x.data;
    void* dst = out.data;
    void* params[] = {&data, &dst, &p};
    return runtime::cuda_api::Launch(k_.argwhere, ctx.queue, 1, 1024, params, g_->function);
  }

  template <typename Invalid>
  absl::Status Nms(const KernelContext& ctx, absl::Span<const TensorArg> args, Invalid invalid) {
    static constexpr const char* kNames[] = {"boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                                             "score_threshold"};
    const TensorArg& boxes = args[0];
    const TensorArg& scores = args[1];
    const TensorArg& out = args[5];
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4 || scores.dtype != DType::kF32 || scores.shape.size() != 3 ||
        scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1]) {
      return invalid(absl::StrCat("boxes ", ShapeText(boxes), " and scores ", ShapeText(scores),
                                  " are not [B, N, 4] and [B, C, N]"));
    }
    for (int i = 2; i < 5; ++i) {
      const DType want = i == 2 ? DType::kI64 : DType::kF32;
      if (args[i].dtype != want || args[i].num_elements() != 1) {
        return invalid(absl::StrCat(kNames[i], " is ", ShapeText(args[i]), ", not one ", DTypeName(want)));
      }
      // The kernels read them on the GPU.
      if (!ctx.device->Owns(args[i].data)) {
        return invalid(absl::StrCat(kNames[i], " is not memory of the cuda device"));
      }
    }
    const bool counting = g_->kind == Kind::kNmsCount;
    if (counting ? (out.dtype != DType::kI64 || out.num_elements() != 1)
                 : (out.dtype != DType::kI64 || out.shape.size() != 2 || out.shape[1] != 3)) {
      return invalid(absl::StrCat("result is ", ShapeText(out), counting ? ", not i64[]" : ", not i64[count, 3]"));
    }
    NmsParams p;
    p.boxes = boxes.data, p.scores = scores.data, p.max_out = args[2].data, p.iou = args[3].data;
    p.score_threshold = args[4].data;
    p.has_threshold = g_->has_threshold, p.center = g_->center;
    p.batches = boxes.shape[0], p.classes = scores.shape[1], p.boxes_n = boxes.shape[1];
    p.rows = counting ? 0 : out.shape[0];
    p.out = out.data, p.err = err_;
    const int64_t problems = p.batches * p.classes;
    if (problems == 0) {
      return counting ? runtime::cuda_api::ZeroAsync(out.data, sizeof(int64_t), ctx.queue) : absl::OkStatus();
    }
    if (ctx.workspace == nullptr) return invalid("no workspace pool");
    const size_t lists = static_cast<size_t>(problems * std::max<int64_t>(p.boxes_n, 1)) * sizeof(int32_t);
    ASSIGN_OR_RETURN(runtime::PoolingAllocator::Block scratch,
                     ctx.workspace->Allocate(2 * lists + static_cast<size_t>(problems) * sizeof(int32_t)));
    p.order = scratch.ptr;
    p.sel = static_cast<char*>(scratch.ptr) + lists;
    p.counts = static_cast<char*>(scratch.ptr) + 2 * lists;
    void* params[] = {&p};
    absl::Status s = runtime::cuda_api::Launch(k_.nms_select, ctx.queue, static_cast<uint32_t>(problems), 256, params,
                                               g_->function);
    if (s.ok()) {
      s = runtime::cuda_api::Launch(counting ? k_.nms_count : k_.nms_rows, ctx.queue, 1, counting ? 32 : 256, params,
                                    g_->function);
    }
    ctx.workspace->Release(scratch);  // stream-ordered: the next user runs after these kernels
    return s;
  }

  template <typename Invalid>
  absl::Status Topk(const KernelContext& ctx, const TensorArg& x, const TensorArg& values, const TensorArg& indices,
                    Invalid invalid) {
    const Group& g = *g_;
    bool ok = values.dtype == g.dtype && indices.dtype == g.index_dtype && values.shape == indices.shape &&
              values.shape.size() == x.shape.size();
    for (size_t a = 0; ok && a < x.shape.size(); ++a) {
      ok = static_cast<int>(a) == g.axis ? values.shape[a] <= x.shape[a] : values.shape[a] == x.shape[a];
    }
    if (!ok) {
      return invalid(absl::StrCat("values ", ShapeText(values), " and indices ", ShapeText(indices),
                                  " are not the top-k of data ", ShapeText(x), " along axis ", g.axis));
    }
    TopkParams p;
    p.x = x.data, p.values = values.data, p.indices = indices.data;
    p.len = x.shape[g.axis], p.k = values.shape[g.axis], p.ascend = g.ascend;
    p.inner = 1;
    for (size_t a = g.axis + 1; a < x.shape.size(); ++a) p.inner *= x.shape[a];
    p.lines = p.len == 0 ? 0 : x.num_elements() / p.len;
    if (p.lines == 0 || p.k == 0) return absl::OkStatus();
    void* params[] = {&p};
    // One block per 256 elements of each line (topk_lines), at most 16 per multiprocessor.
    const int64_t blocks = std::clamp<int64_t>(p.lines * ((p.len + 255) / 256), 1, int64_t{sms_} * 16);
    return runtime::cuda_api::Launch(k_.topk, ctx.queue, static_cast<uint32_t>(blocks), 256, params, g.function);
  }

  std::shared_ptr<const Group> g_;
  std::unique_ptr<runtime::cuda_api::PtxModule> module_;  // keeps the kernels loaded
  Kernels k_;
  uint32_t* err_;
  int sms_;
};
#endif

class AlgorithmKernel final : public CompiledKernel {
 public:
  explicit AlgorithmKernel(std::shared_ptr<const Group> g) : g_(std::move(g)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(const KernelContext& ctx,
                                                              absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    ASSIGN_OR_RETURN(uint32_t* err,
                     runtime::cuda_api::RequireCudaDevice(ctx.device, absl::StrCat(g_->function, ": nvrtc.algorithm")));
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::cuda_api::PtxModule> module,
                     runtime::cuda_api::PtxModule::Load(g_->ptx, g_->function));
    // The entry points this op launches (the others stay unresolved).
    Kernels k;
    const auto kernel = [&](const char* name, const void** slot) -> absl::Status {
      ASSIGN_OR_RETURN(*slot, module->Kernel(name));
      return absl::OkStatus();
    };
    switch (g_->kind) {
      case Kind::kCountNonzero:
        RETURN_IF_ERROR(kernel("nonzero_count", &k.count_nonzero));
        break;
      case Kind::kArgwhere:
        RETURN_IF_ERROR(kernel("nonzero_rows", &k.argwhere));
        break;
      case Kind::kNmsCount:
        RETURN_IF_ERROR(kernel("nms_select", &k.nms_select));
        RETURN_IF_ERROR(kernel("nms_count", &k.nms_count));
        break;
      case Kind::kNms:
        RETURN_IF_ERROR(kernel("nms_select", &k.nms_select));
        RETURN_IF_ERROR(kernel("nms_rows", &k.nms_rows));
        break;
      case Kind::kTopk:
        RETURN_IF_ERROR(kernel("topk_lines", &k.topk));
        break;
    }
    return std::make_unique<AlgorithmInstance>(g_, std::move(module), k, err,
                                               runtime::cuda_api::MultiprocessorCount(ctx.device));
#else
    (void)ctx;
    return absl::UnimplementedError("nvrtc.algorithm: this build has no cuda device");
#endif
  }
  std::string Describe() const override { return absl::StrCat("nvrtc ", g_->op); }
  std::string Listing() const override {
    return NvrtcListing(g_->source, g_->ptx);
  }

 private:
  std::shared_ptr<const Group> g_;
};

bool IsAlgorithmGroup(const Function& f) { return Match(f).has_value(); }
bool AlgorithmRuns(const OpDef& op) {
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const auto& o) { return o.first == OpIdOf(op); });
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvrtcAlgorithm(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Group> g, Build(primitive));
  return std::make_unique<AlgorithmKernel>(std::move(g));
}

absl::StatusOr<std::string> NvrtcAlgorithmPtx(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Group> g, Build(primitive));
  return g->ptx;
}

const KernelProvider& NvrtcAlgorithmProvider() {
  static const GroupProvider provider({"nvrtc.algorithm", kNeedsKernelLibrary, &IsAlgorithmGroup,
                                       &CompileNvrtcAlgorithm, &AlgorithmRuns, nullptr});
  return provider;
}

}  // namespace hetpass::cuda
