// Native host kernels for single-op argmax / argmin groups:
//
//   argmax(%data) {axis, keepdims, exclude, select_last_index, dtype}
//   argmin(%data) {...}                       data f32 | f64 | i32 | i64, any axis set
//
// Why: native.reduce binds value reductions only, so these ran on the reference interpreter
// (gru_seq2seq's greedy decoder calls argmax once per step), which rebuilds host Tensors and
// reads every element through Tensor::GetDouble.
//
// Algorithm and semantics are the reference kernel's (shape_funcs/reduce.cc): one pass over
// the data in row-major order; each element goes to the output position of its kept axes and
// carries its position flattened over the reduced axes; the first element of an output seeds
// it, a later one replaces it when strictly greater (argmax) / smaller (argmin), or equal with
// select_last_index. Elements are compared as double as the reference compares them (so NaN
// never replaces and a leading NaN stays). The index is stored in the integer `dtype` (wrapping
// to its width as Tensor::SetInt64 does). A reduced axis of size 0 is InvalidArgument, as the
// reference's rule rejects it.
//
// Errors: arguments that do not fit the function (count, dtypes, ranks, a result shape that is
// not the reduced shape) are InvalidArgument naming the function. Single-threaded.
#ifndef HETPASS_COMPILE_ENGINE_ARG_REDUCE_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_ARG_REDUCE_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is one of the single-op groups described above.
bool IsArgReduceGroup(const Function& primitive);

// The kernel for such a group; Unimplemented (naming the function) for any other function.
// Describe(): "native " followed by the op's name.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileArgReduceGroup(const Function& primitive);

// "native.argreduce": single-op argmax / argmin groups; fuses nothing.
const KernelProvider& ArgReduceKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_ARG_REDUCE_KERNEL_H_
