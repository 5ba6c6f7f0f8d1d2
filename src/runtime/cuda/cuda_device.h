// The cuda device (issue 13; docs/cuda.md), internal to the runtime. Built only when the CUDA
// toolkit is (cmake/cuda.cmake); CUDA types never leave src/runtime/cuda.
#ifndef HETPASS_RUNTIME_CUDA_CUDA_DEVICE_H_
#define HETPASS_RUNTIME_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/runtime/device.h"

namespace hetpass::runtime {

// OK when the CUDA runtime finds at least one GPU; otherwise FailedPrecondition naming the CUDA
// call and its error, e.g. "cuda: no usable GPU: cudaGetDeviceCount failed with
// cudaErrorInsufficientDriver (35): ..." on a machine without a driver.
absl::Status ProbeCuda();

// The device on GPU 0, or the probe's error without a GPU.
absl::StatusOr<std::unique_ptr<Device>> MakeCudaDevice();

// One line for reports: "NVIDIA H200, sm_90, 132 SMs, 143771 MiB, driver 13000, runtime 13000",
// or "no GPU (...)".
std::string CudaDescription();

}  // namespace hetpass::runtime

#endif  // HETPASS_RUNTIME_CUDA_CUDA_DEVICE_H_
