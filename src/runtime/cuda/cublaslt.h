// cuBLASLt for the cuda device's dense and batch_matmul kernels (docs/cuda.md, "Kernels"), without CUDA types.
// The library is opened with dlopen on first use (linking it adds about 0.4 s to every process
// start, and the binaries must start on machines without it); CublasLtLibrary() says which file
// was loaded. Built only with the CUDA device (HETPASS_HAS_CUDA).
#ifndef HETPASS_RUNTIME_CUDA_CUBLASLT_H_
#define HETPASS_RUNTIME_CUDA_CUBLASLT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/runtime/device.h"

namespace hetpass::runtime::cuda_api {

// The cuBLASLt shared library: $HETPASS_CUBLASLT, else libcublasLt.so.13 / libcublasLt.so on
// the loader's path, else $CUDA_HOME/lib64 and /usr/local/cuda/lib64. Opened once per process;
// FailedPrecondition naming every place tried when none loads. Returns the path loaded.
absl::StatusOr<std::string> CublasLtLibrary();

// out[m, n] = data[m, k] x weight[n, k]^T (+ bias[n]) (then max(., 0) with relu), f32,
// row-major, all device pointers of the cuda device.
struct DenseCall {
  int64_t m = 0, n = 0, k = 0;
  const float* data = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;  // nullptr: no bias
  float* out = nullptr;
  bool relu = false;
};

// out[i] = a[i] x b[i] for i < batch, row-major f32 [m, k] x [k, n] -> [m, n]; matrix i of a
// starts stride_a elements after matrix i - 1 (0: one matrix broadcast to every i), likewise
// b; out's matrices are dense (stride m * n). All device pointers of the cuda device.
struct BatchMatmulCall {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t stride_a = 0, stride_b = 0;
  const float* a = nullptr;
  const float* b = nullptr;
  float* out = nullptr;
};

// Check that cuBLASLt accepts the operation and matrix descriptors of a call's shape (creates
// and destroys them; needs the library, not a GPU).
absl::Status CheckDenseDescriptors(const DenseCall& call);
absl::Status CheckBatchMatmulDescriptors(const BatchMatmulCall& call);

// The GEMMs of one kernel instance: per shape (and epilogue, batch and strides) the descriptors
// and the heuristic's algorithm, made on first use and kept (the batch, hence m, is dynamic).
// Run enqueues on `stream` (the device's), taking its workspace from `workspace` (released at
// once: the pool's next user is ordered after this GEMM on the same stream). Thread-safe.
class Gemms {
 public:
  // Opens cuBLASLt and creates its handle (needs a GPU).
  static absl::StatusOr<std::unique_ptr<Gemms>> Create();
  ~Gemms();
  Gemms(const Gemms&) = delete;
  Gemms& operator=(const Gemms&) = delete;
  absl::Status Run(const DenseCall& call, void* stream, PoolingAllocator* workspace);
  absl::Status Run(const BatchMatmulCall& call, void* stream, PoolingAllocator* workspace);
  // Plans made so far (tests: one per distinct shape).
  int64_t plans() const;

 private:
  struct Impl;
  explicit Gemms(std::unique_ptr<Impl> impl);
  // `gemm` is the file's internal GEMM description (no cuBLASLt type in this header).
  absl::Status Enqueue(const void* gemm, const void* a, const void* b, const void* bias, void* d, void* stream,
                       PoolingAllocator* workspace);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_CUBLASLT_H_
