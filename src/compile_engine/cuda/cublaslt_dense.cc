// cuBLASLt dense kernels (see cublaslt_dense.h). Run checks the arguments as the host dense
// kernel does (count, dtype, rank, K, N, bias length, output shape), flattens the data's leading
// dims into M and enqueues one cuBLASLt matmul on the device's stream.
#include "compile_engine/cuda/cublaslt_dense.h"

#include <optional>
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

using group_match::DenseGroup;

std::string ShapeText(const TensorArg& a) {
  return absl::StrCat(DTypeName(a.dtype), group_match::ShapeString(a.shape));
}

#ifdef HETPASS_HAS_CUDA
class DenseInstance final : public KernelInstance {
 public:
  DenseInstance(DenseGroup g, std::unique_ptr<runtime::cuda_api::DenseGemms> gemms)
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
  std::unique_ptr<runtime::cuda_api::DenseGemms> gemms_;
};
#endif

class DenseKernel final : public CompiledKernel {
 public:
  explicit DenseKernel(DenseGroup g) : g_(std::move(g)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
#ifdef HETPASS_HAS_CUDA
    if (runtime::cuda_api::ErrorWord(ctx.device) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(g_.function, ": cublaslt.dense runs on the cuda device, not on ",
                                                     ctx.device == nullptr ? std::string("no device") : ctx.device->name()));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::cuda_api::DenseGemms> gemms, runtime::cuda_api::DenseGemms::Create());
    return std::make_unique<DenseInstance>(g_, std::move(gemms));
#else
    (void)ctx;
    return absl::UnimplementedError(absl::StrCat(g_.function, ": this build has no cuda device (HETPASS_CUDA=OFF)"));
#endif
  }
  std::string Describe() const override {
    return absl::StrCat("cublaslt matmul", g_.has_bias() ? " + bias" : "", g_.relu ? " + relu" : "");
  }

 private:
  const DenseGroup g_;
};

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

const KernelProvider& CublasLtDenseProvider() {
  static const GroupProvider provider({"cublaslt.dense", kNeedsKernelLibrary, &IsDense, &CompileCublasLtDense,
                                       &DenseRuns, &DenseFuses});
  return provider;
}

}  // namespace hetpass::cuda
