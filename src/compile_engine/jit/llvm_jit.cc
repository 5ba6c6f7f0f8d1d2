// The process-wide LLJIT (see llvm_jit.h).
//
// Why one JIT: creating an LLJIT costs a TargetMachine, an ExecutionSession and a dlopen of the
// process; kernels are small and many, so they share one JITDylib and differ by symbol name.
//
// Thread safety:
//   - initialisation runs once (std::call_once); its status is kept for later callers;
//   - optimisation works on the caller's own LLVMContext and module with a TargetMachine made
//     for that call, so concurrent Optimize calls share nothing;
//   - code generation inside the JIT uses ConcurrentIRCompiler (a TargetMachine per module)
//     instead of LLJIT's default single shared TargetMachine, so concurrent Add calls are safe;
//     ORC's ExecutionSession serialises its own symbol tables.
//   - each module gets a ResourceTracker; destroying the JitCode removes the module's code.
//
// Host symbols (expf, tanhf, ... that the optimised IR calls) come from the running process
// through DynamicLibrarySearchGenerator::GetForCurrentProcess on the main JITDylib: LLVM 16's
// LLJIT does not link process symbols by default.
//
// Errors: llvm::Error and llvm::Expected become absl::Status here and never travel further; no
// C++ exception crosses an LLVM frame (nothing in this file throws).
#include "compile_engine/jit/llvm_jit.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace hetpass {
namespace {

absl::Status ToStatus(llvm::Error error, absl::string_view what) {
  if (!error) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", llvm::toString(std::move(error))));
}

bool DumpRequestedByEnvironment() {
  const char* v = std::getenv("HETPASS_DUMP_LLVM");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace

JitCode::~JitCode() {
  if (tracker_) llvm::consumeError(tracker_->remove());
}

absl::StatusOr<LlvmJit*> LlvmJit::Get() {
  // Deliberately leaked: kernels held in static caches may be destroyed after any static JIT
  // would be, and they remove their code from it.
  static LlvmJit* const jit = new LlvmJit();
  static std::once_flag once;
  static absl::Status* init_status = nullptr;
  std::call_once(once, [] { init_status = new absl::Status(jit->Init()); });
  if (!init_status->ok()) return *init_status;
  return jit;
}

absl::Status LlvmJit::Init() {
  if (llvm::InitializeNativeTarget() || llvm::InitializeNativeTargetAsmPrinter()) {
    return absl::InternalError("LLVM has no native target for this host");
  }
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return ToStatus(builder.takeError(), "detecting the host target");
  builder->setCodeGenOptLevel(llvm::CodeGenOpt::Default);
  tm_builder_ = std::make_unique<llvm::orc::JITTargetMachineBuilder>(*builder);

  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(*builder)
                 .setCompileFunctionCreator(
                     [](llvm::orc::JITTargetMachineBuilder jtmb)
                         -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                       return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(jtmb));
                     })
                 .create();
  if (!jit) return ToStatus(jit.takeError(), "creating the LLVM JIT");
  jit_ = std::move(*jit);

  auto process_symbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit_->getDataLayout().getGlobalPrefix());
  if (!process_symbols) {
    return ToStatus(process_symbols.takeError(), "resolving host symbols for the LLVM JIT");
  }
  jit_->getMainJITDylib().addGenerator(std::move(*process_symbols));
  return absl::OkStatus();
}

std::string LlvmJit::UniqueSymbol(absl::string_view stem) {
  std::string name = "hetpass_";
  for (char c : stem) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    name.push_back(ok ? c : '_');
  }
  absl::StrAppend(&name, "_", next_symbol_.fetch_add(1, std::memory_order_relaxed));
  return name;
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> LlvmJit::CreateTargetMachine() {
  std::lock_guard<std::mutex> lock(tm_builder_mu_);
  auto tm = tm_builder_->createTargetMachine();
  if (!tm) return ToStatus(tm.takeError(), "creating the host TargetMachine");
  return std::move(*tm);
}

void RunO3Pipeline(llvm::Module& module, llvm::TargetMachine* tm,
                   const llvm::PipelineTuningOptions& tuning) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

absl::Status LlvmJit::Optimize(llvm::Module& module, const LlvmJitOptions& options) {
  {
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(module, &os)) {
      return absl::InternalError(absl::StrCat("generated LLVM module ", module.getName().str(),
                                              " is invalid: ", problems));
    }
  }
  auto tm_or = CreateTargetMachine();
  if (!tm_or.ok()) return tm_or.status();
  std::unique_ptr<llvm::TargetMachine> tm = std::move(*tm_or);
  module.setDataLayout(tm->createDataLayout());
  module.setTargetTriple(tm->getTargetTriple().str());

  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopInterleaving = true;
  tuning.LoopUnrolling = true;
  // The TargetMachine gives the cost models the host's vector registers (AVX2 / AVX-512).
  RunO3Pipeline(module, tm.get(), tuning);

  if (options.dump_ir || DumpRequestedByEnvironment()) {
    llvm::errs() << "; ---- hetpass: optimised LLVM IR of " << module.getName() << " ----\n"
                 << module << "; ---- end of " << module.getName() << " ----\n";
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<JitCode>> LlvmJit::Add(std::unique_ptr<llvm::LLVMContext> context,
                                                      std::unique_ptr<llvm::Module> module,
                                                      absl::Span<const std::string> symbols) {
  auto code = std::unique_ptr<JitCode>(new JitCode());
  code->tracker_ = jit_->getMainJITDylib().createResourceTracker();
  const std::string module_name = module->getName().str();
  llvm::orc::ThreadSafeModule tsm(std::move(module), std::move(context));
  if (llvm::Error e = jit_->addIRModule(code->tracker_, std::move(tsm))) {
    return ToStatus(std::move(e), absl::StrCat("adding ", module_name, " to the LLVM JIT"));
  }
  for (const std::string& name : symbols) {
    llvm::Expected<llvm::orc::ExecutorAddr> addr = jit_->lookup(name);
    if (!addr) {
      return ToStatus(addr.takeError(), absl::StrCat("looking up ", name, " in the LLVM JIT"));
    }
    code->symbols_.push_back(addr->toPtr<void*>());
  }
  return code;
}

std::string LlvmJit::PrintModule(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace hetpass
