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
//   - each module gets a JITDylib of its own (linked against the main one for host symbols);
//     destroying the JitCode removes the JITDylib and the module's code with it.
//
// The kernel cache (Compile): a module's object code depends on the module, the target and the
// recipe that compiles it, so the key is exactly that, as text:
//   hetpass kernel cache key
//   format <kKernelCacheFormatVersion>  hetpass <version>  llvm <version>
//   target <triple> cpu <name> features <+a,-b,...>
//   reloc <model> code-model <model>  pipeline <level, tuning options, codegen opt level>
//   ---
//   <the module's LLVM assembly, before optimisation, with a fixed module name>
// The recipe follows the module's JitLoops kind (Recipe below): elementwise loops get O3 with the
// vectorisers, the injective scalar loop nests O2 without them.
// The module text is printed from the generator's output, whose symbols and names are fixed
// (no process counters, no pointers), so equal kernels give equal keys in every process; the
// text is compared whole on load (kernel_cache.h), so unequal kernels never share code. A change
// to this recipe that the key does not show (a new pass option) must bump
// kKernelCacheFormatVersion.
//
// Host symbols (expf, tanhf, ... that the optimised IR calls) come from the running process
// through DynamicLibrarySearchGenerator::GetForCurrentProcess on the main JITDylib: LLVM 16's
// LLJIT does not link process symbols by default.
//
// Errors: llvm::Error and llvm::Expected become absl::Status here and never travel further; no
// C++ exception crosses an LLVM frame (nothing in this file throws).
#include "compile_engine/jit/llvm_jit.h"

#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "passes/compile_engine/kernel_cache.h"
#include "passes/support/status_macros.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace hetpass {
namespace {

absl::Status ToStatus(llvm::Error error, absl::string_view what) {
  if (!error) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", llvm::toString(std::move(error))));
}

#ifndef HETPASS_VERSION
#define HETPASS_VERSION "unknown"
#endif

// The module name and source file name every cached module gets: they are printed in the key.
constexpr char kCanonicalModuleName[] = "hetpass_kernel";

// The code generator's optimisation level of the JIT's TargetMachines (a recipe may lower it).
constexpr llvm::CodeGenOpt::Level kCodeGenOptLevel = llvm::CodeGenOpt::Default;

// How a module is optimised and compiled, per JitLoops kind (llvm_jit.h). Its description is
// part of every cache key.
struct Recipe {
  llvm::OptimizationLevel level = llvm::OptimizationLevel::O3;
  llvm::PipelineTuningOptions tuning;
  llvm::CodeGenOpt::Level codegen = kCodeGenOptLevel;
};

// kScalar: O2 without the vectorisers. Measured on the shared models (one core, cold cache):
// transformer_encoder_dynamic compiles in ~0.65-0.70 s instead of ~0.89 s with O3 and the
// vectorisers, maskrcnn_tiny's 103 modules in ~1.45 s instead of ~1.55 s, run times within the
// noise; O1 or CodeGenOpt::Less saved no more than the noise, CodeGenOpt::None (FastISel) saved
// ~30% but made maskrcnn_tiny's inference ~1.3x slower.
Recipe RecipeFor(JitLoops loops) {
  Recipe r;
  const bool vectorize = loops == JitLoops::kVectorize;
  r.level = vectorize ? llvm::OptimizationLevel::O3 : llvm::OptimizationLevel::O2;
  r.tuning.LoopVectorization = vectorize;
  r.tuning.SLPVectorization = vectorize;
  r.tuning.LoopInterleaving = vectorize;
  r.tuning.LoopUnrolling = true;
  return r;
}

std::string DescribeRecipe(const Recipe& r) {
  const llvm::PipelineTuningOptions& t = r.tuning;
  return absl::StrCat("pipeline O", r.level.getSpeedupLevel(), " loop-vectorize=", t.LoopVectorization,
                      " slp=", t.SLPVectorization, " interleave=", t.LoopInterleaving,
                      " unroll=", t.LoopUnrolling, " codegen-opt=", static_cast<int>(r.codegen));
}

bool DumpRequestedByEnvironment() {
  const char* v = std::getenv("HETPASS_DUMP_LLVM");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace

JitCode::~JitCode() {
  if (dylib_ != nullptr) llvm::consumeError(session_->removeJITDylib(*dylib_));
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
  builder->setCodeGenOptLevel(kCodeGenOptLevel);
  tm_builder_ = std::make_unique<llvm::orc::JITTargetMachineBuilder>(*builder);
  target_description_ =
      absl::StrCat("target ", builder->getTargetTriple().str(), " cpu ", builder->getCPU(),
                   " features ", builder->getFeatures().getString(), "\n");

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

LlvmJitOptions LlvmJit::KernelOptions(absl::string_view name, JitLoops loops, bool dump_ir,
                                      KernelCache* cache) {
  LlvmJitOptions options;
  options.loops = loops;
  options.label = UniqueSymbol(absl::StrCat("jit_", name));
  options.dump_ir = dump_ir;
  options.cache = cache;
  return options;
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> LlvmJit::CreateTargetMachine() {
  std::lock_guard<std::mutex> lock(tm_builder_mu_);
  auto tm = tm_builder_->createTargetMachine();
  if (!tm) return ToStatus(tm.takeError(), "creating the host TargetMachine");
  return std::move(*tm);
}

void RunO3Pipeline(llvm::Module& module, llvm::TargetMachine* tm,
                   const llvm::PipelineTuningOptions& tuning) {
  RunPipeline(module, tm, llvm::OptimizationLevel::O3, tuning);
}

void RunPipeline(llvm::Module& module, llvm::TargetMachine* tm, llvm::OptimizationLevel level,
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
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

absl::Status LlvmJit::Prepare(llvm::Module& module) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os)) {
    return absl::InternalError(absl::StrCat("generated LLVM module ", module.getName().str(),
                                            " is invalid: ", problems));
  }
  // The JIT's own (made from the same TargetMachine builder as every TargetMachine here), so a
  // cache hit needs no TargetMachine at all (creating one costs ~0.3 ms).
  module.setDataLayout(jit_->getDataLayout());
  module.setTargetTriple(jit_->getTargetTriple().str());
  return absl::OkStatus();
}

void LlvmJit::OptimizeWith(llvm::Module& module, llvm::TargetMachine& tm, JitLoops loops,
                           absl::string_view label, bool dump) {
  const Recipe recipe = RecipeFor(loops);
  // The TargetMachine gives the cost models the host's vector registers (AVX2 / AVX-512).
  RunPipeline(module, &tm, recipe.level, recipe.tuning);
  if (dump) {
    const llvm::StringRef name(label.data(), label.size());
    llvm::errs() << "; ---- hetpass: optimised LLVM IR of " << name << " ----\n"
                 << module << "; ---- end of " << name << " ----\n";
  }
}

absl::Status LlvmJit::Optimize(llvm::Module& module, const LlvmJitOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, CreateTargetMachine());
  RETURN_IF_ERROR(Prepare(module));
  OptimizeWith(module, *tm, options.loops, module.getName().str(),
               options.dump_ir || DumpRequestedByEnvironment());
  return absl::OkStatus();
}

std::string LlvmJit::CacheKey(const llvm::Module& module, JitLoops loops) {
  std::string key = absl::StrCat("hetpass kernel cache key\nformat ", kKernelCacheFormatVersion,
                                 " hetpass ", HETPASS_VERSION, " llvm ", LLVM_VERSION_STRING, "\n",
                                 target_description_);
  absl::StrAppend(&key, "reloc=",
                  static_cast<int>(tm_builder_->getRelocationModel().value_or(llvm::Reloc::Static)),
                  " code-model=",
                  static_cast<int>(tm_builder_->getCodeModel().value_or(llvm::CodeModel::Small)),
                  " ", DescribeRecipe(RecipeFor(loops)), "\n---\n");
  llvm::raw_string_ostream os(key);
  module.print(os, nullptr);
  os.flush();
  return key;
}

absl::StatusOr<std::unique_ptr<JitCode>> LlvmJit::Compile(
    std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module,
    absl::Span<const std::string> symbols, const LlvmJitOptions& options) {
  // Locals destroyed in reverse order: the module before its context (parameters' order of
  // destruction is the ABI's, not ours).
  std::unique_ptr<llvm::LLVMContext> owned_context = std::move(context);
  std::unique_ptr<llvm::Module> owned_module = std::move(module);
  llvm::Module* const m = owned_module.get();
  m->setModuleIdentifier(kCanonicalModuleName);
  m->setSourceFileName(kCanonicalModuleName);
  RETURN_IF_ERROR(Prepare(*m));
  const bool dump = options.dump_ir || DumpRequestedByEnvironment();
  std::string key;
  if (options.cache != nullptr) {
    key = CacheKey(*m, options.loops);
    if (!dump) {
      if (std::optional<std::string> object = options.cache->Load(key)) {
        absl::StatusOr<std::unique_ptr<JitCode>> code = Link(*object, symbols, options.label);
        if (code.ok()) {
          cache_loads_.fetch_add(1, std::memory_order_relaxed);
          return code;
        }
        // An intact entry that does not link (written by a build the key cannot tell apart)
        // is compiled afresh below and overwritten.
      }
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, CreateTargetMachine());
  tm->setOptLevel(RecipeFor(options.loops).codegen);
  OptimizeWith(*m, *tm, options.loops, options.label, dump);
  llvm::orc::SimpleCompiler compiler(*tm);
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> object = compiler(*m);
  if (!object) {
    return ToStatus(object.takeError(), absl::StrCat("generating code for ", options.label));
  }
  codegens_.fetch_add(1, std::memory_order_relaxed);
  const absl::string_view bytes((*object)->getBufferStart(), (*object)->getBufferSize());
  if (options.cache != nullptr) options.cache->Store(key, bytes);
  return Link(bytes, symbols, options.label);
}

absl::StatusOr<std::unique_ptr<JitCode>> LlvmJit::Link(absl::string_view object,
                                                       absl::Span<const std::string> symbols,
                                                       absl::string_view label) {
  llvm::orc::ExecutionSession& session = jit_->getExecutionSession();
  llvm::Expected<llvm::orc::JITDylib&> dylib = session.createJITDylib(
      absl::StrCat("hetpass_kernel_", next_dylib_.fetch_add(1, std::memory_order_relaxed)));
  if (!dylib) return ToStatus(dylib.takeError(), absl::StrCat("creating a JITDylib for ", label));
  dylib->addToLinkOrder(jit_->getMainJITDylib());
  auto code = std::unique_ptr<JitCode>(new JitCode());
  code->session_ = &session;
  code->dylib_ = &*dylib;
  std::unique_ptr<llvm::MemoryBuffer> buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(object.data(), object.size()), llvm::StringRef(label.data(), label.size()));
  if (llvm::Error e = jit_->addObjectFile(*dylib, std::move(buffer))) {
    return ToStatus(std::move(e), absl::StrCat("adding ", label, " to the LLVM JIT"));
  }
  for (const std::string& name : symbols) {
    llvm::Expected<llvm::orc::ExecutorAddr> addr = jit_->lookup(*dylib, name);
    if (!addr) {
      return ToStatus(addr.takeError(), absl::StrCat("looking up ", name, " of ", label,
                                                     " in the LLVM JIT"));
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
