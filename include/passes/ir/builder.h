// Building IR from C++: appends bindings to a block, checking each op call against the
// registry (operand count, attribute schema; defaults filled in). Types stay unset until
// infer-types runs, unless given.
#ifndef HETPASS_IR_BUILDER_H_
#define HETPASS_IR_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/ir/ir.h"

namespace hetpass {

class OpRegistry;

class Builder {
 public:
  explicit Builder(Block* block, const OpRegistry* registry = nullptr);

  // A call of a registered op; returns the node (all results).
  absl::StatusOr<Node*> CallNode(absl::string_view op, std::vector<Value*> operands,
                                 Attrs attrs = {}, std::string name = "");
  // A call of a single-result op; returns its result.
  absl::StatusOr<Value*> Call(absl::string_view op, std::vector<Value*> operands,
                              Attrs attrs = {}, std::string name = "");
  Value* Constant(Tensor value, std::string name = "");
  Value* Tuple(std::vector<Value*> fields, std::string name = "");
  Value* GetItem(Value* tuple, int64_t index, std::string name = "");
  Node* Invoke(absl::string_view callee, std::vector<Value*> operands, int num_results);

  Block* block() const { return block_; }
  const OpRegistry& registry() const { return *registry_; }

 private:
  Block* block_;
  const OpRegistry* registry_;
};

}  // namespace hetpass

#endif  // HETPASS_IR_BUILDER_H_
