// The compile engine's kernel providers, as the fuzz build has them: none.
//
// Why: vm_load_fuzzer runs VirtualMachine::Load, which asks the compile engine for a kernel per
// call site. The real providers (oneDNN for dense/conv/batch_matmul, native loops, the LLVM JIT)
// would pull oneDNN and LLVM into the fuzz build (their sources cost ~17 s each to compile, and
// a JIT compile per input would cut the fuzzer's speed a hundredfold), and the loader is what
// is fuzzed here, not the code generators. So this file stands in for their sources in the fuzz
// build only: every predicate says "not this group" and every Compile* says Unimplemented, the
// engine's "not mine" (compile_engine.cc), so each group gets the reference kernel, the
// engine's own fallback for every registered op. The signatures come from the providers'
// headers, so a change there fails this build instead of drifting.
#include "absl/status/status.h"
#include "compile_engine/batch_matmul_kernel.h"
#include "compile_engine/conv_kernel.h"
#include "compile_engine/deconv_kernel.h"
#include "compile_engine/dense_kernel.h"
#include "compile_engine/image_kernel.h"
#include "compile_engine/jit_elementwise.h"
#include "compile_engine/reduce_kernel.h"
#include "compile_engine/split_kernel.h"

namespace hetpass {
namespace {

absl::Status NotInFuzzBuild() {
  return absl::UnimplementedError("kernel providers are not part of the fuzz build");
}

}  // namespace

bool IsDenseGroup(const Function&) { return false; }
bool IsConvGroup(const Function&) { return false; }
bool IsDeconvGroup(const Function&) { return false; }
bool IsBatchMatmulGroup(const Function&) { return false; }
bool IsJitElementwise(const Function&) { return false; }
bool IsJitInjective(const Function&) { return false; }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileDenseGroup(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileConvGroup(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileDeconvGroup(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileBatchMatmulGroup(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReduceOrSoftmaxGroup(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileImageOrFillGroup(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileLibraryHeadJitTail(const Function&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitElementwise(
    const Function&, const JitElementwiseOptions&) {
  return NotInFuzzBuild();
}
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitInjective(const Function&,
                                                                    const JitElementwiseOptions&) {
  return NotInFuzzBuild();
}

}  // namespace hetpass
