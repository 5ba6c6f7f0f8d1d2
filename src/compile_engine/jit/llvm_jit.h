// The process-wide LLVM JIT of the compile engine: one ORC LLJIT for the whole process, shared by
// every CPU kernel generator (elementwise groups today).
//
//   LlvmJit::Get()   initialises the native target once and creates the JIT (thread-safe; an
//                    initialisation failure is remembered and returned on every call)
//   Optimize()       verifies a module, gives it the host data layout and triple, and runs the
//                    pipeline of its JitLoops kind (O3 with the vectorisers by default) with the
//                    host TargetMachine (without it the loop vectoriser sees no vector
//                    registers and does nothing; see DEPENDENCIES.md)
//   Compile()        turns a generated (unoptimised) module into machine code in the JIT and
//                    resolves the requested symbols: the object code comes from the on-disk
//                    kernel cache when LlvmJitOptions::cache holds it (no optimisation, no
//                    code generation), else from Optimize + LLVM's code generator, and is then
//                    stored there. The returned JitCode owns the code and removes it when
//                    destroyed.
//
// Each compiled module lives in a JITDylib of its own, so symbol names need only be unique
// within a module: generators use fixed names, which keeps the module text, and with it the
// cache key, the same in every process. Optimised IR is printed to stderr when
// LlvmJitOptions::dump_ir is set or the environment has HETPASS_DUMP_LLVM=1 (such a compile
// skips the cache lookup, since a hit has no IR to print).
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
class OptimizationLevel;
class PipelineTuningOptions;
class TargetMachine;
}  // namespace llvm

namespace hetpass {

class KernelCache;

// LLVM's default O3 module pipeline for `tm` (host or NVPTX), with the given tuning.
void RunO3Pipeline(llvm::Module& module, llvm::TargetMachine* tm,
                   const llvm::PipelineTuningOptions& tuning);

// LLVM's default module pipeline at `level` for `tm`, with the given tuning.
void RunPipeline(llvm::Module& module, llvm::TargetMachine* tm, llvm::OptimizationLevel level,
                 const llvm::PipelineTuningOptions& tuning);

// What the loops of a module are, which decides how hard LLVM works on it (llvm_jit.cc, Recipe):
//   kVectorize  loops over contiguous elements (the elementwise kernels): O3 with the loop and
//               SLP vectorisers, for the host's vector registers;
//   kScalar     scalar loop nests of index arithmetic (the injective kernels), which the
//               vectorisers do not vectorise: a cheaper pipeline without them.
enum class JitLoops { kVectorize, kScalar };

struct LlvmJitOptions {
  // Print each optimised module to stderr (HETPASS_DUMP_LLVM=1 does the same for every module).
  bool dump_ir = false;
  // Where object code is looked up before compiling and stored after; null: no cache.
  KernelCache* cache = nullptr;
  JitLoops loops = JitLoops::kVectorize;
  // A name for listings and dumps ("hetpass_jit_<function>"); not part of the code or the key.
  std::string label = "hetpass_kernel";
};

// The symbol stem of every CPU kernel module: fixed, since each module has a JITDylib of its own
// and a fixed name keeps the cache key the same in every process.
inline constexpr char kKernelSymbol[] = "hetpass_kernel";

// Counters of the process JIT (tests: a warm compile generates no code).
struct LlvmJitStats {
  int64_t codegens = 0;      // modules optimised and compiled to object code
  int64_t cache_loads = 0;   // modules whose object code came from the kernel cache
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
  llvm::orc::ExecutionSession* session_ = nullptr;
  llvm::orc::JITDylib* dylib_ = nullptr;  // this module's own; removed with the JitCode
  std::vector<void*> symbols_;
};

class LlvmJit {
 public:
  // The process-wide JIT, created on first use.
  static absl::StatusOr<LlvmJit*> Get();

  LlvmJit(const LlvmJit&) = delete;
  LlvmJit& operator=(const LlvmJit&) = delete;

  // `stem` made unique in the process: "hetpass_<stem>_<n>", non-identifier characters -> '_'.
  // For labels (LlvmJitOptions::label); symbols inside a module need no uniqueness.
  std::string UniqueSymbol(absl::string_view stem);

  // Verifies `module` (a broken module is an internal error, never an abort), sets the host data
  // layout and triple, and runs the O3 pipeline with the host TargetMachine. Dumps the result
  // when asked (options or HETPASS_DUMP_LLVM=1).
  absl::Status Optimize(llvm::Module& module, const LlvmJitOptions& options = {});

  // Verifies an unoptimised module, loads its object code from options.cache or optimises
  // and compiles it (storing the object there), links it in a JITDylib of its own and
  // resolves `symbols`. The module is consumed either way.
  absl::StatusOr<std::unique_ptr<JitCode>> Compile(std::unique_ptr<llvm::LLVMContext> context,
                                                   std::unique_ptr<llvm::Module> module,
                                                   absl::Span<const std::string> symbols,
                                                   const LlvmJitOptions& options = {});

  // The kernel cache key of a verified module with the host layout and triple set (Compile
  // sets them): what the object code depends on, as text (see llvm_jit.cc).
  std::string CacheKey(const llvm::Module& module, JitLoops loops);

  // The options for the kernel of function `name`: label "hetpass_jit_<name>_<n>", dump, cache.
  LlvmJitOptions KernelOptions(absl::string_view name, JitLoops loops, bool dump_ir,
                               KernelCache* cache);

  LlvmJitStats stats() const { return {codegens_.load(), cache_loads_.load()}; }

  // The module as LLVM assembly text.
  static std::string PrintModule(const llvm::Module& module);

 private:
  LlvmJit() = default;
  absl::Status Init();
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine();
  // Checks `module` and gives it the host data layout and triple.
  absl::Status Prepare(llvm::Module& module);
  void OptimizeWith(llvm::Module& module, llvm::TargetMachine& tm, JitLoops loops,
                    absl::string_view label, bool dump);
  // Links `object` into a fresh JITDylib and resolves `symbols`.
  absl::StatusOr<std::unique_ptr<JitCode>> Link(absl::string_view object,
                                                absl::Span<const std::string> symbols,
                                                absl::string_view label);

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::mutex tm_builder_mu_;  // guards tm_builder_ (createTargetMachine is not const)
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> tm_builder_;
  std::atomic<uint64_t> next_symbol_{0};
  std::atomic<uint64_t> next_dylib_{0};
  std::atomic<int64_t> codegens_{0};
  std::atomic<int64_t> cache_loads_{0};
  std::string target_description_;  // triple, CPU and features: part of every cache key
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_JIT_LLVM_JIT_H_
