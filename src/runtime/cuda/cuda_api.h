// What the compile engine's CUDA kernels need from the cuda device, without CUDA types
// (docs/cuda.md): loading PTX, launching a kernel on the device's stream, the device-side error
// word. Built only with the CUDA device (cmake/cuda.cmake: HETPASS_HAS_CUDA); callers guard
// their uses with `#if HETPASS_HAS_CUDA`.
#ifndef HETPASS_RUNTIME_CUDA_CUDA_API_H_
#define HETPASS_RUNTIME_CUDA_CUDA_API_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/runtime/device.h"

namespace hetpass::runtime::cuda_api {

// PTX loaded into the current context through cudart's library API (the driver compiles it for
// the GPU's architecture). Errors carry the driver's JIT log.
class PtxModule {
 public:
  static absl::StatusOr<std::unique_ptr<PtxModule>> Load(const std::string& ptx,
                                                         absl::string_view what);
  ~PtxModule();
  PtxModule(const PtxModule&) = delete;
  PtxModule& operator=(const PtxModule&) = delete;
  // The kernel `name` (a cudaKernel_t, launchable with Launch), compiled for the GPU now (so a
  // rejected PTX fails here, not at a launch).
  absl::StatusOr<const void*> Kernel(const std::string& name) const;

 private:
  PtxModule() = default;
  void* library_ = nullptr;
  std::string what_;  // for errors
};

// Enqueues `kernel` on `stream` (the device's native queue) with `params` (pointers to each
// parameter's bytes, cudaLaunchKernel's convention). Launch errors name `what`.
absl::Status Launch(const void* kernel, void* stream, uint32_t grid, uint32_t block, void** params,
                    absl::string_view what);

// Enqueues zeroing `bytes` at `ptr` (device memory) on `stream`.
absl::Status ZeroAsync(void* ptr, size_t bytes, void* stream);

// The error word of `device`, or InvalidArgument "<who> runs on the cuda device, not on <device>"
// when it is not the cuda device: what every CUDA kernel's Instantiate checks first.
absl::StatusOr<uint32_t*> RequireCudaDevice(Device* device, absl::string_view who);

// The cuda device's error word (a device address the kernels OR their error flags into; the
// device checks it at each counted synchronisation), or nullptr when `device` is not cuda.
uint32_t* ErrorWord(Device* device);
// The number of streaming multiprocessors of `device`'s GPU (0 when it is not cuda).
int MultiprocessorCount(Device* device);
// The bits of the error word, as the JIT's kernels set them (compile_engine/jit/loop_plan.h
// asserts they agree).
inline constexpr uint32_t kErrorDivisionByZero = 1;
inline constexpr uint32_t kErrorIndexOutOfRange = 2;
// Set by the NVRTC algorithm kernels (compile_engine/cuda/nvrtc_algorithm.cc).
inline constexpr uint32_t kErrorNmsIouThreshold = 4;
inline constexpr uint32_t kErrorCountChanged = 8;
// Set by the NVRTC image kernels (compile_engine/cuda/nvrtc_image.cc): a roi's batch index is
// data the kernel reads on the GPU, so only the GPU can tell it is outside the batch.
inline constexpr uint32_t kErrorRoiBatchIndex = 16;

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_CUDA_API_H_
