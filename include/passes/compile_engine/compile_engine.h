// The compile engine: lowers each primitive function (a fused kernel group made by fuse-ops)
// for its device, and each primitive's shape function for the host.
//
// Kernels, in order of preference:
//   1. the kernel library: dense and conv2d (+ bias, relu epilogue) groups go to oneDNN, the
//      library chosen by measurement (dense_kernel.h, conv_kernel.h), weights prepacked at load;
//      a library head followed by an elementwise tail (a residual add, tanh) runs the head
//      into the output and the JIT-compiled tail in place over it (split_kernel.h);
//   2. the LLVM JIT: bodies made only of elementwise / broadcast ops become one vectorised
//      loop nest compiled with ORC LLJIT (jit_elementwise.h);
//   3. reshape-only groups: a copy;
//   4. otherwise the group's ops run one after another through the registry's reference
//      kernels (correct for every registered op, not fast): Describe() says "reference[...]".
// Shape functions are host functions: the ops' shape rules composed in program order
// (InferPrimitiveTypes), reading exactly what the derived mask allows.
//
// Kernels are cached by (structural hash, device) within one engine: structurally equal
// primitives (two identical layers) compile once. An engine must outlive the kernels' users
// only through the shared_ptrs it hands out; the primitive Functions must outlive the engine.
#ifndef HETPASS_COMPILE_ENGINE_COMPILE_ENGINE_H_
#define HETPASS_COMPILE_ENGINE_COMPILE_ENGINE_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

struct CompileEngineOptions {
  bool use_kernel_library = true;  // dense groups via the GEMM library
  bool use_jit = true;             // elementwise groups via LLVM
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
  explicit CompileEngine(CompileEngineOptions options = {}) : options_(options) {}

  absl::StatusOr<std::shared_ptr<const CompiledKernel>> Lower(const Function& primitive,
                                                              DeviceKind device);
  // `recorded_mask` (from the IR's shape-function invoke, possibly made with another registry,
  // e.g. the single-flag baseline masks) decides what the caller supplies; it must include every
  // value the body's shape rules read (error otherwise). nullopt: the derived mask.
  absl::StatusOr<std::shared_ptr<const ShapeFunction>> LowerShapeFunction(
      const Function& primitive, std::optional<std::vector<InputDep>> recorded_mask = std::nullopt);

  int64_t cache_hits() const { return hits_; }
  int64_t cache_misses() const { return misses_; }

 private:
  struct Entry {
    const Function* function;
    DeviceKind device;
    std::shared_ptr<const CompiledKernel> kernel;
  };
  CompileEngineOptions options_;
  absl::flat_hash_map<size_t, std::vector<Entry>> cache_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

// Runs a primitive function's body through the registry's reference kernels (the generic
// fallback, and the oracle for fused-vs-unfused tests).
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReferenceKernel(const Function& primitive);

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_COMPILE_ENGINE_H_
