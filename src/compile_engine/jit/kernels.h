// CPU JIT for fused elementwise / broadcast groups, and for groups that also move data
// (injective ops, see CompileJitInjective): a whole primitive function becomes one loop nest (no
// intermediate buffers) compiled by the process LLVM JIT (llvm_jit.h).
//
// Handles primitive functions with one result whose every binding is a call of:
//   unary      nn.relu, negative, abs (f32, f64, i8, i32, i64, u8)
//              exp, log, sqrt, tanh, sigmoid (f32, f64)
//   binary     add, subtract, multiply, divide, maximum, minimum (f32, f64, i8, i32, i64, u8)
//              power (f32, f64)
//   compare    equal, less, greater (f32, f64, i8, i32, i64, u8, bool) -> bool
//   other      nn.bias_add (numeric dtypes), where (any supported dtypes), cast (between any
//              two of f32, f64, i8, i32, i64, u8, bool)
// with NumPy broadcasting (right-aligned, computed at run time from the argument shapes; a
// bias_add bias follows its `axis`). Anything else (other ops, f16/bf16, several results) is
// Unimplemented, naming the op and dtype, so the caller can fall back to another kernel.
//
// Kernel calling convention (kernel.h): args = parameters then the result, concrete shapes.
// The output may be the very same buffer as an input of the same shape (in-place epilogues);
// any other overlap between an input and the output is InvalidArgument.
#ifndef HETPASS_COMPILE_ENGINE_JIT_KERNELS_H_
#define HETPASS_COMPILE_ENGINE_JIT_KERNELS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "passes/compile_engine/kernel.h"
#include "passes/compile_engine/kernel_cache.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/ir.h"

namespace hetpass {

struct JitElementwiseOptions {
  // Print the optimised LLVM IR to stderr (the environment variable HETPASS_DUMP_LLVM=1 does the
  // same for every JIT module).
  bool dump_llvm_ir = false;
  // The on-disk kernel cache to load object code from and store it in; null: none.
  KernelCache* cache = nullptr;
};

// Whether every binding of `primitive`'s body is a call the JIT handles, with supported dtypes
// and one result: exactly when CompileJitElementwise cannot answer Unimplemented.
bool IsJitElementwise(const Function& primitive);

// Compiles the whole body into ONE loop nest. Unimplemented (naming the op / dtype) for anything
// unsupported; Internal if LLVM fails.
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitElementwise(
    const Function& primitive, const JitElementwiseOptions& options = {});

// The injective path: groups of the elementwise ops above plus at least one injective op
//   transpose, reshape, dyn.reshape, expand_dims, squeeze, strided_slice, dyn.strided_slice,
//   take, concatenate, broadcast_to, dyn.broadcast_to
// (the run-time operands of dyn.* ops must be integer parameters of the group; take in mode
// "fast" needs its indices as a parameter). One scalar loop nest over the output; each op maps
// its output index to its operands' (see injective_kernel.cc). The output must not overlap an
// input. IsJitInjective is true exactly when CompileJitInjective cannot answer Unimplemented;
// it is false for purely elementwise groups (IsJitElementwise's).
bool IsJitInjective(const Function& primitive);
absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitInjective(
    const Function& primitive, const JitElementwiseOptions& options = {});

// The optimised LLVM IR of the kernel module CompileJitElementwise would build (not added to
// the JIT). For tests (vectorisation checks) and debugging.
absl::StatusOr<std::string> JitElementwiseOptimizedIr(const Function& primitive);

// How many modules the process JIT has optimised and compiled to object code, and how many it
// loaded from the kernel cache instead (tests: a warm compile generates no code).
struct JitCounts {
  int64_t codegens = 0;
  int64_t cache_loads = 0;
};
JitCounts ProcessJitCounts();

// "llvm.elementwise" and "llvm.injective": the two paths above (IsJitElementwise,
// IsJitInjective), each fusing the ops of its lowering table.
const KernelProvider& JitElementwiseProvider();
const KernelProvider& JitInjectiveProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_JIT_KERNELS_H_
