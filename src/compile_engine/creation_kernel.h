// Native host kernels for the single-op creation groups that models compute on the host:
//
//   arange(%start, %stop, %step) {dtype}      every result dtype
//   dyn.full(%fill_value, %shape) {dtype}     every result dtype the f32-only fills of
//   dyn.zeros(%shape), dyn.ones(%shape)        native.image (image_kernel.h) leave over
//
// Why: without them these groups run on the reference interpreter, which per call rebuilds
// host Tensors from the arguments, re-runs the op's shape rule, writes every element through
// Tensor::SetDouble / SetInt64 and copies the result into the output buffer. The models' index
// ramps (tiny_gpt's positions, lstm_tagger's time steps, ssdlite's anchor grids) and i64 fills
// do not need any of that.
//
// Semantics are the reference kernels' (shape_funcs/dynamic.cc), element for element, for
// every dtype:
//   * arange: element i is start + i * step, in int64 (wrapping) when the result, start and
//     step are all non-float, else in double; then stored as Tensor::SetInt64 / SetDouble store
//     (integer results wrap to their width; float values going into an integer result
//     saturate, NaN -> 0; f16 / bf16 round through f32). The scalars are read as
//     Tensor::GetInt64 / GetDouble read them. The output length must be the rule's
//     ceil((stop - start) / step) clamped at 0, and step must be non-zero.
//   * fills: one element encoded as the reference encodes it (the fill value read as int64 when
//     it and the result are non-float, else as double), then repeated.
// The f32 / f64 / i32 / i64 ramps are typed loops; other result dtypes encode each element
// through a scalar Tensor (exactly the reference's conversion, slower but still allocation-free
// per call apart from that scalar).
//
// Errors: arguments that do not fit the function (count, dtypes, ranks, a length or shape that
// does not match the values, a zero step, a negative shape value) are InvalidArgument naming
// the function. Nothing aborts. Single-threaded.
#ifndef HETPASS_COMPILE_ENGINE_CREATION_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_CREATION_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is one of the single-op groups described above.
bool IsCreationGroup(const Function& primitive);

// The kernel for such a group; Unimplemented (naming the function) for any other function.
// Describe(): "native " followed by the op's name.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCreationGroup(const Function& primitive);

// "native.creation": the single-op creation groups above; fuses nothing.
const KernelProvider& CreationKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_CREATION_KERNEL_H_
