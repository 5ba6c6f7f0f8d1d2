// NVRTC for the cuda device's source-generated kernels (reductions, softmax, ...; docs/cuda.md,
// "Kernels"), without CUDA types. NVRTC compiles offline (no GPU, no driver), so every generated
// kernel is compiled and its PTX checked on machines without a GPU. The library is opened with
// dlopen on first use: $HETPASS_NVRTC, else libnvrtc.so.13 on the loader's path, $CUDA_HOME/lib64
// or /usr/local/cuda/lib64. Built only with the CUDA device (HETPASS_HAS_CUDA).
#ifndef HETPASS_RUNTIME_CUDA_NVRTC_H_
#define HETPASS_RUNTIME_CUDA_NVRTC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hetpass::runtime::cuda_api {

// The architecture generated PTX targets: the lowest one we promise, so that the PTX assembles
// for sm_80, sm_90 and later (a GPU's driver compiles it for itself at load).
inline constexpr const char* kNvrtcArchitecture = "compute_80";

// The PTX of `source` (CUDA C++, no #include), compiled for kNvrtcArchitecture without FMA
// contraction (--fmad=false: results round as the host kernels' do). Cached per process by the
// source text, so a kernel shared by many call sites or shapes compiles once. `what` names the
// kernel in errors, which carry NVRTC's log.
absl::StatusOr<std::string> CompileCudaSource(const std::string& source, absl::string_view what);

// The NVRTC library loaded (FailedPrecondition naming the places tried when none loads).
absl::StatusOr<std::string> NvrtcLibrary();

// Compilations so far and cache hits (tests).
struct NvrtcCacheStats {
  int64_t compiled = 0;
  int64_t hits = 0;
};
NvrtcCacheStats NvrtcStats();

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_NVRTC_H_
