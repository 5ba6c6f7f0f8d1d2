// A fused group = a kernel-library head (dense / conv2d with bias, ReLU) + an elementwise tail
// the JIT compiles, run in place over the group's output (see split_kernel.cc).
#ifndef HETPASS_COMPILE_ENGINE_SPLIT_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_SPLIT_KERNEL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// The split over any providers: the longest head one of `heads` (tried in order) compiles,
// with an elementwise tail `tail` compiles, both for `target`. Unimplemented when the body has no
// such split.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileHeadTail(
    const Function& primitive, absl::Span<const KernelProvider* const> heads,
    const KernelProvider& tail, const KernelTarget& target = KernelTarget());
// The host's: oneDNN dense or conv head, LLVM elementwise tail.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileLibraryHeadJitTail(const Function& primitive);

// The head of the split cuda's provider makes of `primitive` (checks and tests: the cuDNN
// descriptor check of a ResNet block's conv head): `head` lives in `module`; params[i] is the
// group's parameter that head parameter i is. Unimplemented when there is no such split.
struct SplitHead {
  std::unique_ptr<Module> module;
  const Function* head = nullptr;
  std::vector<int> params;
};
absl::StatusOr<SplitHead> CudaSplitHead(const Function& primitive);

// "onednn+llvm.split" (the host's) and "cublaslt/cudnn+nvptx.split" (cuda's: cuBLASLt dense or
// cuDNN conv2d heads). Each runs only
// multi-op groups and fuses what its halves' providers fuse.
const KernelProvider& SplitKernelProvider();
const KernelProvider& CudaSplitKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_SPLIT_KERNEL_H_
