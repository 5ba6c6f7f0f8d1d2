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
//
// Both Instantiate and Run receive a KernelContext: the device the kernel runs on, its native
// queue and a workspace pool on that device. A device kernel enqueues on the queue (a CUDA
// stream) and takes scratch memory from the pool, so scratch is pooled like every other device
// buffer and a launch needs no device-wide synchronisation. cpu and sim run launches inline on
// the calling thread (no queue).
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
#include "passes/runtime/device.h"
#include "passes/runtime/tensor_arg.h"

namespace hetpass {

// Where a kernel runs (see the file comment). Not owning; valid during the call it is passed to.
struct KernelContext {
  runtime::Device* device = nullptr;
  // The device's native queue (cudaStream_t for cuda), or nullptr where launches run inline on
  // the calling thread (cpu, sim).
  void* queue = nullptr;
  // Scratch memory on `device` (blocks come back to the pool when released, so steady-state
  // inferences allocate nothing).
  runtime::PoolingAllocator* workspace = nullptr;

  // The process's host context: the cpu device with its own pool (tests, host-only callers).
  static const KernelContext& Host();
};

class KernelInstance {
 public:
  virtual ~KernelInstance() = default;
  // args: the primitive function's parameters, then its results (outputs preallocated).
  // Errors name the kernel and the offending argument.
  virtual absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) = 0;
  // The same on the host context (tests and host-only callers).
  absl::Status Run(absl::Span<const TensorArg> args) { return Run(KernelContext::Host(), args); }
  // True when the instance holds constant parameter `param` in a form of its own (prepacked)
  // and neither reads that constant's bytes nor keeps them: Run ignores the argument's data
  // pointer, which may then be null. The VM releases a constant whose every use is absorbed
  // (vm.cc, "released constants"). Asked once, right after Instantiate.
  virtual bool Absorbed(int param) const {
    (void)param;
    return false;
  }
};

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  // `constants[i]` is the call site's constant for parameter i, or nullptr when parameter i is
  // a run-time value. Called once per call site at load time, with the context the instance
  // will run in (prepacked weights belong on ctx.device).
  virtual absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const = 0;
  // The same on the host context.
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      absl::Span<const Tensor* const> constants) const {
    return Instantiate(KernelContext::Host(), constants);
  }
  // One line for listings and profiles: how each part is implemented, e.g.
  // "onednn matmul + jit[bias_add,relu]" or "reference[topk]".
  virtual std::string Describe() const = 0;
  // The code generated for this kernel, for inspection (`hetpass-opt --emit-kernels`) and
  // golden tests: PTX, CUDA source; empty where a library or the interpreter runs the group.
  virtual std::string Listing() const { return ""; }
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_KERNEL_H_
