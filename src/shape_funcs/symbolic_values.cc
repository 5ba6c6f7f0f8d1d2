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

// A float tensor cast from integers with symbolic values holds those integers (exactly, up to
// the float's integer range: ShapeContext::IntValues records that assumption). Exporters write
// `torch.arange(h, dtype=float32)` as Range(0.0, Cast(h), 1.0); seeing through the cast gives the
// range its length `h` instead of `?`. Only shape rules see it (InputsOf with through_casts, as
// infer-types asks): float tensors carry no symbolic values themselves, and symbolic-value
// rules, whose integer arithmetic would misread a float operand, never get it.
const std::vector<DimExpr>* SymbolicValues::FindThroughIntToFloatCast(const Value* v) const {
  if (!v->type().is_tensor() || !IsFloat(v->type().dtype())) return nullptr;
  const Node* p = v->producer();
  if (p == nullptr || p->kind() != NodeKind::kCall || p->op() == nullptr ||
      p->op()->name() != "cast" || p->num_operands() != 1) {
    return nullptr;
  }
  const Value* src = p->operand(0);
  if (!src->type().is_tensor() || !IsInteger(src->type().dtype())) return nullptr;
  return Find(src);
}

std::vector<ShapeInput> SymbolicValues::InputsOf(const Node& node, bool through_casts) const {
  std::vector<ShapeInput> inputs;
  inputs.reserve(node.num_operands());
  for (const Value* v : node.operands()) {
    const std::vector<DimExpr>* sym = Find(v);
    if (sym == nullptr && through_casts) sym = FindThroughIntToFloatCast(v);
    inputs.push_back(ShapeInput{v->type(), ConstantData(v), sym});
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
