// The process-wide LLVM JIT of the compile engine: one ORC LLJIT for the whole process, shared by
// every CPU kernel generator (elementwise groups today).
//
//   LlvmJit::Get()   initialises the native target once and creates the JIT (thread-safe; an
//                    initialisation failure is remembered and returned on every call)
//   Optimize()       verifies a module, gives it the host data layout and triple, and runs the
//                    O3 pipeline with the host TargetMachine (without it the loop vectoriser
//                    sees no vector registers and does nothing; see DEPENDENCIES.md)
//   Add()            hands an optimised module to the JIT and resolves the requested symbols;
//                    the returned JitCode owns the machine code and removes it when destroyed
//
// Symbol names must be unique in the process (UniqueSymbol). Optimised IR is printed to stderr
// when LlvmJitOptions::dump_ir is set or the environment has HETPASS_DUMP_LLVM=1.
//
// This header exposes LLVM types; only src/compile_engine includes it.
#ifndef HETPASS_COMPILE_ENGINE_JIT_LLVM_JIT_H_
#define HETPASS_COMPILE_ENGINE_JIT_LLVM_JIT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

namespace llvm::orc {
class LLJIT;
}  // namespace llvm::orc
namespace llvm {
class PipelineTuningOptions;
class TargetMachine;
}  // namespace llvm

namespace hetpass {

// LLVM's default O3 module pipeline for `tm` (host or NVPTX), with the given tuning.
void RunO3Pipeline(llvm::Module& module, llvm::TargetMachine* tm,
                   const llvm::PipelineTuningOptions& tuning);

struct LlvmJitOptions {
  // Print each optimised module to stderr (HETPASS_DUMP_LLVM=1 does the same for every module).
  bool dump_ir = false;
};

// Machine code of one module in the process JIT. Destroying it frees the code, so it must
// outlive every call through the symbols it resolved.
class JitCode {
 public:
  JitCode(const JitCode&) = delete;
  JitCode& operator=(const JitCode&) = delete;
  ~JitCode();

  // Address of the i-th symbol requested from LlvmJit::Add.
  void* symbol(int i) const { return symbols_[i]; }

 private:
  friend class LlvmJit;
  JitCode() = default;
  llvm::orc::ResourceTrackerSP tracker_;
  std::vector<void*> symbols_;
};

class LlvmJit {
 public:
  // The process-wide JIT, created on first use.
  static absl::StatusOr<LlvmJit*> Get();

  LlvmJit(const LlvmJit&) = delete;
  LlvmJit& operator=(const LlvmJit&) = delete;

  // `stem` made unique in the process: "hetpass_<stem>_<n>", non-identifier characters -> '_'.
  std::string UniqueSymbol(absl::string_view stem);

  // Verifies `module` (a broken module is an internal error, never an abort), sets the host data
  // layout and triple, and runs the O3 pipeline with the host TargetMachine. Dumps the result
  // when asked (options or HETPASS_DUMP_LLVM=1).
  absl::Status Optimize(llvm::Module& module, const LlvmJitOptions& options = {});

  // Adds an optimised module to the JIT and resolves `symbols` (machine code is generated here).
  absl::StatusOr<std::unique_ptr<JitCode>> Add(std::unique_ptr<llvm::LLVMContext> context,
                                               std::unique_ptr<llvm::Module> module,
                                               absl::Span<const std::string> symbols);

  // The module as LLVM assembly text.
  static std::string PrintModule(const llvm::Module& module);

 private:
  LlvmJit() = default;
  absl::Status Init();
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine();

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::mutex tm_builder_mu_;  // guards tm_builder_ (createTargetMachine is not const)
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> tm_builder_;
  std::atomic<uint64_t> next_symbol_{0};
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_JIT_LLVM_JIT_H_
