// The cuda device's cuBLASLt kernels (docs/cuda.md, "Kernels"). Dense: nn.dense [+ bias] [+ relu] over f32
// (the group group_match.h's MatchDenseGroup recognises, as oneDNN's dense on the host) as one
// cuBLASLt matmul with its BIAS / RELU / RELU_BIAS epilogue, the heuristic's algorithm cached
// per shape (the batch is dynamic). Compiling needs neither cuBLASLt nor a GPU; instantiating
// opens cuBLASLt (FailedPrecondition naming the places tried where it is missing) on the
// cuda device.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_CUBLASLT_DENSE_H_
#define HETPASS_COMPILE_ENGINE_CUDA_CUBLASLT_DENSE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass::cuda {

// Unimplemented for functions that are not a dense group.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCublasLtDense(const Function& primitive);

// "cublaslt.dense".
const KernelProvider& CublasLtDenseProvider();

// nn.batch_matmul of two f32 operands of rank 2..8 (NumPy broadcast of the batch dims) as
// strided-batched cuBLASLt matmuls (one where the broadcast allows; see cublaslt_dense.cc),
// plans cached per shape. Unimplemented for other functions.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCublasLtBatchMatmul(const Function& primitive);
// "cublaslt.batch_matmul".
const KernelProvider& CublasLtBatchMatmulProvider();

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_CUBLASLT_DENSE_H_
