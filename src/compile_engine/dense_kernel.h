// The dense kernel of the CPU kernel library: a primitive function whose body is
//
//   %h = nn.dense(%data, %weight)                 data f32[M, K] (M may be symbolic), weight
//                                                 f32[N, K]
//   %h = nn.bias_add(%h, %bias) {axis = -1 | 1}   optional, bias f32[N]
//   %h = nn.relu(%h)                              optional
//   return %h                                     f32[M, N]
//
// runs as ONE oneDNN 2.6 matmul with the bias and the ReLU fused (bias argument + eltwise_relu
// post-op). The library was chosen by measurement on the seed MLP (bench/gemm_libs/compare.sh:
// oneDNN with prepacked weights beat OpenBLAS, BLIS and LIBXSMM at M = 1, 16 and 64, and it has
// convolutions for nn.conv2d); see cmake/kernel_library.cmake.
//
// Weights:
//   constant (the call site binds them, Instantiate receives the Tensor)  reordered ONCE, at
//       Instantiate, into the blocked layout oneDNN's brgemm matmul asks for (`format_tag::any`).
//       On this machine that layout is the same for every M; should a later M ask for another
//       one, the constant is reordered again into that layout, once, and cached too.
//   run-time  used in place as stored (W[N, K] row-major is oneDNN's [K, N] `ba`): reordering
//       2 MB of weights on every call cost more than the packed GEMM saved (seed MLP, one
//       thread: 307 / 379 / 681 us reordered per call vs 98 / 175 / 475 us plain at
//       M = 1 / 16 / 64; bench/gemm_libs gemm_onednn variant `plain`).
//
// Dynamic M: a matmul primitive is created for each distinct (M, K, N) the first time it is
// seen and cached in the instance (mutex-guarded; at most kMaxCachedShapes, then the cache
// restarts). oneDNN's run-time-dims matmul (DNNL_RUNTIME_DIM_VAL) would need no cache, but it
// falls back from brgemm to `gemm:jit` on plain weights: 35 / 113 / 419 us vs 33 / 105 / 403
// us per seed MLP with per-M primitives.
//
// Threads: the library runs on KernelLibraryThreads() OpenMP threads (oneDNN 2.6's CPU runtime
// here is OpenMP). The calling thread's OpenMP thread count is set for the duration of each
// primitive creation and execution and restored afterwards.
//
// Errors: arguments that do not match the function (count, dtype, rank, K, N, output shape) are
// InvalidArgument naming the function and the argument; a oneDNN failure is Internal. Nothing
// aborts.
#ifndef HETPASS_COMPILE_ENGINE_DENSE_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_DENSE_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is a primitive function (`primitive = true`) whose body is nn.dense(data,
// weight), optionally followed by nn.bias_add(., bias, axis = -1 or 1) and then optionally by
// nn.relu, all f32, data 2-D [M, K] (M may be symbolic), weight [N, K], bias [N], with data,
// weight and bias distinct parameters and the last binding the single result.
bool IsDenseGroup(const Function& primitive);

// The kernel for a dense group. InvalidArgument (naming the function) if !IsDenseGroup.
// Describe() gives e.g. "onednn matmul[bias,relu] packed" ("packed": weights reordered once at
// Instantiate when the call site binds them as a constant; used as stored otherwise).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileDenseGroup(const Function& primitive);

// Threads the kernel library uses: 1 by default; the environment variable HETPASS_NUM_THREADS
// (a positive integer) overrides it. Read once per process.
int KernelLibraryThreads();

namespace dense_kernel_internal {
// HETPASS_NUM_THREADS parsing, for tests: nullptr, empty, non-numeric, trailing junk or < 1
// give 1; values above 1024 are clamped to 1024.
int ParseThreadCount(const char* value);
// Primitives cached per instance before the cache restarts.
inline constexpr int kMaxCachedShapes = 64;
}  // namespace dense_kernel_internal

// "onednn.dense": dense groups (IsDenseGroup); fuses the bias and ReLU epilogue.
const KernelProvider& DenseKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_DENSE_KERNEL_H_
