// The compile engine: lowers each primitive function (a fused kernel group made by fuse-ops)
// for its device, and each primitive's shape function for the host.
//
// Kernels come from the device's kernel providers (kernel_provider.h), tried in the order of
// the device's list (src/compile_engine/providers.cc, where the order and its reasons are
// written down; docs/runtime.md): the first provider that does not answer
// Unimplemented ("not mine") wins, any other error stops the search and is reported with the
// provider's name. For cpu and sim: the kernel library (oneDNN dense / conv / deconv /
// batch_matmul with their epilogues, weights prepacked at load; max / avg pooling), native
// loops (reductions, softmax, image ops), a byte copy for a single view op, a library head
// with a JIT tail, the LLVM JIT (elementwise, then injective loop nests), and last the
// reference interpreter, which runs every registered op through the registry's reference
// kernels (correct, not fast): Describe() says "reference[...]".
// Shape functions are host functions: the ops' shape rules composed in program order
// (InferPrimitiveTypes), reading exactly what the derived mask allows.
//
// Kernels are cached by (structural hash, device) within one engine: structurally equal
// primitives (two identical layers) compile once. Across engines and processes, the object code
// of JIT kernels is cached on disk (kernel_cache.h; CompileEngineOptions::kernel_cache_dir). An engine must outlive the kernels' users
// only through the shared_ptrs it hands out; the primitive Functions must outlive the engine.
#ifndef HETPASS_COMPILE_ENGINE_COMPILE_ENGINE_H_
#define HETPASS_COMPILE_ENGINE_COMPILE_ENGINE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_cache.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

struct CompileEngineOptions {
  bool use_kernel_library = true;  // providers needing a kernel library (oneDNN) are tried
  bool use_jit = true;             // providers needing run-time code generation are tried
  // The ordered providers per device kind; null: KernelProviders (kernel_provider.h). Tests and
  // embedders describe other devices with it.
  std::function<absl::Span<const KernelProvider* const>(DeviceKind)> providers;
  // The on-disk kernel cache of JIT object code (kernel_cache.h): "" the default location
  // ($HETPASS_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/hetpass/kernels, else
  // ~/.cache/hetpass/kernels), "off" none, anything else a directory.
  std::string kernel_cache_dir;
  // Tiered compilation (src/compile_engine/tiered_kernel.h): the JIT providers' groups start
  // on their reference kernels and their code is generated on a background thread, so Lower
  // and a VM load do not wait for LLVM; each kernel switches to its JIT code on the first run
  // after that code is ready (WaitForBackgroundCompiles() waits for all of it). Runs before
  // the switch compute with the reference kernels' arithmetic (results may differ in the last
  // bits). Off by default: the library's callers get final kernels from Lower.
  bool background_jit = false;
};

// What a host shape function receives for one parameter: its concrete shape always, and its
// data (host tensor) only when the mask includes `value`.
struct ShapeFunctionArg {
  absl::Span<const int64_t> shape;
  const Tensor* value = nullptr;
};

class ShapeFunction {
 public:
  ShapeFunction(const Function* primitive, std::vector<InputDep> mask);
  // The concrete shape of every result of the primitive.
  absl::StatusOr<std::vector<std::vector<int64_t>>> Run(
      absl::Span<const ShapeFunctionArg> args) const;
  const std::vector<InputDep>& mask() const { return mask_; }

 private:
  const Function* primitive_;
  std::vector<InputDep> mask_;
};

class CompileEngine {
 public:
  explicit CompileEngine(CompileEngineOptions options = {});
  // Withdraws the background compiles not started and waits for the running one.
  ~CompileEngine();
  CompileEngine(const CompileEngine&) = delete;
  CompileEngine& operator=(const CompileEngine&) = delete;

  absl::StatusOr<std::shared_ptr<const CompiledKernel>> Lower(const Function& primitive,
                                                              DeviceKind device);
  // `recorded_mask` (from the IR's shape-function invoke, possibly made with another registry,
  // e.g. the single-flag baseline masks) decides what the caller supplies; it must include every
  // value the body's shape rules read (error otherwise). nullopt: the derived mask.
  absl::StatusOr<std::shared_ptr<const ShapeFunction>> LowerShapeFunction(
      const Function& primitive, std::optional<std::vector<InputDep>> recorded_mask = std::nullopt);

  int64_t cache_hits() const { return hits_; }
  int64_t cache_misses() const { return misses_; }
  // The on-disk kernel cache this engine's JIT kernels use; null when it is off.
  const KernelCache* kernel_cache() const { return kernel_cache_.get(); }

  // background_jit: blocks until every background compile queued so far is done (each kernel
  // then switches on its next run); the first failure, naming the primitive and provider.
  // OK at once without background_jit.
  absl::Status WaitForBackgroundCompiles();
  // background_jit: compiles queued or running now.
  int64_t background_pending() const;

 private:
  struct Entry {
    const Function* function;
    DeviceKind device;
    std::shared_ptr<const CompiledKernel> kernel;
  };
  CompileEngineOptions options_;
  std::shared_ptr<KernelCache> kernel_cache_;
  absl::flat_hash_map<size_t, std::vector<Entry>> cache_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  // Declared last, destroyed first: its running compile uses kernel_cache_.
  std::unique_ptr<TieredCompiler> tiered_;
};

// Runs a primitive function's body through the registry's reference kernels (the generic
// fallback, and the oracle for fused-vs-unfused tests).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReferenceKernel(const Function& primitive);

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_COMPILE_ENGINE_H_
