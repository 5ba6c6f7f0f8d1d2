// Native CPU kernels for reduction groups and nn.softmax (hand-written C++, compiled with the
// library at -O3; no JIT, no oneDNN). They replace the registry's reference kernels, which
// interpret such groups op by op in double with generic index arithmetic (15-115 us per group
// on the transformer's 2,304-element layer-norm tensors).
//
// Reduction groups: a primitive function whose body is
//
//   %y = <step>(%x [, %c])        0..n prologue steps on ONE f32 parameter %x
//   %r = sum|mean|prod|max|min(%y) {axis, keepdims, exclude}
//   %z = <step>(%r [, %c])        0..n epilogue steps
//   return %z
//
// where a step is `negative(v)`, `abs(v)`, `multiply(v, v)`, `add` / `subtract` / `multiply` /
// `divide` with the value v on either side and a scalar f32 parameter %c on the other, or
// `power(v, %c)`. A scalar parameter is an f32 tensor whose every dim is the constant 1 and
// whose rank does not exceed the value's (so broadcasting leaves the shape alone). Its value is
// read at each run (it is usually a call-site constant, e.g. layer norm's exponent 2). The
// reduced axes (after `exclude` and negative axes are resolved; an empty list reduces every
// axis) must be adjacent, so that the input is [outer, reduced, inner] in row-major order: the
// last axis (layer norm) or H, W of NCHW (global average pooling). Any other axis set is not
// matched (the reference kernel runs it).
//
// Semantics are the reference kernel's (shape_funcs/reduce.cc), bit for bit where it matters:
//   * steps compute in f32, which equals the reference's double-then-round for + - * / and
//     x^2 (the exact double result rounded once); other exponents call std::pow in double
//   * sum and mean accumulate in double (eight lanes when reducing the last axis, in order
//     otherwise); mean divides in double; prod multiplies in double in order. f32 lanes, as
//     in ONNX Runtime, are not free to give up but cheap: their loop is ~5x faster on long
//     lines (16,384 values: 0.8 vs 3.8 us), yet a transformer layer-norm mean takes ~1 us
//     either way, and double keeps the reference's rounding (results within 1 ulp)
//   * max / min keep the first element and replace it only by a strictly larger (smaller)
//     one, so a NaN counts only when it comes first, as in the reference
//   * an empty reduced extent gives 0 (sum, mean, max, min) or 1 (prod), as in the reference
//
// nn.softmax groups: the single binding nn.softmax(%x) {axis} of an f32 parameter, returned.
// Per [outer, axis, inner] line: max (NaN ignored, as the reference), e = exp(x - max) by an
// f32 polynomial (Cephes expf, relative error ~1e-7, vectorised; 0 below e^-86), the sum of e
// in double, then e * (1 / sum) in f32. A NaN or +inf in the line, or a line of -inf, gives NaN
// throughout, as the reference.
//
// Errors: arguments that do not fit the function (count, dtype, rank, shape, a scalar that is
// not one element) are InvalidArgument naming the function and the argument. Nothing aborts.
// The kernels are single-threaded (these groups are small next to the GEMMs).
#ifndef HETPASS_COMPILE_ENGINE_REDUCE_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_REDUCE_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is a reduction group as described above.
bool IsReduceGroup(const Function& primitive);
// True if `primitive` is a softmax group as described above.
bool IsSoftmaxGroup(const Function& primitive);

// The kernel for a reduction or softmax group; Unimplemented (naming the function) for any
// other function, so the compile engine falls through to the next implementation.
// Describe(): "native reduce[power,mean]", "native softmax".
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReduceOrSoftmaxGroup(
    const Function& primitive);

// "native.reduce": reduction groups with their steps, and softmax (CompileReduceOrSoftmaxGroup).
const KernelProvider& ReduceKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_REDUCE_KERNEL_H_
