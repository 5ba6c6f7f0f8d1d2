// Compiled kernels: what the compile engine produces for one primitive function and one device,
// and what the VM launches.
//
// Calling convention (destination passing, as the IR's `invoke @P(ins..., outs...) {outputs=k}`):
// a kernel receives one TensorArg per parameter of the primitive function followed by one per
// result, all with concrete shapes; it writes the results into the preallocated outputs and
// allocates nothing on the device itself (scratch comes from the workspace the instance asked
// for). Inputs the kernel only needs as metadata still arrive with their data pointer; inputs
// that live on the host (slice bounds, reshape targets) arrive as host pointers.
//
// A CompiledKernel is cached by (structural hash, device) and shared between call sites; a
// KernelInstance is made per call site at load time, and receives the call site's constant
// inputs there, so a kernel can prepack weights once (the GEMM library's packed layout) instead
// of on every call.
#ifndef HETPASS_COMPILE_ENGINE_KERNEL_H_
#define HETPASS_COMPILE_ENGINE_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/ir/dtype.h"
#include "passes/ir/tensor.h"

namespace hetpass {

// A dense row-major tensor handed to a kernel. Not owning.
struct TensorArg {
  void* data = nullptr;
  DType dtype = DType::kF32;
  absl::Span<const int64_t> shape;

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

class KernelInstance {
 public:
  virtual ~KernelInstance() = default;
  // args: the primitive function's parameters, then its results (outputs preallocated).
  // Errors name the kernel and the offending argument.
  virtual absl::Status Run(absl::Span<const TensorArg> args) = 0;
};

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  // `constants[i]` is the call site's constant for parameter i, or nullptr when parameter i is
  // a run-time value. Called once per call site at load time.
  virtual absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      absl::Span<const Tensor* const> constants) const = 0;
  // One line for listings and profiles: how each part is implemented, e.g.
  // "onednn matmul + jit[bias_add,relu]" or "reference[topk]".
  virtual std::string Describe() const = 0;
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_KERNEL_H_
