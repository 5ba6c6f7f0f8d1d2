// The pass contract: `absl::StatusOr<bool> Run(Module&)`. A non-OK status means invalid input
// or a failure, with a located message (file:line:col or ONNX node, op, value); `true` means the
// module changed. Passes are created by `CreateXPass(const XPass::Options&)` factories or by
// name through the PassRegistry (pipelines in text).
#ifndef HETPASS_PASS_PASS_H_
#define HETPASS_PASS_PASS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/ir.h"

namespace hetpass {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual absl::string_view name() const = 0;
  virtual absl::StatusOr<bool> Run(Module& module) = 0;
};

}  // namespace hetpass

#endif  // HETPASS_PASS_PASS_H_
