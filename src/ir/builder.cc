#include "passes/ir/builder.h"

#include "absl/strings/str_format.h"
#include "passes/ir/op_def.h"
#include "passes/support/status_macros.h"

namespace hetpass {

Builder::Builder(Block* block, const OpRegistry* registry)
    : block_(block), registry_(registry ? registry : &OpRegistry::Global()) {}

absl::StatusOr<Node*> Builder::CallNode(absl::string_view op, std::vector<Value*> operands,
                                        Attrs attrs, std::string name) {
  const OpDef* def = registry_->Find(op);
  if (def == nullptr) return absl::NotFoundError(absl::StrFormat("unknown op '%s'", op));
  if (!def->AcceptsInputCount(static_cast<int>(operands.size()))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("op '%s' takes %s%d operands, got %d", op, def->variadic() ? "at least " : "",
                        def->inputs().size(), operands.size()));
  }
  ASSIGN_OR_RETURN(Attrs checked, def->CheckAttrs(attrs));
  auto node = std::make_unique<Node>(NodeKind::kCall);
  node->set_op(def);
  for (Value* v : operands) node->AddOperand(v);
  node->set_attrs(std::move(checked));
  for (int i = 0; i < def->num_outputs(); ++i) {
    node->AddResult(Type(), def->num_outputs() == 1 ? name : "");
  }
  return block_->Append(std::move(node));
}

absl::StatusOr<Value*> Builder::Call(absl::string_view op, std::vector<Value*> operands,
                                     Attrs attrs, std::string name) {
  ASSIGN_OR_RETURN(Node * n, CallNode(op, std::move(operands), std::move(attrs), std::move(name)));
  if (n->num_results() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("op '%s' has %d results; use CallNode", op, n->num_results()));
  }
  return n->result(0);
}

Value* Builder::Constant(Tensor value, std::string name) {
  auto node = std::make_unique<Node>(NodeKind::kConstant);
  Type t = value.type();
  node->set_constant_value(std::move(value));
  node->AddResult(std::move(t), std::move(name));
  return block_->Append(std::move(node))->result(0);
}

Value* Builder::Tuple(std::vector<Value*> fields, std::string name) {
  auto node = std::make_unique<Node>(NodeKind::kTuple);
  for (Value* v : fields) node->AddOperand(v);
  node->AddResult(Type(), std::move(name));
  return block_->Append(std::move(node))->result(0);
}

Value* Builder::GetItem(Value* tuple, int64_t index, std::string name) {
  auto node = std::make_unique<Node>(NodeKind::kGetItem);
  node->AddOperand(tuple);
  node->mutable_attrs().Set("index", index);
  node->AddResult(Type(), std::move(name));
  return block_->Append(std::move(node))->result(0);
}

Node* Builder::Invoke(absl::string_view callee, std::vector<Value*> operands, int num_results) {
  auto node = std::make_unique<Node>(NodeKind::kInvoke);
  node->set_callee(std::string(callee));
  for (Value* v : operands) node->AddOperand(v);
  for (int i = 0; i < num_results; ++i) node->AddResult();
  return block_->Append(std::move(node));
}

}  // namespace hetpass
