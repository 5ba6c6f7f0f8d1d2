// PTX code generation (see ptx_codegen.h). Steps, in order:
//   1. verify the generated module (an invalid module is our bug: Internal, with LLVM's words);
//   2. link libdevice with LinkOnlyNeeded, so only the __nv_* functions the kernels call come
//      in, then internalise every non-kernel function (libdevice's are linkonce) so O3 inlines
//      them and drops the rest;
//   3. set the NVPTX data layout, the flag libdevice's __nvvm_reflect reads (no flush to zero:
//      the host kernels do not flush either), run O3 with the NVPTX TargetMachine (which adds
//      NVVMReflect and the address-space inference to the pipeline);
//   4. print PTX with the legacy code-generation pass manager (LLVM 16 has no new-PM codegen).
// libdevice is parsed once per process into a bitcode buffer and re-materialised per module
// (a parsed module cannot be shared between LLVMContexts).
#include "compile_engine/cuda/ptx_codegen.h"

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/jit/llvm_jit.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#ifndef HETPASS_CUDA_LIBDEVICE
#define HETPASS_CUDA_LIBDEVICE ""
#endif

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace hetpass::cuda {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

bool FileExists(const std::string& path) { return std::ifstream(path).good(); }

const llvm::Target* NvptxTarget(std::string* error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  return llvm::TargetRegistry::lookupTarget(kTriple, *error);
}

// libdevice's bytes, read once per process.
absl::StatusOr<const std::string*> LibdeviceBytes() {
  static std::once_flag once;
  static absl::StatusOr<std::string>* bytes = nullptr;
  std::call_once(once, [] {
    bytes = new absl::StatusOr<std::string>([]() -> absl::StatusOr<std::string> {
      absl::StatusOr<std::string> path = LibdevicePath();
      if (!path.ok()) return path.status();
      std::ifstream in(*path, std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      if (!in.good() && !in.eof()) return absl::NotFoundError(absl::StrCat("cannot read ", *path));
      return s.str();
    }());
  });
  if (!bytes->ok()) return bytes->status();
  return &**bytes;
}

bool CallsLibdevice(const llvm::Module& module) {
  for (const llvm::Function& f : module) {
    if (f.isDeclaration() && f.getName().startswith("__nv_")) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> LibdevicePath() {
  std::vector<std::string> tried;
  auto consider = [&](const std::string& path) -> bool {
    if (path.empty()) return false;
    tried.push_back(path);
    return FileExists(path);
  };
  if (const char* env = std::getenv("HETPASS_LIBDEVICE"); env != nullptr && *env) {
    if (consider(env)) return std::string(env);
    return absl::NotFoundError(absl::StrCat("HETPASS_LIBDEVICE names ", env, ", which does not exist"));
  }
  if (consider(HETPASS_CUDA_LIBDEVICE)) return std::string(HETPASS_CUDA_LIBDEVICE);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root != nullptr && *root) {
      const std::string p = absl::StrCat(root, "/nvvm/libdevice/libdevice.10.bc");
      if (consider(p)) return p;
    }
  }
  if (consider("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")) {
    return std::string("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  }
  return absl::NotFoundError(absl::StrCat(
      "cuda: CUDA's libdevice.10.bc not found (set HETPASS_LIBDEVICE); tried ",
      tried.empty() ? std::string("nothing") : absl::StrJoin(tried, ", ")));
}

absl::StatusOr<std::string> CompileToPtx(llvm::Module& module) {
  const std::string name = module.getName().str();
  {
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(module, &os)) {
      return absl::InternalError(absl::StrCat("generated NVPTX module ", name, " is invalid: ", problems));
    }
  }
  std::string error;
  const llvm::Target* target = NvptxTarget(&error);
  if (target == nullptr) {
    return absl::InternalError(absl::StrCat("LLVM has no NVPTX target: ", error));
  }
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      kTriple, kPtxTargetCpu, kPtxFeatures, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOpt::Aggressive));
  if (tm == nullptr) return absl::InternalError("cannot create the NVPTX TargetMachine");
  module.setTargetTriple(kTriple);
  module.setDataLayout(tm->createDataLayout());

  // The kernels, before libdevice adds its functions.
  std::vector<std::string> kernels;
  if (llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations")) {
    for (llvm::MDNode* node : annotations->operands()) {
      if (node->getNumOperands() < 1) continue;
      if (auto* v = llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(node->getOperand(0).get())) {
        kernels.push_back(v->getValue()->getName().str());
      }
    }
  }
  if (CallsLibdevice(module)) {
    absl::StatusOr<const std::string*> bytes = LibdeviceBytes();
    if (!bytes.ok()) return bytes.status();
    llvm::Expected<std::unique_ptr<llvm::Module>> libdevice = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(**bytes, "libdevice.10.bc"), module.getContext());
    if (!libdevice) {
      return absl::InternalError(
          absl::StrCat("cannot parse libdevice: ", llvm::toString(libdevice.takeError())));
    }
    (*libdevice)->setTargetTriple(kTriple);
    (*libdevice)->setDataLayout(module.getDataLayout());
    if (llvm::Linker::linkModules(module, std::move(*libdevice), llvm::Linker::LinkOnlyNeeded)) {
      return absl::InternalError(absl::StrCat("linking libdevice into ", name, " failed"));
    }
  }
  llvm::internalizeModule(module, [&](const llvm::GlobalValue& g) {
    for (const std::string& k : kernels) {
      if (g.getName() == k) return true;
    }
    return false;
  });
  // libdevice reads this through __nvvm_reflect("__CUDA_FTZ"): keep denormals.
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});

  RunO3Pipeline(module, tm.get(), llvm::PipelineTuningOptions());

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_AssemblyFile)) {
    return absl::InternalError("the NVPTX TargetMachine cannot emit PTX");
  }
  codegen.run(module);
  return std::string(ptx.str());
}

}  // namespace hetpass::cuda
