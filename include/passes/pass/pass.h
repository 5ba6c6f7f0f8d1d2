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
  // What this pass guarantees on top of the IR verifier (plan-devices: every value placed and
  // every cross-device use copied; manifest-alloc: every kernel has explicit outputs). The pass
  // manager checks it after the pass when verify_each is on.
  virtual absl::Status VerifyPostconditions(const Module& module) const {
    return absl::OkStatus();
  }
};

}  // namespace hetpass

#endif  // HETPASS_PASS_PASS_H_
