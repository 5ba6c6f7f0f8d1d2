// The batched-GEMM kernel of the CPU kernel library: a primitive function whose body is
//
//   %c = nn.batch_matmul(%a, %b)     a f32[.., M, K], b f32[.., K, N], batch dims broadcast
//   return %c                        f32[.., M, N]
//
// runs as ONE oneDNN matmul over all batches (oneDNN broadcasts a batch dim of size 1 on
// either side), instead of the reference kernel's scalar loop. This is attention's Q x K^T and
// P x V (shared/models/transformer_encoder_dynamic).
//
// Shapes are run-time (batch and sequence are symbolic): a primitive is created per distinct
// (a dims, b dims) and cached in the instance, as the dense kernel does (see dense_kernel.h for
// why per-shape primitives rather than DNNL_RUNTIME_DIM_VAL). Executions run on a per-thread
// user scratchpad (onednn_common.h: ThreadScratch), so a cached primitive may run on any thread.
//
// Errors: arguments that do not match the function (count, dtype, rank, K, broadcast, output
// shape) are InvalidArgument naming the function and the argument; a oneDNN failure is
// Internal. Nothing aborts.
#ifndef HETPASS_COMPILE_ENGINE_BATCH_MATMUL_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_BATCH_MATMUL_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is a primitive function whose body is the single binding
// nn.batch_matmul(a, b) over f32 parameters of rank 2..12 (oneDNN's limit), returned.
bool IsBatchMatmulGroup(const Function& primitive);

// The kernel for such a group; InvalidArgument (naming the function) if !IsBatchMatmulGroup.
// Describe(): "onednn matmul[batched]".
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileBatchMatmulGroup(const Function& primitive);

// "onednn.batch_matmul": single nn.batch_matmul groups (IsBatchMatmulGroup).
const KernelProvider& BatchMatmulKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_BATCH_MATMUL_KERNEL_H_
