// cuDNN 9's legacy convolution API for the cuda device's conv2d and conv2d_transpose kernels
// (docs/cuda.md, "Kernels"), without CUDA types. The library is opened with dlopen on first
// use, as cuBLASLt is (linking it adds about 0.4 s to every process start, and the binaries
// must start on machines without it); CudnnLibrary() says which file was loaded. Built only
// with the CUDA device (HETPASS_HAS_CUDA).
//
// Without a GPU (this project's CI) the library still opens and every descriptor call works
// (tensor, filter, convolution, activation descriptors; cudnnGetConvolutionNdForwardOutputDim):
// CheckConvDescriptors exercises exactly those, so the descriptors of every shared model's
// convolutions are checked there. cudnnCreate fails without a GPU (CUDNN_STATUS_NOT_INITIALIZED,
// 1001), and with it algorithm choice, workspace sizes and every call that runs a kernel.
#ifndef HETPASS_RUNTIME_CUDA_CUDNN_H_
#define HETPASS_RUNTIME_CUDA_CUDNN_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/runtime/device.h"

namespace hetpass::runtime::cuda_api {

// The cuDNN shared library: $HETPASS_CUDNN, else libcudnn.so.9 / libcudnn.so on the loader's
// path, else $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (the GPU runner points HETPASS_CUDNN at
// a PyTorch wheel's nvidia/cudnn/lib/libcudnn.so.9 where the toolkit has none). Opened once per
// process; FailedPrecondition naming every place tried when none loads. Returns the path loaded.
absl::StatusOr<std::string> CudnnLibrary();

// One f32 NCHW convolution problem, sizes as the compile engine computed them (group_match.h).
//   forward     out[n, oc, oh, ow] = conv(data[n, c, h, w], weight[oc, c / groups, kh, kw])
//   transposed  out[n, oc, oh, ow] = conv_transpose(data[n, c, h, w],
//               weight[c, oc / groups, kh, kw]): cuDNN's backward-data of the forward
//               convolution from `out` to `data`, whose filter is that weight as stored
// then + bias[oc] (bias) and max(., 0) (relu). Padding is symmetric (cuDNN's legacy descriptor
// has one per axis); output_padding is implicit in (oh, ow).
struct ConvProblem {
  bool transposed = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t oc = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0;
  int64_t groups = 1;
  std::array<int64_t, 2> stride = {1, 1}, pad = {0, 0}, dilation = {1, 1};
  bool bias = false, relu = false;

  // The plan cache's key: every field.
  std::array<int64_t, 19> Key() const;
  // "conv [n, c, h, w] x [oc, c/g, kh, kw] -> [n, oc, oh, ow] (stride .., pad .., ...)", for errors.
  std::string ToString() const;
};

// The device pointers of one call (bias null without bias).
struct ConvPointers {
  const float* data = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
};

// Creates the data, filter, output, bias and convolution descriptors of `p` and checks that
// cuDNN's own output size agrees with ours (cudnnGetConvolutionNdForwardOutputDim: the output's
// for a forward problem; the data's, from the output, for a transposed one). Needs the library,
// not a GPU. InvalidArgument naming the problem when cuDNN refuses it or the sizes differ.
absl::Status CheckConvDescriptors(const ConvProblem& p);

// The convolutions of one kernel instance: per problem its descriptors, the algorithm cuDNN's
// heuristic ranks first among those that fit the workspace limit and run without TF32, and
// that algorithm's workspace size, made on first use and kept (the batch and, in Mask R-CNN's
// heads, the detection count are dynamic). Run enqueues on `stream` (the device's), taking its
// workspace from `workspace` (released at once: the pool's next user is ordered after this
// call on the same stream). Thread-safe.
class Convolutions {
 public:
  // Opens cuDNN and creates its handle (needs a GPU).
  static absl::StatusOr<std::unique_ptr<Convolutions>> Create();
  ~Convolutions();
  Convolutions(const Convolutions&) = delete;
  Convolutions& operator=(const Convolutions&) = delete;
  absl::Status Run(const ConvProblem& p, const ConvPointers& ptr, void* stream, PoolingAllocator* workspace);
  // Plans made so far (tests: one per distinct problem).
  int64_t plans() const;

 private:
  struct Impl;
  explicit Convolutions(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_CUDNN_H_
