// The cuda device's kernels generated from the CPU JIT's loop plans (docs/cuda.md, "Kernels"):
// every group the host JIT takes on its elementwise or injective path (elementwise, broadcast,
// bias_add, where, cast, transpose, reshape, slices, take, concatenate, broadcast_to) becomes
// one NVPTX kernel, one output element per GPU thread (jit/llvm_emitter.cc, EmitGpuEntry).
//
// Compiling needs no GPU (PTX is made by LLVM and checked by tests with ptxas); instantiating
// loads the PTX into the cuda device's context (the driver compiles it for the GPU), and Run
// does the host half (the shape program, jit/injective_run.h) and enqueues the launch on the
// device's stream with dims, strides and slice bounds as by-value kernel parameters. Errors
// the kernel finds (integer division by zero, a take index out of range) reach the device's
// error word and are reported at its next synchronisation.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_NVPTX_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_CUDA_NVPTX_KERNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass::cuda {

// Whether the NVPTX generator takes `primitive` (exactly when CompileNvptx cannot answer
// Unimplemented).
bool IsNvptxGroup(const Function& primitive);

// The kernel; Unimplemented (naming the op or dtype) for groups it does not take.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvptx(const Function& primitive);

// The PTX CompileNvptx would load (for tests and `hetpass-opt --dump-ptx`-style debugging).
absl::StatusOr<std::string> NvptxPtx(const Function& primitive);

// "nvptx.injective": the provider of the groups above on cuda.
const KernelProvider& NvptxProvider();

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_NVPTX_KERNEL_H_
