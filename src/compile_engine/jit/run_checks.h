// Argument checks, the elementwise broadcast shape program and message text shared by the JIT's two kernels at run time (phase 4 of
// lowering.cc's algorithm): the elementwise kernel and the injective kernel.
#ifndef HETPASS_COMPILE_ENGINE_JIT_RUN_CHECKS_H_
#define HETPASS_COMPILE_ENGINE_JIT_RUN_CHECKS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/types/span.h"
#include "absl/status/status.h"
#include "compile_engine/jit/loop_plan.h"
#include "passes/compile_engine/kernel.h"
#include "shape_funcs/concrete_shapes.h"

namespace hetpass::jit_internal {

// "[2, 3]"
std::string ShapeString(absl::Span<const int64_t> shape);
// The declared type of plan value v, "f32[n, 4]".
std::string TypeString(const Plan& plan, int v);
// True when the two buffers share a byte.
bool Overlaps(const TensorArg& a, const TensorArg& b);
// The shape of elementwise step `v` from its operands' (NumPy broadcasting; bias_add's bias
// must match its axis), written to shapes[v]; InvalidArgument naming the step otherwise.
absl::Status BroadcastStepShape(const Plan& plan, const Step& step, int v,
                                absl::Span<ShapeVector> shapes);

// A compiled JIT program as a kernel. The program is immutable and reads constants like any
// argument, so every call site's instance shares it; Run(ctx, args) is RunFn(program, args).
template <typename Program, absl::Status (*RunFn)(const Program&, absl::Span<const TensorArg>)>
class JitProgramKernel final : public CompiledKernel {
 public:
  explicit JitProgramKernel(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext&, absl::Span<const Tensor* const>) const override {
    return std::make_unique<Instance>(program_);
  }
  std::string Describe() const override { return program_->description; }

 private:
  class Instance final : public KernelInstance {
   public:
    explicit Instance(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
    absl::Status Run(const KernelContext&, absl::Span<const TensorArg> args) override {
      return RunFn(*program_, args);
    }

   private:
    std::shared_ptr<const Program> program_;
  };
  std::shared_ptr<const Program> program_;
};

}  // namespace hetpass::jit_internal

#endif  // HETPASS_COMPILE_ENGINE_JIT_RUN_CHECKS_H_
