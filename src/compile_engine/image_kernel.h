// Native CPU kernels for single-op groups of image and data-movement ops (hand-written C++, no
// JIT, no oneDNN). They replace the registry's reference kernels, which read and write every
// element through Tensor::GetDouble / SetDouble with generic index arithmetic (maskrcnn_tiny:
// 1-2 ms per call of roi_align, resize and pad, and the fills of its loops).
//
// A group is taken when its primitive function's body is exactly one call of one of these ops
// whose operands are all parameters and whose result is returned:
//
//   image.roi_align(%data, %rois, %batch_indices)   data, rois f32; batch_indices integers;
//                                                    mode avg | max, both coordinate modes
//   image.resize2d(%data) {size}                     f32, NCHW | NHWC, nearest_neighbor |
//   dyn.image.resize2d(%data, %size)                 linear, every coordinate transformation
//                                                    and rounding mode (cubic: not taken)
//   nn.pad(%data) {pad_width, pad_value}             f32, pad_mode constant (negative pads
//   dyn.nn.pad(%data, %pad_width, %pad_value)        crop); edge / reflect: not taken
//   dyn.zeros(%shape), dyn.ones(%shape),             f32 result
//   dyn.full(%fill_value, %shape)
//
// Semantics are the reference kernels' (shape_funcs/image.cc, nn.cc, dynamic.cc):
//   * roi_align: the same bilinear samples and double-precision weights, computed once per roi
//     and shared by every channel. max mode accumulates as the reference (equal results); avg
//     mode merges each bin's samples into per-pixel weights (separable: row weight x column
//     weight) and sums in double in another order (within ~1e-15 before rounding to f32;
//     reading every channel of a pixel at once from an HWC copy when the rois cover the image)
//   * resize2d: the same taps per output row / column, interpolated in double as the reference
//     (so nearest neighbour also yields NaN for an infinite pixel, as it does there)
//   * pad: each output row is the fill, a copy of the input row, the fill; the fill value is
//     rounded to f32 once
//   * fills: the value (dyn.full: read as double, then rounded to f32)
// Run-time values (dyn.* sizes, pads, shapes, fill values) are read from the arguments' data,
// which every device hands to kernels as host-accessible memory (the sim device runs kernels
// inside Launch). The output shape arrives with the result argument; a result that does not
// match the inputs and values is InvalidArgument.
//
// Errors: arguments that do not fit the function (count, dtype, rank, shape, values, a batch
// index outside the batch) are InvalidArgument naming the function and the argument. Nothing
// aborts. Single-threaded.
#ifndef HETPASS_COMPILE_ENGINE_IMAGE_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_IMAGE_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is one of the single-op groups described above.
bool IsImageOrFillGroup(const Function& primitive);

// The kernel for such a group; Unimplemented (naming the function) for any other function, so
// the compile engine falls through to the next implementation. Describe(): "native roi_align",
// "native resize2d[linear]", "native pad", "native fill".
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileImageOrFillGroup(const Function& primitive);

// "native.image": single-op image, pad and fill groups (CompileImageOrFillGroup); fuses nothing.
const KernelProvider& ImageKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_IMAGE_KERNEL_H_
