// The compile engine's provider lists, as the fuzz build has them: only the built-in view copy
// and reference interpreter. It stands in for src/compile_engine/providers.cc there.
//
// Why: vm_load_fuzzer runs VirtualMachine::Load, which asks the compile engine for a kernel per
// call site. The native providers (oneDNN for dense/conv/batch_matmul, native loops, the LLVM
// JIT) would pull oneDNN and LLVM into the fuzz build (their sources cost ~17 s each to
// compile, and a JIT compile per input would cut the fuzzer's speed a hundredfold), and the
// loader is what is fuzzed here, not the code generators. So every group gets the reference
// kernel, the engine's own fallback for every registered op. The declaration comes from the
// engine's header, so a change there fails this build instead of drifting.
#include "passes/compile_engine/kernel_provider.h"

#include "compile_engine/builtin_providers.h"

namespace hetpass {

absl::Span<const KernelProvider* const> KernelProviders(DeviceKind device) {
  static const KernelProvider* const kHostMemory[] = {&ViewCopyProvider(), &ReferenceProvider()};
  if (device == DeviceKind::kCpu || device == DeviceKind::kSim || device == DeviceKind::kUnset) {
    return kHostMemory;
  }
  return {};
}

// No blocked convolution kernels here (the reference runs any layout): default pipelines keep
// NCHW.
int64_t PreferredConvBlock(DeviceKind) { return 0; }

}  // namespace hetpass
