// cuBLASLt dense and batch_matmul kernels (see cublaslt_dense.h).
// dense: Run checks the arguments as the host dense kernel does (count, dtype, rank, K, N, bias
// length, output shape), flattens the data's leading dims into M and enqueues one cuBLASLt
// matmul on the device's stream.
// batch_matmul: Run checks the shapes (group_match::BatchMatmulShape, as the host kernel), then
// splits the broadcast batch dims into an outer part looped on the host and the longest inner
// run in which each operand is either present in every batch or broadcast (one strided-batched
// cuBLASLt matmul, stride 0 for the broadcast operand). [B, H, M, K] x [B, H, K, N] and
// [B, M, K] x [K, N] are one call; [B, 1, M, K] x [1, H, K, N] is B calls of H batches.
#include "compile_engine/cuda/cublaslt_dense.h"

#include <algorithm>
#include <optional>
#include <vector>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compile_engine/group_match.h"
#include "compile_engine/group_provider.h"
#include "passes/support/status_macros.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cuda_api.h"
#endif

namespace hetpass::cuda {
namespace {

using group_match::BatchMatmulGroup;
using group_match::DenseGroup;

constexpr int kMaxBatchMatmulRank = 8;

std::string ShapeText(const TensorArg& a) {
  return absl::StrCat(DTypeName(a.dtype), group_match::ShapeString(a.shape));
}

#ifdef HETPASS_HAS_CUDA
class DenseInstance final : public KernelInstance {
 public:
  DenseInstance(DenseGroup g, std::unique_ptr<runtime::cuda_api::Gemms> gemms)
      : g_(std::move(g)), gemms_(std::move(gemms)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    auto invalid = [&](const std::string& m) {
      return absl::InvalidArgumentError(absl::StrCat(g_.function, " (cublaslt.dense): ", m));
    };
    if (static_cast<int>(args.size()) != g_.num_params + 1) {
      return invalid(absl::StrCat("expects ", g_.num_params + 1, " arguments, got ", args.size()));
    }
    const TensorArg& data = args[g_.data];
    const TensorArg& weight = args[g_.weight];
    const TensorArg& out = args[g_.num_params];
    for (const TensorArg* a : {&data, &weight, &out}) {
      if (a->dtype != DType::kF32) return invalid(absl::StrCat("an argument is ", ShapeText(*a), ", not f32"));
    }
    if (static_cast<int>(data.shape.size()) != g_.data_rank || weight.shape.size() != 2 ||
        out.shape.size() != data.shape.size()) {
      return invalid(absl::StrCat("data ", ShapeText(data), ", weight ", ShapeText(weight), ", output ",
                                  ShapeText(out), " do not have the ranks of the group"));
    }
    const int64_t k = data.shape.back(), n = weight.shape[0];
    if (weight.shape[1] != k) {
      return invalid(absl::StrCat(g_.Arg("weight", g_.weight), " is ", ShapeText(weight), " for K = ", k));
    }
    int64_t m = 1;
    for (size_t i = 0; i + 1 < data.shape.size(); ++i) {
      m *= data.shape[i];
      if (out.shape[i] != data.shape[i]) return invalid(absl::StrCat("output is ", ShapeText(out)));
    }
    if (out.shape.back() != n) return invalid(absl::StrCat("output is ", ShapeText(out), ", N = ", n));
    const float* bias = nullptr;
    if (g_.has_bias()) {
      const TensorArg& b = args[g_.bias];
      if (b.dtype != DType::kF32 || b.shape.size() != 1 || b.shape[0] != n) {
        return invalid(absl::StrCat(g_.Arg("bias", g_.bias), " is ", ShapeText(b), " for N = ", n));
      }
      bias = static_cast<const float*>(b.data);
    }
    runtime::cuda_api::DenseCall call;
    call.m = m;
    call.n = n;
    call.k = k;
    call.data = static_cast<const float*>(data.data);
    call.weight = static_cast<const float*>(weight.data);
    call.bias = bias;
    call.out = static_cast<float*>(out.data);
    call.relu = g_.relu;
    return gemms_->Run(call, ctx.queue, ctx.workspace);
  }

 private:
  const DenseGroup g_;
  std::unique_ptr<runtime::cuda_api::Gemms> gemms_;
};

// How a batch_matmul's batch dims run: dims [0, outer_rank) looped on the host, the rest one
// strided batch.
struct BatchSplit {
  int outer_rank = 0;
  int64_t inner_batch = 1;
  int64_t stride_a = 0, stride_b = 0;  // between matrices of the inner batch
};

// Batch dims of the padded shapes (rank r, the last two are the matrices). Walking outward
// from the innermost batch dim, an operand stays uniform while it is present in every dim
// (ad == want) or broadcast in every dim (ad == 1); dims of extent 1 fit either.
BatchSplit SplitBatch(const std::vector<int64_t>& ad, const std::vector<int64_t>& bd, const std::vector<int64_t>& want) {
  const int r = static_cast<int>(want.size());
  enum Mode { kUnset, kPresent, kBroadcast };
  Mode ma = kUnset, mb = kUnset;
  BatchSplit s;
  s.outer_rank = r - 2;
  auto fits = [](Mode& m, int64_t d, int64_t w) {
    if (w == 1) return true;
    const Mode need = d == 1 ? kBroadcast : kPresent;
    if (m == kUnset) m = need;
    return m == need;
  };
  while (s.outer_rank > 0) {
    const int i = s.outer_rank - 1;
    Mode na = ma, nb = mb;
    if (!fits(na, ad[i], want[i]) || !fits(nb, bd[i], want[i])) break;
    ma = na, mb = nb;
    s.inner_batch *= want[i];
    --s.outer_rank;
  }
  const int64_t m = want[r - 2], n = want[r - 1], k = ad[r - 1];
  s.stride_a = ma == kBroadcast ? 0 : m * k;
  s.stride_b = mb == kBroadcast ? 0 : k * n;
  return s;
}

class BatchMatmulInstance final : public KernelInstance {
 public:
  BatchMatmulInstance(BatchMatmulGroup g, std::unique_ptr<runtime::cuda_api::Gemms> gemms)
      : g_(std::move(g)), gemms_(std::move(gemms)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    auto invalid = [&](const std::string& m) {
      return absl::InvalidArgumentError(absl::StrCat(g_.function, " (cublaslt.batch_matmul): ", m));
    };
    if (static_cast<int>(args.size()) != g_.num_params + 1) {
      return invalid(absl::StrCat("expects ", g_.num_params + 1, " arguments, got ", args.size()));
    }
    const TensorArg& a = args[g_.a];
    const TensorArg& b = args[g_.b];
    const TensorArg& out = args[g_.num_params];
    for (const TensorArg* t : {&a, &b, &out}) {
      if (t->dtype != DType::kF32) return invalid(absl::StrCat("an argument is ", ShapeText(*t), ", not f32"));
    }
    if (static_cast<int>(a.shape.size()) != g_.a_rank || static_cast<int>(b.shape.size()) != g_.b_rank) {
      return invalid(absl::StrCat(g_.Arg("a", g_.a), " is ", ShapeText(a), ", ", g_.Arg("b", g_.b), " is ",
                                  ShapeText(b), ": not the ranks of the group"));
    }
    std::vector<int64_t> ad, bd;
    const std::optional<std::vector<int64_t>> want = group_match::BatchMatmulShape(a.shape, b.shape, &ad, &bd);
    if (!want) {
      return invalid(absl::StrCat("nn.batch_matmul operands do not match: ", g_.Arg("a", g_.a), " is ", ShapeText(a),
                                  ", ", g_.Arg("b", g_.b), " is ", ShapeText(b)));
    }
    if (!std::equal(want->begin(), want->end(), out.shape.begin(), out.shape.end())) {
      return invalid(absl::StrCat("result is ", ShapeText(out), " for a ", ShapeText(a), " and b ", ShapeText(b)));
    }
    const int r = static_cast<int>(want->size());
    const int64_t m = (*want)[r - 2], n = (*want)[r - 1], k = ad[r - 1];
    if (out.num_elements() == 0) return absl::OkStatus();
    if (k == 0) {  // an empty sum
      return runtime::cuda_api::ZeroAsync(out.data, static_cast<size_t>(out.num_elements()) * sizeof(float), ctx.queue);
    }
    const BatchSplit split = SplitBatch(ad, bd, *want);
    // Outer batch dims: row-major element strides of each operand's matrices (0 where broadcast).
    std::vector<int64_t> a_stride(r, 0), b_stride(r, 0);
    int64_t as = m * k, bs = k * n;
    for (int i = r - 3; i >= 0; --i) {
      a_stride[i] = ad[i] == 1 ? 0 : as;
      b_stride[i] = bd[i] == 1 ? 0 : bs;
      as *= ad[i];
      bs *= bd[i];
    }
    int64_t outer = 1;
    for (int i = 0; i < split.outer_rank; ++i) outer *= (*want)[i];
    runtime::cuda_api::BatchMatmulCall call;
    call.batch = split.inner_batch, call.m = m, call.n = n, call.k = k;
    call.stride_a = split.stride_a, call.stride_b = split.stride_b;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t rest = o, a_off = 0, b_off = 0;
      for (int i = split.outer_rank - 1; i >= 0; --i) {
        const int64_t idx = rest % (*want)[i];
        rest /= (*want)[i];
        a_off += idx * a_stride[i];
        b_off += idx * b_stride[i];
      }
      call.a = static_cast<const float*>(a.data) + a_off;
      call.b = static_cast<const float*>(b.data) + b_off;
      call.out = static_cast<float*>(out.data) + o * split.inner_batch * m * n;
      RETURN_IF_ERROR(gemms_->Run(call, ctx.queue, ctx.workspace));
    }
    return absl::OkStatus();
  }

 private:
  const BatchMatmulGroup g_;
  std::unique_ptr<runtime::cuda_api::Gemms> gemms_;
};
#endif

// The instance of a cuBLASLt kernel: on the cuda device only, with cuBLASLt opened.
template <typename Instance, typename Group>
absl::StatusOr<std::unique_ptr<KernelInstance>> CublasLtInstance(const KernelContext& ctx, const Group& g,
                                                                 absl::string_view provider) {
#ifdef HETPASS_HAS_CUDA
  RETURN_IF_ERROR(runtime::cuda_api::RequireCudaDevice(ctx.device, absl::StrCat(g.function, ": ", provider)).status());
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::cuda_api::Gemms> gemms, runtime::cuda_api::Gemms::Create());
  return std::make_unique<Instance>(g, std::move(gemms));
#else
  (void)ctx;
  return absl::UnimplementedError(absl::StrCat(g.function, ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
}

class DenseKernel final : public CompiledKernel {
 public:
  explicit DenseKernel(DenseGroup g) : g_(std::move(g)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    return CublasLtInstance<DenseInstance>(ctx, g_, "cublaslt.dense");
#else
    return CublasLtInstance<KernelInstance>(ctx, g_, "cublaslt.dense");
#endif
  }
  std::string Describe() const override {
    return absl::StrCat("cublaslt matmul", g_.has_bias() ? " + bias" : "", g_.relu ? " + relu" : "");
  }

 private:
  const DenseGroup g_;
};

class BatchMatmulKernel final : public CompiledKernel {
 public:
  explicit BatchMatmulKernel(BatchMatmulGroup g) : g_(std::move(g)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    return CublasLtInstance<BatchMatmulInstance>(ctx, g_, "cublaslt.batch_matmul");
#else
    return CublasLtInstance<KernelInstance>(ctx, g_, "cublaslt.batch_matmul");
#endif
  }
  std::string Describe() const override { return "cublaslt matmul[strided batches]"; }

 private:
  const BatchMatmulGroup g_;
};

bool IsBatchMatmul(const Function& f) { return group_match::MatchBatchMatmulGroup(f, kMaxBatchMatmulRank).has_value(); }
bool BatchMatmulRuns(const OpDef& op) { return OpIdOf(op) == OpId::kNnBatchMatmul; }

bool IsDense(const Function& f) { return group_match::MatchDenseGroup(f).has_value(); }
bool DenseRuns(const OpDef& op) { return OpIdOf(op) == OpId::kNnDense; }
bool DenseFuses(const OpDef& op) {
  return OpIdOf(op) == OpId::kNnDense || group_match::IsEpilogueOp(OpIdOf(op), /*allow_add=*/true);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCublasLtDense(const Function& primitive) {
  std::optional<DenseGroup> g = group_match::MatchDenseGroup(primitive);
  if (!g) {
    return absl::UnimplementedError(absl::StrCat("cublaslt.dense does not take @", primitive.name()));
  }
  return std::make_unique<DenseKernel>(*std::move(g));
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCublasLtBatchMatmul(const Function& primitive) {
  std::optional<BatchMatmulGroup> g = group_match::MatchBatchMatmulGroup(primitive, kMaxBatchMatmulRank);
  if (!g) {
    return absl::UnimplementedError(absl::StrCat("cublaslt.batch_matmul does not take @", primitive.name()));
  }
  return std::make_unique<BatchMatmulKernel>(*std::move(g));
}

const KernelProvider& CublasLtBatchMatmulProvider() {
  static const GroupProvider provider({"cublaslt.batch_matmul", kNeedsKernelLibrary, &IsBatchMatmul,
                                       &CompileCublasLtBatchMatmul, &BatchMatmulRuns, nullptr});
  return provider;
}

const KernelProvider& CublasLtDenseProvider() {
  static const GroupProvider provider({"cublaslt.dense", kNeedsKernelLibrary, &IsDense, &CompileCublasLtDense,
                                       &DenseRuns, &DenseFuses});
  return provider;
}

}  // namespace hetpass::cuda
