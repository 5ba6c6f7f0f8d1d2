// The channel-layout reorder of the CPU kernel library: a primitive function whose body is
//
//   %t = layout_transform(%x) {src_layout, dst_layout}   x f32, NCHW or NCHW<b>c (b 4, 8, 16)
//   %v = <view op>(%t)        zero or more single-operand view ops (reshape, squeeze, ...)
//   return %v (or %t)
//
// runs as ONE oneDNN reorder between the two layouts (nchw <-> nChw<b>c, or between two
// blocks), the views being free: they reinterpret the transform's row-major bytes. Why: these
// are the edges of block-conv-layout's blocked chains (an image entering the first blocked
// convolution, a ResNet's pooled features leaving for the classifier, fused with its flatten),
// and as JIT kernels they were scalar loop nests whose code generation also cost LLVM's memory
// on a cold kernel cache (ResNet-50 had only such kernels left on the JIT).
//
// The result is the reference's exactly: a reorder moves elements, each once. Dynamic shapes:
// one reorder per data shape, cached in the instance (mutex-guarded; at most kMaxCachedShapes,
// then the cache restarts). Errors: arguments that do not fit (count, dtype, rank, a blocked
// data whose last dim is not its block, channels that do not split into the destination's
// blocks, a result of another size) are InvalidArgument naming the function; a oneDNN failure
// is Internal.
#ifndef HETPASS_COMPILE_ENGINE_REORDER_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_REORDER_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

// True if `primitive` is the group described above.
bool IsReorderGroup(const Function& primitive);

// The kernel for such a group; InvalidArgument (naming the function) for any other function.
// Describe(): "onednn reorder NCHW16c->NCHW" (+ " [reshape]", the views it absorbed).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReorderGroup(const Function& primitive);

// "onednn.reorder": the groups above; fuses layout_transform and the view ops.
const KernelProvider& ReorderKernelProvider();

namespace reorder_kernel_internal {
inline constexpr int kMaxCachedShapes = 64;
}  // namespace reorder_kernel_internal

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_REORDER_KERNEL_H_
