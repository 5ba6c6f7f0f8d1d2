// The 2-D pooling kernel of the CPU kernel library: a primitive function whose body is
//
//   %y = nn.max_pool2d(%x) {...}    or    %y = nn.avg_pool2d(%x) {...}
//   return %y                       x f32[N, C, H, W] (NCHW, any dim symbolic), or
//                                   f32[N, C/b, H, W, b] (layout NCHW<b>c, b in 4, 8, 16)
//
// runs as ONE oneDNN 2.6 pooling_v2_forward (forward_inference; v2 for dilation) on the
// tensors as they are stored (nchw, or oneDNN's own nChw<b>c for a blocked layout, which is
// where block-conv-layout puts the pool of a ResNet stem: no reorder around it), instead of the registry's reference kernel (a scalar double loop: ~730 us for
// the 3x3 stride-2 max pool of a ShuffleNet stem on f32[1, 16, 48, 64]). Every ResNet /
// ShuffleNet stem has one. Other dtypes and layouts, and nn.max_pool2d_with_indices (oneDNN's
// workspace is not ONNX's flat index) stay on the reference kernel.
//
// Why oneDNN computes exactly what the reference does (src/shape_funcs/nn.cc). Per spatial
// axis: input I, kernel K, stride S, dilation D, padding P0 (top/left) and P1 (bottom/right),
// window extent E = D*(K-1) + 1; the taps of output o are o*S - P0 + j*D, j in [0, K).
//   size      the registry's (TVM's) rule: O = floor((I + P0 + P1 - E [+ S - 1 with
//             ceil_mode]) / S) + 1, with no correction for a last window that starts in the
//             padding. oneDNN wants (I - E + P0 + R) / S + 1 == O, so it gets padding_l = P0
//             and padding_r = R = max(P1, (O-1)*S + E - I - P0): the extra right padding that
//             ceil_mode's last window reaches ("overhang"; R == P1 without ceil_mode).
//   max       both take the maximum over the taps inside the input only (padding never wins),
//             comparing with `>` / std::max so that a NaN never replaces a value; oneDNN starts
//             from -FLT_MAX where the reference starts from -inf, so oneDNN's result is
//             max(-FLT_MAX, reference). Every output equal to -FLT_MAX is therefore rescanned:
//             it stays if one of its taps holds -FLT_MAX, else it becomes -inf (a window
//             entirely in the padding, or of -inf / NaN only). Measured: the jit:avx512 and
//             simple_nchw / ref implementations all skip NaNs as the reference does.
//   avg, count_include_pad = 0   both divide the sum of the taps inside the input by their
//             number. A window with no tap inside gives 0 in the reference, while oneDNN
//             refuses the descriptor (or would divide by 0): such a shape runs the reference.
//   avg, count_include_pad = 1   oneDNN divides by K*K always; the reference by the number of
//             taps inside the padded input [-P0, I + P1), which is K*K exactly when no window
//             overhangs (R == P1). ONNX's / PyTorch's ceil_mode window must not count its
//             overhang, so an overhanging shape runs the reference (never oneDNN's divisor).
//             The sums are f32 in oneDNN, double in the reference: a few ulps apart.
//
// Refusals: the group is not taken (Unimplemented, so the reference provider runs it and the
// profile says so) when it is not the body above over f32 data in one of those layouts, when H and W are static
// and that shape would not run on oneDNN (by the rules above), and for avg with
// count_include_pad and ceil_mode when H or W is symbolic (the overhang cannot be ruled out).
// A taken group whose call meets such a shape anyway (symbolic H/W: an empty exclude-pad
// window, H or W = 0, or a descriptor oneDNN refuses) runs the registry's reference kernel for
// that call, so every call is exact.
//
// Dynamic shapes: one primitive per distinct data shape, created on first sight (at
// Instantiate when the data's shape is static) and cached in the instance (mutex-guarded; at
// most kMaxCachedShapes, then the cache restarts), as the dense and conv kernels do. Executed on
// the calling thread's stream and user scratchpad with KernelLibraryThreads() OpenMP threads.
//
// Errors: arguments that do not match the function (count, dtype, rank, output shape) are
// InvalidArgument naming the function and the argument; a oneDNN failure is Internal.
#ifndef HETPASS_COMPILE_ENGINE_POOL_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_POOL_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is a primitive function whose body is the single binding
// nn.max_pool2d(x) or nn.avg_pool2d(x) over an f32 rank-4 NCHW parameter, returned, with
// well-formed attributes, and oneDNN computes it exactly as the reference does (see above:
// not for a static H, W that needs the reference, nor for avg with count_include_pad and
// ceil_mode over a symbolic H or W).
bool IsPoolGroup(const Function& primitive);

// The kernel for a pool group; InvalidArgument (naming the function) if !IsPoolGroup.
// Describe(): "onednn max_pool2d", "onednn avg_pool2d" or "onednn avg_pool2d[include_pad]".
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompilePoolGroup(const Function& primitive);

namespace pool_kernel_internal {
// Primitives cached per instance before the cache restarts.
inline constexpr int kMaxCachedShapes = 64;
}  // namespace pool_kernel_internal

// "onednn.pool2d": single nn.max_pool2d / nn.avg_pool2d groups (IsPoolGroup).
const KernelProvider& PoolKernelProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_POOL_KERNEL_H_
