// A fused group = a kernel-library head (dense / conv2d with bias, ReLU) + an elementwise tail
// the JIT compiles, run in place over the group's output (see split_kernel.cc).
#ifndef HETPASS_COMPILE_ENGINE_SPLIT_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_SPLIT_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// Unimplemented when the body has no such split.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileLibraryHeadJitTail(const Function& primitive);

// "onednn+llvm.split": a dense or conv head with a JIT tail (CompileLibraryHeadJitTail). Runs
// only multi-op groups; fuses what its halves' providers fuse.
const KernelProvider& SplitKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_SPLIT_KERNEL_H_
