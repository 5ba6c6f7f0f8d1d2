// Tiered kernels: JIT code generation off the load path (CompileEngineOptions::background_jit).
//
// Why: the LLVM JIT costs 4-14 ms per kernel module (optimisation and SelectionDAG code
// generation; measured on the shared models, docs/runtime.md), so a model with a hundred fused
// elementwise / injective groups spends over a second in VM load before its first inference,
// ten times ONNX Runtime's session creation. Most of that code is not needed to *start*: every
// group the JIT takes also runs, correctly but slowly, on the registry's reference kernels.
//
// How: a JIT provider that matches a group while a TieredCompiler is present returns a
// TieredKernel at once: tier 0 is the group's reference kernel (ready immediately), tier 1 the
// provider's own compile, queued on the compiler's one background thread (first queued, first
// compiled: program order). Each instance runs tier 0 until its tier-1 kernel is done, then
// instantiates it on its next Run and never looks back. The switch happens between launches of
// one instance, never inside one, and a run sees each kernel site on one tier for the whole
// launch. With the on-disk kernel cache warm, tier 1 is a load and link (~0.5 ms a module).
//
// What changes for a caller: runs before tier-up compute through the reference kernels, whose
// arithmetic is the registry's (f64 intermediates), so their results may differ from the JIT's
// in the last bits; WaitForAll() (CompileEngine::WaitForBackgroundCompiles,
// VirtualMachine::WaitForKernels) makes every later run use tier 1. A background compile that
// fails (an LLVM error; the matchers are exact, so never "not mine") fails the next Run of
// every instance of that kernel with the error, naming the primitive and provider, as the
// synchronous load would have; WaitForAll returns the first such error.
//
// Lifetimes: the primitive Function must outlive its TieredKernel (the engine's contract); a
// TieredKernel's destructor withdraws its queued compile or waits for the running one; the
// compiler's destructor withdraws every queued compile and joins its thread (the engine owns
// it and destroys it first, before the kernel cache the compiles use).
#ifndef HETPASS_COMPILE_ENGINE_TIERED_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_TIERED_KERNEL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/ir.h"

namespace hetpass {

struct TieredJob;

class TieredCompiler {
 public:
  using Compile = std::function<absl::StatusOr<std::unique_ptr<CompiledKernel>>()>;

  TieredCompiler() = default;
  ~TieredCompiler();
  TieredCompiler(const TieredCompiler&) = delete;
  TieredCompiler& operator=(const TieredCompiler&) = delete;

  // A kernel for `primitive` that runs its reference kernel until `compile` (run on the
  // background thread) has returned. `provider` names the tier-1 provider in messages.
  absl::StatusOr<std::unique_ptr<CompiledKernel>> Defer(const Function& primitive,
                                                        absl::string_view provider, Compile compile);

  // Blocks until every compile queued so far has finished; the first failure, if any.
  absl::Status WaitForAll();
  // Compiles queued or running now.
  int64_t pending() const;

 private:
  void Work();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_;  // queue empty and nothing running (WaitForAll)
  std::deque<std::shared_ptr<TieredJob>> queue_;
  bool stopping_ = false;
  int64_t running_ = 0;
  absl::Status first_failure_;
  std::thread worker_;  // started by the first Defer
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_TIERED_KERNEL_H_
