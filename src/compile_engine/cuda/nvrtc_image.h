// The cuda device's kernels for the single-op image / pad / fill groups (docs/cuda.md,
// "Kernels"): image.roi_align, image.resize2d, dyn.image.resize2d, nn.pad, dyn.nn.pad
// (constant), dyn.zeros, dyn.ones, dyn.full. The groups are exactly the host's native.image
// groups (compile_engine/image_match.h, semantics in image_kernel.h); CUDA C++ compiled by
// NVRTC (one fixed kernel text per op, cached by source), one thread per output element with
// grid-stride loops, results bit-identical to the registry's reference kernels:
// (kernel entry points: roi_align_kernel, resize_kernel, pad_constant, fill_values)
//   roi_align   per output element (roi, channel, bin): the roi's grid and every bilinear sample
//               computed as shape_funcs/image_sampling.cc does, in double, without FMA
//               contraction; avg sums each sample's four weighted corners in the reference's
//               order and divides by the count, max keeps the reference's comparisons (so NaN
//               propagates alike)
//   resize2d    per output element: both axes' taps (source coordinate per
//               coordinate_transformation_mode, nearest rounding per rounding_method, clamping)
//               and the double blend of ResizeBlend; NCHW and NHWC
//   pad         per output element: the input element at (o - before) on every axis, else the
//               fill rounded to f32 (negative pads crop); rank <= 8
//   fills       the value rounded to f32 (dyn.full: read as double first); unlike the host's
//               native kernels, every result dtype (the element as the reference's Fill
//               writes it), since a fill on cuda has no other kernel (maskrcnn_tiny's i64
//               dyn.zeros)
//
// Where run-time values live (plan-devices, device_rules.h): the `value` inputs (dyn.* sizes,
// pad widths, fill shapes) are host arguments, kept on the host because the shape function
// reads them; the kernel reads them there and passes what it needs by value (one parameter
// struct of 8-byte fields). One in device memory is InvalidArgument naming it. The fill values
// (pad_value, fill_value) are data inputs: normally device memory, which the kernel reads on
// the GPU (converting from its dtype to double, then to f32, as the host does); a host tensor
// (passed by value) is read on the host instead. Either way the result is the same.
//
// Errors: argument checks as the host's (InvalidArgument naming the function and the argument);
// a roi's batch index outside the batch sets kErrorRoiBatchIndex in the device's error word,
// reported at the next synchronisation (the indices are data on the GPU).
//
// Known gaps: as native.image (f32 data, no cubic resize, no edge / reflect pad); pad of rank
// above 8 is not taken here.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_NVRTC_IMAGE_H_
#define HETPASS_COMPILE_ENGINE_CUDA_NVRTC_IMAGE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass::cuda {

// Unimplemented for other functions (or in a build without the cuda device).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileNvrtcImage(const Function& primitive);

// The generated CUDA source and its PTX (tests: ptxas).
struct NvrtcImageProgram {
  std::string source;
  std::string ptx;
};
absl::StatusOr<NvrtcImageProgram> NvrtcImageSource(const Function& primitive);

// "nvrtc.image".
const KernelProvider& NvrtcImageProvider();

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_NVRTC_IMAGE_H_
