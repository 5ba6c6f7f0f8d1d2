// The transposed-convolution kernel of the CPU kernel library: a primitive function whose body is
//
//   %h = nn.conv2d_transpose(%data, %weight) {...}  data f32[N, C, H, W] (N, H, W may be
//                                                  symbolic), weight f32[C, OC / groups, KH, KW]
//   %h = nn.bias_add(%h, %bias) {axis = 1}         optional (axis 1 or -3), bias f32[OC]
//   %h = nn.relu(%h)                               optional
//   return %h                                      f32[N, OC, OH, OW]
//
// runs as ONE oneDNN 2.6 deconvolution_forward (forward_inference, deconvolution_direct)
// followed by one pass that adds the bias and applies the ReLU on the result. Not oneDNN's
// bias argument and eltwise post-op: its deconvolution applies them in slow generic loops
// (measured on the mask head below, one thread: 0.18 ms plain, 1.6 ms with its bias, 18-30 ms
// with its ReLU post-op; our pass ~0.1 ms). It exists for Mask R-CNN's mask head (a 2x2
// stride-2 ConvTranspose on [R, 32, 14, 14], R the detections), whose registry reference
// kernel is a scalar double-precision scatter loop (60-90 ms there).
//
// Attributes (the registry's semantics, src/shape_funcs/nn.cc):
//   strides, dilation  1 or 2 positive ints; oneDNN's dilation is ours - 1
//   padding            1, 2 or 4 ints (top, left, bottom, right): padding_l = {top, left},
//                      padding_r = {bottom, right} crop the output
//   output_padding     must be below the stride on each axis (else the group is not matched
//                      and the reference kernel runs): oneDNN checks a deconvolution's sizes
//                      as (OH - 1 - dil*(KH-1) + top + bottom) / stride + 1 == H with integer
//                      division, which admits exactly the registry's OH when output_padding <
//                      stride; the extra far rows are those no input reaches (0, + bias)
//   groups             any positive divisor of C: the weight [C, OC/groups, KH, KW] row-major
//                      is oneDNN's iohw (groups = 1) or giohw (grouped) layout as stored
//
// Layout: the caller's data and result are plain NCHW; the deconvolution runs on the src/dst
// layouts oneDNN picks (`format_tag::any`: blocked nChw16c on AVX-512, where its jit kernel
// runs; on plain layouts it falls back to gemm-based col2im, 1-5 ms on the mask head), with a
// reorder from the data and one into the result in a per-thread scratch buffer, skipped when
// the picked layout is plain. Constant weights are reordered once per layout oneDNN picks and
// kept; run-time weights are used in place as plain (g)iohw.
//
// Dynamic shapes: one primitive per distinct (data shape, weight shape), cached in the instance
// (mutex-guarded, at most kMaxCachedShapes, then the cache restarts), as the conv kernel does.
// Scratchpads are user-managed per calling thread (onednn::ThreadScratch), so any thread may run
// a cached primitive.
//
// Errors: arguments that do not match the function (count, dtype, rank, channels, groups, bias
// size, output shape) are InvalidArgument naming the function and the argument; a oneDNN
// failure is Internal. Nothing aborts.
#ifndef HETPASS_COMPILE_ENGINE_DECONV_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_DECONV_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is a primitive function whose body is nn.conv2d_transpose(data, weight)
// with well-formed attributes and output_padding below the stride, optionally followed by
// nn.bias_add(., bias, axis = 1 or -3) and then optionally nn.relu, all f32 (data and weight
// rank 4, bias rank 1), data, weight and bias distinct parameters, the last binding the result.
bool IsDeconvGroup(const Function& primitive);

// The kernel for a deconv group; InvalidArgument (naming the function) if !IsDeconvGroup.
// Describe() gives e.g. "onednn conv2d_transpose[bias,relu]".
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileDeconvGroup(const Function& primitive);

namespace deconv_kernel_internal {
// Primitives cached per instance before the cache restarts.
inline constexpr int kMaxCachedShapes = 64;
}  // namespace deconv_kernel_internal

// "onednn.conv2d_transpose": deconv groups (IsDeconvGroup); fuses the bias and ReLU epilogue.
const KernelProvider& DeconvKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_DECONV_KERNEL_H_
