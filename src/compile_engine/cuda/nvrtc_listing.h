// How the NVRTC kernels show their code (CompiledKernel::Listing, `hetpass-opt --emit-kernels`):
// the CUDA source, then the PTX after a marker line that tests split on. No CUDA types, so it is
// available in builds without the cuda device too.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_NVRTC_LISTING_H_
#define HETPASS_COMPILE_ENGINE_CUDA_NVRTC_LISTING_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hetpass::cuda {

inline constexpr char kNvrtcPtxMarker[] = "\n// PTX\n";

inline std::string NvrtcListing(absl::string_view source, absl::string_view ptx) {
  return absl::StrCat("// CUDA source (NVRTC)\n", source, kNvrtcPtxMarker, ptx);
}

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_NVRTC_LISTING_H_
