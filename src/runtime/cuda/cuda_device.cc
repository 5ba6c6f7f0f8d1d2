// The cuda device over the CUDA runtime API (see cuda_device.h). The runtime is linked
// statically and loads the driver itself on first use, so a binary starts on a machine without
// one; every call's error is turned into a Status naming the call, the error's name and number,
// and CUDA's own description.
#include "runtime/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"

namespace hetpass::runtime {
namespace {

std::string CudaErrorText(cudaError_t e) {
  return absl::StrCat(cudaGetErrorName(e), " (", static_cast<int>(e), "): ", cudaGetErrorString(e));
}

}  // namespace

absl::Status ProbeCuda() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda: no usable GPU: cudaGetDeviceCount failed with ", CudaErrorText(e)));
  }
  if (count == 0) {
    return absl::FailedPreconditionError("cuda: no usable GPU: cudaGetDeviceCount found no device");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Device>> MakeCudaDevice() {
  if (absl::Status s = ProbeCuda(); !s.ok()) return s;
  int driver = 0, runtime = 0, count = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaGetDeviceCount(&count);
  return absl::UnimplementedError(absl::StrCat(
      "cuda: ", count, " GPU(s) found (driver ", driver, ", runtime ", runtime,
      "), but the cuda device's memory, copies and launches are not written yet (issue 13)"));
}

}  // namespace hetpass::runtime
