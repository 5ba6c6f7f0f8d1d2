#include "passes/device_planner/device_rules.h"

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

std::set<std::string> BoundSymbols(const Function& function) {
  std::set<std::string> bound;
  for (const auto& p : function.body().params()) {
    if (!p->type().is_tensor()) continue;
    for (const DimExpr& d : p->type().shape()) d.CollectSymbols(&bound);
  }
  return bound;
}

bool ShapeKnown(const Type& type, const std::set<std::string>& bound) {
  if (!type.is_tensor()) return false;
  for (const DimExpr& d : type.shape()) {
    if (d.is_constant()) continue;
    if (d.is_unknown()) return false;
    if (d.is_symbol()) {  // the common case, without collecting into a set
      if (!bound.contains(d.symbol_name())) return false;
      continue;
    }
    std::set<std::string> syms;
    d.CollectSymbols(&syms);
    for (const std::string& s : syms) {
      if (!bound.contains(s)) return false;
    }
  }
  return true;
}

namespace {

const Function* EnclosingFunction(const Node& n) {
  const Block* b = n.parent();
  while (b != nullptr && b->parent_function() == nullptr) {
    b = b->parent_node() != nullptr ? b->parent_node()->parent() : nullptr;
  }
  return b != nullptr ? b->parent_function() : nullptr;
}

}  // namespace

bool ResultShapesKnown(const Node& node) {
  const Function* f = EnclosingFunction(node);
  const std::set<std::string> bound = f != nullptr ? BoundSymbols(*f) : std::set<std::string>{};
  for (const auto& r : node.results()) {
    if (!ShapeKnown(r->type(), bound)) return false;
  }
  return true;
}

bool IsHostArgument(const Type& type) {
  if (!type.is_tensor() || type.rank() > 1) return false;
  const DimExpr n = type.NumElements();
  return n.is_constant() && n.constant() <= kMaxHostArgumentElements;
}

UseNeeds OperandNeeds(const Node& user, int i) {
  switch (user.kind()) {
    case NodeKind::kCall: {
      const OpDef& op = *user.op();
      if (op.role() == OpRole::kShapeQuery) return UseNeeds{};
      // A data-dependent op with an on-device counter reads its `value` inputs on the device
      // only (the count crosses, manifest-alloc copies it); without one, like any other.
      if (NeedsValue(op.dep(i)) &&
          (!op.data_dependent_output_shape() || op.shape_counter().empty())) {
        if (IsHostArgument(user.operand(i)->type())) return UseNeeds{true, false};
        return UseNeeds{!ResultShapesKnown(user), true};
      }
      return UseNeeds{false, true};
    }
    case NodeKind::kInvoke: {
      // A shape function reads `value` parameters on the host and only metadata otherwise.
      if (const std::vector<InputDep>* mask = ShapeFunctionMask(user)) {
        const bool value = i < static_cast<int>(mask->size()) && NeedsValue((*mask)[i]);
        return UseNeeds{value, false};
      }
      // A call or kernel reads each argument where the callee's parameter lives (a primitive
      // takes host arguments such as begin/end/strides on the host); unplaced: on its device.
      const Function* f = EnclosingFunction(user);
      const Function* callee =
          f != nullptr && f->module() != nullptr ? f->module()->FindFunction(user.callee()) : nullptr;
      if (callee != nullptr && i < callee->body().num_params()) {
        const DeviceKind d = callee->body().param(i)->device();
        if (d != DeviceKind::kUnset && !IsAccelerator(d)) return UseNeeds{true, false};
      }
      return UseNeeds{false, true};
    }
    case NodeKind::kIf:
      return UseNeeds{true, false};
    case NodeKind::kLoop:
      return i < 2 ? UseNeeds{true, false} : UseNeeds{false, true};
    case NodeKind::kBuiltin:
      // A container lives with its elements (the builtin's side); a position is read on the
      // host; a length or presence query reads the container's metadata only.
      switch (user.builtin()) {
        case Builtin::kSeqLength:
        case Builtin::kOptHas:
          return UseNeeds{};
        case Builtin::kSeqAt:
        case Builtin::kSeqErase:
          return i == 1 ? UseNeeds{true, false} : UseNeeds{false, true};
        case Builtin::kSeqInsert:
          return i == 2 ? UseNeeds{true, false} : UseNeeds{false, true};
        default:
          return UseNeeds{false, true};
      }
    default:
      return UseNeeds{false, true};
  }
}

UseNeeds YieldNeeds(const Node& owner, int i) {
  return owner.kind() == NodeKind::kLoop && i == 0 ? UseNeeds{true, false} : UseNeeds{false, true};
}

}  // namespace hetpass
