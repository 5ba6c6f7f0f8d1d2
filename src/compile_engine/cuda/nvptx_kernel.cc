// NVPTX kernels from loop plans (see nvptx_kernel.h). Compile: AnalyzeGroup (elementwise and
// injective rows of the lowering table), the expression bound of the injective path, then the
// NVPTX module (two kernels: 32-bit and 64-bit indexing) and its PTX. The parameter block of a
// launch is bases + dims + aux + the error word + the element count; a group whose block would
// pass CUDA's 4 KiB of kernel parameters is left to another provider (Unimplemented).
// Launch shape: 256 threads per block, at most 32 blocks per multiprocessor, the rest covered by
// the kernel's grid-stride loop.
#include "compile_engine/cuda/nvptx_kernel.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compile_engine/cuda/ptx_codegen.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/jit/injective_run.h"
#include "compile_engine/jit/llvm_emitter.h"
#include "compile_engine/jit/loop_plan.h"
#include "passes/support/status_macros.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_api.h"
#endif

namespace hetpass::cuda {
namespace {

using namespace ::hetpass::jit_internal;  // NOLINT: the JIT's own internals

constexpr uint32_t kBlock = 256;
constexpr int64_t kBlocksPerMultiprocessor = 32;

#ifdef HETPASS_HAS_CUDA
static_assert(runtime::cuda_api::kErrorDivisionByZero == static_cast<uint32_t>(kFlagDivisionByZero));
static_assert(runtime::cuda_api::kErrorIndexOutOfRange == static_cast<uint32_t>(kFlagIndexOutOfRange));
#endif

struct Program {
  Plan plan;
  InjectiveLayout layout;
  std::string ptx;
  std::string kernel, kernel_wide;
  std::string description;
  // Parameters read on the host (the run-time operands of dyn.* ops), which must be host
  // memory: they reach the kernel as its parameters.
  std::vector<int> host_params;
};

size_t ParamBytes(const Plan& plan, const InjectiveLayout& layout) {
  return 8 * (static_cast<size_t>(plan.num_params) + 1) + 8 * std::max(layout.num_dims, 1) +
         8 * std::max(layout.num_aux, 1) + 8 + 8;
}

absl::StatusOr<Plan> AnalyzeForGpu(const Function& primitive) {
  ASSIGN_OR_RETURN(Plan plan, AnalyzeGroup(primitive, /*allow_injective=*/true));
  std::vector<size_t> terms(plan.dtypes.size(), 1);
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    size_t n = 1;
    for (int a : plan.steps[k].args) n += terms[a];
    terms[plan.num_params + k] = std::min(n, kMaxExprs + 1);
  }
  if (terms[plan.result] > kMaxExprs) {
    return absl::UnimplementedError(absl::StrCat(
        "@", primitive.name(), ": the fused expression needs more than ", kMaxExprs, " terms"));
  }
  const InjectiveLayout layout = MakeLayout(plan);
  if (ParamBytes(plan, layout) > runtime::kMaxKernelParamBytes) {
    return absl::UnimplementedError(absl::StrCat(
        "@", primitive.name(), ": its kernel parameters take ", ParamBytes(plan, layout),
        " bytes, more than a CUDA launch passes (", runtime::kMaxKernelParamBytes, ")"));
  }
  return plan;
}

absl::StatusOr<std::shared_ptr<Program>> Build(const Function& primitive) {
  auto p = std::make_shared<Program>();
  ASSIGN_OR_RETURN(p->plan, AnalyzeForGpu(primitive));
  p->layout = MakeLayout(p->plan);
  for (const Step& step : p->plan.steps) {
    if (step.op != JitOp::kDynReshape && step.op != JitOp::kDynStridedSlice &&
        step.op != JitOp::kDynBroadcastTo) {
      continue;
    }
    for (size_t i = 1; i < step.args.size(); ++i) {
      if (step.args[i] < p->plan.num_params) p->host_params.push_back(step.args[i]);
    }
  }
  p->description = absl::StrCat("nvptx", DescribePlan(p->plan).substr(3));  // "jit[...]"
  const std::string symbol = absl::StrCat("hetpass_", primitive.name());
  BuiltModule built = BuildNvptxModule(p->plan, p->layout, symbol);
  p->kernel = built.fast_name;
  p->kernel_wide = built.generic_name;
  ASSIGN_OR_RETURN(p->ptx, CompileToPtx(*built.module));
  return p;
}

class NvptxKernel final : public CompiledKernel {
 public:
  explicit NvptxKernel(std::shared_ptr<const Program> p) : program_(std::move(p)) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override;
  std::string Describe() const override { return program_->description; }
  std::string Listing() const override { return program_->ptx; }

 private:
  std::shared_ptr<const Program> program_;
};

#ifdef HETPASS_HAS_CUDA
class NvptxInstance final : public KernelInstance {
 public:
  NvptxInstance(std::shared_ptr<const Program> p,
                std::shared_ptr<runtime::cuda_api::PtxModule> module, const void* kernel,
                const void* kernel_wide, uint32_t* error_word, int multiprocessors)
      : program_(std::move(p)),
        module_(std::move(module)),
        kernel_(kernel),
        kernel_wide_(kernel_wide),
        error_word_(error_word),
        max_blocks_(std::max<int64_t>(1, multiprocessors * kBlocksPerMultiprocessor)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const Program& p = *program_;
    for (int i : p.host_params) {
      if (i < static_cast<int>(args.size()) && args[i].num_elements() > 0 && ctx.device->Owns(args[i].data)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "@", p.plan.fn, ": argument ", i, " (", p.plan.names[i],
            ") is device memory, but the kernel reads it on the host as launch parameters "
            "(it must be a host tensor passed by value)"));
      }
    }
    InjectiveLaunch launch;
    RETURN_IF_ERROR(PrepareInjective(p.plan, p.layout, args, /*tensors_on_host=*/false, &launch));
    if (launch.out_elements == 0) return absl::OkStatus();
    int64_t total = launch.out_elements;
    uint32_t* error = error_word_;
    void* params[] = {launch.bases.data(), launch.dims.data(), launch.aux.data(), &error, &total};
    const int64_t blocks = std::min<int64_t>((total + kBlock - 1) / kBlock, max_blocks_);
    return runtime::cuda_api::Launch(launch.wide ? kernel_wide_ : kernel_, ctx.queue,
                                     static_cast<uint32_t>(blocks), kBlock, params, p.kernel);
  }

 private:
  std::shared_ptr<const Program> program_;
  std::shared_ptr<runtime::cuda_api::PtxModule> module_;  // keeps the kernels loaded
  const void* kernel_;
  const void* kernel_wide_;
  uint32_t* error_word_;
  int64_t max_blocks_;
};
#endif

absl::StatusOr<std::unique_ptr<KernelInstance>> NvptxKernel::Instantiate(
    const KernelContext& ctx, absl::Span<const Tensor* const>) const {
#ifdef HETPASS_HAS_CUDA
  ASSIGN_OR_RETURN(uint32_t* error_word, runtime::cuda_api::RequireCudaDevice(
                                           ctx.device, absl::StrCat("@", program_->plan.fn, ": an NVPTX kernel")));
  // One loaded module per call site: the driver caches the compiled PTX itself.
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::cuda_api::PtxModule> module,
                   runtime::cuda_api::PtxModule::Load(program_->ptx, absl::StrCat("@", program_->plan.fn)));
  ASSIGN_OR_RETURN(const void* kernel, module->Kernel(program_->kernel));
  ASSIGN_OR_RETURN(const void* kernel_wide, module->Kernel(program_->kernel_wide));
  return std::make_unique<NvptxInstance>(program_, std::move(module), kernel, kernel_wide, error_word,
                                         runtime::cuda_api::MultiprocessorCount(ctx.device));
#else
  (void)ctx;
  return absl::UnimplementedError(absl::StrCat(
      "@", program_->plan.fn, ": this build has no cuda device (HETPASS_CUDA=OFF) to load PTX into"));
#endif
}

bool NvptxOp(const OpDef& op) { return FindLowering(OpIdOf(op)) != nullptr; }

}  // namespace

bool IsNvptxGroup(const Function& primitive) { return AnalyzeForGpu(primitive).ok(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvptx(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Program> p, Build(primitive));
  return std::make_unique<NvptxKernel>(std::move(p));
}

absl::StatusOr<std::string> NvptxPtx(const Function& primitive) {
  ASSIGN_OR_RETURN(std::shared_ptr<Program> p, Build(primitive));
  return p->ptx;
}

const KernelProvider& NvptxProvider() {
  static const GroupProvider provider({"nvptx.injective", kNeedsJit, &IsNvptxGroup, &CompileNvptx,
                                       &NvptxOp, &NvptxOp});
  return provider;
}

}  // namespace hetpass::cuda
