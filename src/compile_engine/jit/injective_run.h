// The run-time half of the injective path (injective_kernel.cc explains it), shared by the
// host JIT and the cuda device's NVPTX kernels: the shape program on concrete shapes, checked
// against the declared types, and the arrays the entry points read.
#ifndef HETPASS_COMPILE_ENGINE_JIT_INJECTIVE_RUN_H_
#define HETPASS_COMPILE_ENGINE_JIT_INJECTIVE_RUN_H_

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compile_engine/jit/loop_plan.h"
#include "passes/runtime/tensor_arg.h"

namespace hetpass::jit_internal {

struct InjectiveLaunch {
  absl::InlinedVector<void*, 8> bases;     // [0] the output, [1 + p] parameter p
  absl::InlinedVector<int64_t, 64> dims;   // every value's dims (layout.dim_offset); size >= 1
  absl::InlinedVector<int64_t, 16> aux;    // slice starts/strides, reshape multipliers; size >= 1
  int64_t out_elements = 0;                // 0: nothing to launch (the arrays are not filled)
  bool wide = false;                       // some value has 2^32 elements or more
};

// Checks `args` (parameters, then the result) against the plan and runs the shape program.
// `tensors_on_host`: the tensors' data is host memory, so take in mode "fast" checks its indices
// here; on a device the kernel flags them instead. The run-time operands of dyn.* ops are read
// from their arguments either way (host data, passed to a device kernel by value).
// InvalidArgument naming the function and value on any mismatch.
absl::Status PrepareInjective(const Plan& plan, const InjectiveLayout& layout,
                              absl::Span<const TensorArg> args, bool tensors_on_host,
                              InjectiveLaunch* launch);

}  // namespace hetpass::jit_internal

#endif  // HETPASS_COMPILE_ENGINE_JIT_INJECTIVE_RUN_H_
