#include "shape_funcs/symbolic_values.h"

namespace hetpass {

const Tensor* ConstantData(const Value* v) {
  const Node* p = v->producer();
  return (p != nullptr && p->kind() == NodeKind::kConstant) ? &p->constant_value() : nullptr;
}

const std::vector<DimExpr>* SymbolicValues::Find(const Value* v) const {
  auto it = map_.find(v);
  return it == map_.end() ? nullptr : &it->second;
}

std::vector<ShapeInput> SymbolicValues::InputsOf(const Node& node) const {
  std::vector<ShapeInput> inputs;
  inputs.reserve(node.num_operands());
  for (const Value* v : node.operands()) {
    inputs.push_back(ShapeInput{v->type(), ConstantData(v), Find(v)});
  }
  return inputs;
}

void SymbolicValues::Propagate(const Node& node) {
  if (node.kind() != NodeKind::kCall || !node.op()->symbolic_value_rule()) return;
  for (const Value* v : node.operands()) {
    if (!v->type().is_tensor()) return;
  }
  ShapeContext ctx(*node.op(), node.attrs(), InputsOf(node), /*enforce_mask=*/false);
  auto values = node.op()->symbolic_value_rule()(ctx);
  if (!values || static_cast<int>(values->size()) != node.num_results()) return;
  for (int i = 0; i < node.num_results(); ++i) {
    const Type& t = node.result(i)->type();
    std::vector<DimExpr>& vals = (*values)[i];
    if (!CarriesSymbolicValues(t)) continue;
    if (static_cast<int64_t>(vals.size()) > kMaxSymbolicElements) continue;
    // The contents must agree with the static element count.
    const DimExpr n = t.NumElements();
    if (n.is_constant() && n.constant() != static_cast<int64_t>(vals.size())) continue;
    map_[node.result(i)] = std::move(vals);
  }
}

}  // namespace hetpass
