// PTX from LLVM IR for the cuda device (docs/cuda.md, "Kernels"): LLVM 16's NVPTX backend, the
// module linked with CUDA's libdevice, optimised at O3 and printed as PTX.
//
// One PTX for every GPU: the code targets compute_80 (PTX ISA 7.8, sm_80), the lowest
// architecture this project supports, because PTX must target the lowest architecture it is
// assembled for (compute_80 PTX assembles for sm_80, sm_90 and sm_100; compute_90 PTX does not
// for sm_80: shared/DEPENDENCIES.md section 8). The driver (through cudart's library loader)
// compiles it for the device at load time.
//
// This header exposes LLVM types; only src/compile_engine includes it.
#ifndef HETPASS_COMPILE_ENGINE_CUDA_PTX_CODEGEN_H_
#define HETPASS_COMPILE_ENGINE_CUDA_PTX_CODEGEN_H_

#include <string>

#include "absl/status/statusor.h"

namespace llvm {
class Module;
}  // namespace llvm

namespace hetpass::cuda {

inline constexpr const char* kPtxTargetCpu = "sm_80";
inline constexpr const char* kPtxFeatures = "+ptx78";

// Where libdevice.10.bc is: $HETPASS_LIBDEVICE if set, else the toolkit's found at configure
// time, else $CUDA_HOME / $CUDA_PATH / /usr/local/cuda; NotFound naming every place tried.
absl::StatusOr<std::string> LibdevicePath();

// Verifies `module` (target nvptx64-nvidia-cuda, kernels marked in nvvm.annotations), links
// the libdevice functions it calls (__nv_*), internalises everything but the kernels,
// optimises at O3 for sm_80 and returns the PTX. Internal naming the module on an LLVM error.
// Thread-safe (each call builds its own TargetMachine).
absl::StatusOr<std::string> CompileToPtx(llvm::Module& module);

}  // namespace hetpass::cuda

#endif  // HETPASS_COMPILE_ENGINE_CUDA_PTX_CODEGEN_H_
