// The cuda device's reduction and softmax kernels (docs/cuda.md, "Kernels"): the groups the
// host's native kernels take (compile_engine/reduce_match.h, semantics in reduce_kernel.h),
// with any set of reduced axes, as CUDA C++ generated per group and compiled by NVRTC
// (runtime/cuda/nvrtc.h; cached by source, so equal groups compile once). Compiling needs
// NVRTC but no GPU, so every such group of every model is compiled and its PTX assembled on
// machines without one.
//
// Kernels (one thread block of 256 threads; grids cover the work with grid-stride loops):
//   reduce_line    reduced axes adjacent and last (inner == 1: layer norm's mean, global
//                  pooling of NCHW): one warp per line, lanes striding the line, a shuffle
//                  tree in lane order
//   reduce_any     any other axis set: one thread per output element walking the reduced
//                  index space (kept and reduced dims with their input strides, rank <= 8)
//   softmax_line   the axis last: one warp per line, three passes (max, sum of exp in double,
//                  scale)
//   softmax_any    the axis not last: one thread per (outer, inner) column, three passes
// Semantics follow the host kernels: steps in f32 (power other than 2 or 1 in double), sum /
// mean / prod accumulated in double, max / min replacing only by a strictly better value with
// each lane starting at its first element (a NaN counts only when it comes first in the line,
// since lane 0 starts at the line's first element and stays the left operand of every
// combine), an empty reduction 0 (prod 1) before the epilogue; softmax's max ignores NaN, so a
// NaN or +inf in a line, or a line of -inf, gives NaN throughout. Summation order differs from
// the host's (32 lanes, not 8), which moves a sum by at most an ulp of the f32 result.
//
// f64, i32 and i64 reductions (no steps) compute in double as the registry's reference does and
// convert the result to the dtype (an integer mean truncates).
//
// Known gaps: f16 and bool data, steps on anything but f32, argmax / argmin; one warp per
// line, so a single very long line (a global sum) uses 32 threads.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_NVRTC_REDUCE_H_
#define HETPASS_COMPILE_ENGINE_CUDA_NVRTC_REDUCE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass::cuda {

// Unimplemented for functions that are not a reduction or softmax group (or in a build
// without the cuda device).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvrtcReduce(const Function& primitive);

// The generated CUDA source and its PTX (tests: ptxas, FileCheck).
struct NvrtcProgram {
  std::string source;
  std::string ptx;
};
absl::StatusOr<NvrtcProgram> NvrtcReduceProgram(const Function& primitive);

// "nvrtc.reduce".
const KernelProvider& NvrtcReduceProvider();

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_NVRTC_REDUCE_H_
