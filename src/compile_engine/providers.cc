// The ordered kernel providers of each device kind (kernel_provider.h). The engine tries them
// first to last; the first that does not answer Unimplemented wins, so the order is a
// preference: the most specialised and fastest first, the reference interpreter last.
//
// cpu and sim (sim simulates an accelerator in host memory, so it runs the host's kernels
// inside its launches):
//    1. onednn.dense              nn.dense [+ bias_add] [+ relu], weights prepacked at load
//    2. onednn.conv2d             nn.conv2d [+ bias_add] [+ residual add] [+ relu]
//    3. onednn.conv2d_transpose   nn.conv2d_transpose [+ bias_add] [+ relu]
//    4. onednn.batch_matmul       nn.batch_matmul
//    5. onednn.pool2d             a single nn.max_pool2d / nn.avg_pool2d, f32 NCHW or
//                                 NCHW<b>c, when oneDNN computes exactly the reference's result
//                                 (pool_kernel.h)
//    6. onednn.reorder            layout_transform [+ view ops] (reorder_kernel.h)
//    7. native.reduce             reductions with elementwise steps around them; softmax
//    8. native.image              roi_align, resize2d, constant pad, fills (single ops)
//    9. native.creation           arange, and the fills of the other dtypes (single ops):
//                                 creation_kernel.h
//   10. native.argreduce          a single argmax / argmin (arg_reduce_kernel.h)
//   11. view.copy                 a single reshape-like view op: a byte copy
//   12. onednn+llvm.split         a library head (1-2) with a JIT-compiled elementwise tail
//   13. llvm.elementwise          elementwise / broadcast bodies: one vectorised loop nest
//   14. llvm.injective            bodies with layout ops too: one scalar loop nest
//   15. reference                 every registered op, op by op (the oracle of the tests)
// The library providers come before the JIT because a GEMM or convolution group is faster in
// the library even when the JIT could express it, and the split provider comes after the
// whole-group providers so that a group one provider takes entirely is never split.
//
// cuda (docs/cuda.md):
//    1. cudnn.conv2d              nn.conv2d [+ bias_add] [+ relu] with symmetric padding: cuDNN
//                                 forward (bias + ReLU fused where cuDNN allows)
//    2. cudnn.conv2d_transpose    nn.conv2d_transpose [+ bias_add] [+ relu], symmetric padding:
//                                 cuDNN backward-data, then bias and ReLU in place
//    3. cublaslt.dense            nn.dense [+ bias] [+ relu]: one cuBLASLt matmul with epilogue
//    4. cublaslt.batch_matmul     nn.batch_matmul: strided-batched cuBLASLt matmuls
//    5. cublaslt/cudnn+nvptx.split  a cuBLASLt dense or cuDNN conv2d head with an NVPTX
//                                 elementwise tail, in place
//    6. nvrtc.reduce              reductions with their steps (any axis set) and softmax: CUDA C++
//                                 generated per group, compiled by NVRTC
//    7. nvrtc.algorithm           count_nonzero / argwhere, non_max_suppression (+ its counter),
//                                 topk: NVRTC kernels, so counters run on the GPU
//    8. nvrtc.image               roi_align, resize2d, constant pad, fills (single ops, the groups
//                                 native.image takes): NVRTC kernels, one thread per element
//    9. nvptx.injective           elementwise / broadcast / layout bodies: one NVPTX kernel from
//                                 the JIT's loop plan, one output element per thread
// Every other op (convolutions with asymmetric padding, argmax, resize's cubic method, pad's
// edge / reflect modes) has no CUDA kernel yet, so plan-devices keeps it on the host for target=cuda and its copies
// appear in the ledger: there is no hidden host fallback.
//
// A new device adds its list here (and a runtime::Device); nothing else in the engine changes.
#include "passes/compile_engine/kernel_provider.h"

#include "compile_engine/arg_reduce_kernel.h"
#include "compile_engine/batch_matmul_kernel.h"
#include "compile_engine/builtin_providers.h"
#include "compile_engine/conv_kernel.h"
#include "compile_engine/creation_kernel.h"
#include "compile_engine/cuda/cublaslt_dense.h"
#include "compile_engine/cuda/cudnn_conv.h"
#include "compile_engine/cuda/nvptx_kernel.h"
#include "compile_engine/cuda/nvrtc_algorithm.h"
#include "compile_engine/cuda/nvrtc_image.h"
#include "compile_engine/cuda/nvrtc_reduce.h"
#include "compile_engine/deconv_kernel.h"
#include "compile_engine/dense_kernel.h"
#include "compile_engine/image_kernel.h"
#include "compile_engine/jit/kernels.h"
#include "compile_engine/pool_kernel.h"
#include "compile_engine/reduce_kernel.h"
#include "compile_engine/reorder_kernel.h"
#include "compile_engine/split_kernel.h"

namespace hetpass {

absl::Span<const KernelProvider* const> KernelProviders(DeviceKind device) {
  static const KernelProvider* const kHostMemory[] = {
      &DenseKernelProvider(),       &ConvKernelProvider(),       &DeconvKernelProvider(),
      &BatchMatmulKernelProvider(), &PoolKernelProvider(),       &ReorderKernelProvider(),
      &ReduceKernelProvider(),      &ImageKernelProvider(),      &CreationKernelProvider(),
      &ArgReduceKernelProvider(),
      &ViewCopyProvider(),          &SplitKernelProvider(),      &JitElementwiseProvider(),
      &JitInjectiveProvider(),      &ReferenceProvider(),
  };
  static const KernelProvider* const kCuda[] = {
      &cuda::CudnnConvProvider(),   &cuda::CudnnDeconvProvider(),     &cuda::CublasLtDenseProvider(),
      &cuda::CublasLtBatchMatmulProvider(), &CudaSplitKernelProvider(), &cuda::NvrtcReduceProvider(),
      &cuda::NvrtcAlgorithmProvider(), &cuda::NvrtcImageProvider(),  &cuda::NvptxProvider()};
  switch (device) {
    case DeviceKind::kCpu:
    case DeviceKind::kSim:
    case DeviceKind::kUnset:  // unplaced: the host's
      return kHostMemory;
    case DeviceKind::kCuda:
      return kCuda;
    default:
      return {};
  }
}

int64_t PreferredConvBlock(DeviceKind device) {
  return device == DeviceKind::kCpu || device == DeviceKind::kSim ? OnednnConvBlock() : 0;
}

}  // namespace hetpass
