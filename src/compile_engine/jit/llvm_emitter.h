// Phase 3 of the CPU JIT: LLVM IR for a loop plan (loop_plan.h). llvm_emitter.cc is the only
// file besides the ORC wrapper (llvm_jit.{h,cc}) that includes LLVM IR headers; this header
// only forward-declares what it hands out.
#ifndef HETPASS_COMPILE_ENGINE_JIT_LLVM_EMITTER_H_
#define HETPASS_COMPILE_ENGINE_JIT_LLVM_EMITTER_H_

#include <memory>
#include <string>

#include "compile_engine/jit/loop_plan.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace hetpass::jit_internal {

struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::string fast_name;
  std::string generic_name;  // empty for static shapes
};

// Phase 3 (llvm_emitter.cc): the elementwise module (`fast`, and `generic` unless every shape is
// static) and the injective module (its entry, and `wide` when a reshape divides by a run-time
// dim).
BuiltModule BuildModule(const Plan& plan, const Lowered& lowered, const std::string& symbol);
BuiltModule BuildInjectiveModule(const Plan& plan, const InjectiveLayout& layout,
                                 const std::string& symbol);
// The cuda device's kernels (target nvptx64-nvidia-cuda, before optimisation and libdevice):
// `fast_name` the 32-bit-index kernel, `generic_name` the one for element counts of 2^32 and
// more. Any plan the injective or elementwise path accepts (layout from MakeLayout).
BuiltModule BuildNvptxModule(const Plan& plan, const InjectiveLayout& layout,
                             const std::string& symbol);

}  // namespace hetpass::jit_internal

#endif  // HETPASS_COMPILE_ENGINE_JIT_LLVM_EMITTER_H_
