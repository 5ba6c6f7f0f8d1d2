// The conv2d kernel of the CPU kernel library: a primitive function whose body is
//
//   %h = nn.conv2d(%data, %weight) {...}      data f32[N, C, H, W] (N, H, W may be symbolic),
//                                            weight f32[OC, C / groups, KH, KW]
//   %h = nn.bias_add(%h, %bias) {axis = 1}    optional (axis 1 or -3), bias f32[OC]
//   %h = add(%h, %residual)                   optional, blocked results only: a parameter
//                                            of exactly %h's type (a ResNet skip connection)
//   %h = nn.relu(%h)                          optional
//   return %h                                 f32[N, OC, OH, OW]
//
// runs as ONE oneDNN 2.6 convolution_forward (forward_inference, convolution_direct) with the
// bias fused as the convolution's bias argument, the residual as a `sum` post-op (the result
// buffer is filled with the residual first) and the ReLU as an eltwise_relu post-op.
//
// Attributes (the registry's semantics, src/shape_funcs/nn.cc):
//   strides, dilation  1 or 2 positive ints ([s] means [s, s]); oneDNN's dilation is ours - 1
//   padding            1 int (all sides), 2 ints (top/bottom, left/right) or 4 ints (top, left,
//                      bottom, right); oneDNN gets padding_l = {top, left}, padding_r = {bottom,
//                      right}; the output is floor((H + top + bottom - dil*(KH-1) - 1) / s) + 1
//   groups             any positive divisor of C and OC: groups = 1 is a plain convolution,
//                      groups > 1 (depthwise: groups = C = OC) uses oneDNN's grouped weights
//                      (OIHW row-major is goihw)
//   data_layout/kernel_layout  NCHW / OIHW only (the only ones the registry accepts)
//   channels, kernel_size      checked by type inference; ignored here
//
// Layout: the caller's data and result are plain NCHW; the convolution runs on the src/dst
// layouts oneDNN picks (`format_tag::any`: blocked nChw16c on AVX-512, where its brgemm
// convolution runs), with a reorder from the data and one into the result around it, in a
// per-thread scratch buffer. Measured on one thread, reorders included (bench/
// conv_kernel_bench.cc and a standalone sweep): 3->16 3x3 on 32x32 N = 1 16 us vs 27 us with
// plain NCHW src/dst (oneDNN then falls back to im2col + sgemm, `gemm:jit`); 16->16 3x3 31 vs
// 163 us; 16->32 3x3 stride 2 16 vs 41 us; 64->64 3x3 on 8x8 21 vs 123 us. When the picked
// layout is plain (no blocked kernel for the problem) the reorders are skipped.
// Weights: constant (bound by the call site) are reordered once into the layout oneDNN picks
// (`format_tag::any`) when the first primitive is created (at Instantiate when data's C, H, W
// are static) and cached per layout; run-time weights are used in place as plain (g)oihw.
//
// Dynamic shapes: a primitive is created for each distinct (data shape, weight shape) the
// first time it is seen and cached in the instance (mutex-guarded; at most kMaxCachedShapes,
// then the cache restarts), as the dense kernel does.
//
// Threads: KernelLibraryThreads() OpenMP threads around each primitive creation and execution.
// Any thread may run a cached primitive: the scratchpad is user-managed, one buffer per calling
// thread (oneDNN's own lives with the thread that created the primitive).
//
// Errors: arguments that do not match the function (count, dtype, rank, channels, groups, bias
// size, output shape, a window larger than the padded input) are InvalidArgument naming the
// function and the argument; a oneDNN failure is Internal. Nothing aborts.
#ifndef HETPASS_COMPILE_ENGINE_CONV_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_CONV_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is a primitive function (`primitive = true`) whose body is
// nn.conv2d(data, weight) with NCHW/OIHW layouts and well-formed strides, padding, dilation and
// groups, optionally followed by nn.bias_add(., bias, axis = 1 or -3) and then optionally by
// nn.relu, all f32 (data and weight rank 4, bias rank 1), with data, weight and bias distinct
// parameters and the last binding the single result.
bool IsConvGroup(const Function& primitive);

// The kernel for a conv group. InvalidArgument (naming the function) if !IsConvGroup.
// Describe() gives e.g. "onednn conv2d[bias,relu] packed".
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileConvGroup(const Function& primitive);

namespace conv_kernel_internal {
// Primitives cached per instance before the cache restarts.
inline constexpr int kMaxCachedShapes = 64;
// The run of a shape on which a Winograd-eligible group switches from the direct kernel to
// Winograd (conv_kernel.cc: the Winograd weight transform is paid there, not at load).
inline constexpr int kWinogradAfterRuns = 2;
}  // namespace conv_kernel_internal

// "onednn.conv2d": conv groups (IsConvGroup); fuses the bias and ReLU epilogue.
const KernelProvider& ConvKernelProvider();

// The channel block oneDNN's convolutions compute in on this machine: 16 (nChw16c) on AVX-512,
// 8 on AVX2, else 0 (PreferredConvBlock for the host's devices).
int64_t OnednnConvBlock();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_CONV_KERNEL_H_
