// The cuda device's kernels for the data-dependent and sorting ops (docs/cuda.md, "Kernels"):
// count_nonzero and argwhere (the shape counter and its op), non_max_suppression_count and
// non_max_suppression, topk and dyn.topk. Each group is the single op on parameters, its
// results returned. CUDA C++ compiled by NVRTC (one source per element type, cached), so the
// counters run on the GPU and only their i64 scalar crosses to the host (one counted sync),
// never the tensor searched or the boxes.
//
// Kernels and semantics (the registry's reference kernels, shape_funcs/algorithm.cc):
// (kernel entry points: nonzero_count, nonzero_rows, nms_select, nms_rows, nms_count,
// topk_lines)
//   count_nonzero     grid-stride count, warp sums, one 64-bit atomic add into the zeroed
//                     scalar; f16 / bf16 by their bits (-0 is zero)
//   argwhere          one block of 1024 threads walks the tensor in chunks: non-zero flags,
//                     ballot + warp-offset scan, each non-zero's row-major coordinates written
//                     at its rank, so the rows are in row-major order as the reference's
//   nms_select        one block per (batch, class): candidates (score not NaN, > threshold when
//                     there is one), each one's rank in (score descending, index ascending)
//                     counted in parallel (a total order, so ranks are a permutation), then
//                     the greedy pass in rank order, each candidate tested against the
//                     selected boxes by every thread; IoU in f32 exactly as the reference
//                     (no FMA contraction)
//   nms_rows          one block: the (batch, class) selections concatenated batch-major, then
//                     class, then selection order; nms_count sums them into the scalar
//   topk              one block per line: each value's rank (descending, or ascending with
//                     is_ascend; equal values by the lower index), written at its rank when
//                     below k. NaN ranks last in both directions (the reference's
//                     std::stable_sort leaves NaN placement unspecified)
// Errors reach the device's error word: iou_threshold outside [0, 1], and an op whose rows
// differ from its counter's count (the input changed between the two launches).
//
// Known gaps: topk of f16 / bf16; O(n^2 / threads) ranking (thousands of boxes or values per
// line, not millions); argwhere in one block.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_NVRTC_ALGORITHM_H_
#define HETPASS_COMPILE_ENGINE_CUDA_NVRTC_ALGORITHM_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass::cuda {

// Unimplemented for other functions (or in a build without the cuda device).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvrtcAlgorithm(const Function& primitive);
// The PTX of a group's kernels (tests: ptxas).
absl::StatusOr<std::string> NvrtcAlgorithmPtx(const Function& primitive);

// "nvrtc.algorithm".
const KernelProvider& NvrtcAlgorithmProvider();

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_NVRTC_ALGORITHM_H_
