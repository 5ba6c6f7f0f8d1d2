// The cuda device's convolution kernels (docs/cuda.md, "Kernels"): the groups the host's oneDNN
// conv2d and conv2d_transpose take (group_match.h's MatchConvGroup / MatchDeconvGroup, shared
// by both), nn.conv2d or nn.conv2d_transpose [+ bias_add] [+ relu] over f32 NCHW, each as cuDNN
// calls on the device's stream (runtime/cuda/cudnn.h: per-shape plans, the heuristic's
// algorithm, no TF32). cuDNN's legacy descriptors have one padding per axis, so a group with
// asymmetric padding (4-int padding with top != bottom or left != right) is not taken and stays
// where the planner puts groups no cuda provider takes. Compiling needs neither cuDNN nor a
// GPU; instantiating opens cuDNN (FailedPrecondition naming the places tried where it is
// missing) and creates its handle on the cuda device.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_CUDNN_CONV_H_
#define HETPASS_COMPILE_ENGINE_CUDA_CUDNN_CONV_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass::cuda {

// Unimplemented for functions that are not a conv (deconv) group with symmetric padding.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCudnnConv(const Function& primitive);
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCudnnDeconv(const Function& primitive);

// "cudnn.conv2d" and "cudnn.conv2d_transpose".
const KernelProvider& CudnnConvProvider();
const KernelProvider& CudnnDeconvProvider();

// Builds the cuDNN problem of a conv or deconv group for one call's arguments (parameters then
// the result, as Run receives them; only shapes and dtypes are read), with Run's argument
// checks and errors, and checks its descriptors with cuDNN (CheckConvDescriptors: needs the
// library, not a GPU). Unimplemented for other groups or a build without the cuda device.
absl::Status CheckCudnnDescriptors(const Function& primitive, absl::Span<const TensorArg> args);

// The plans an instance of these kernels has made (tests); -1 for another kernel's instance.
int64_t CudnnPlans(const KernelInstance& instance);

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_CUDNN_CONV_H_
