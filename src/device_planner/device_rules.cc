#include "passes/device_planner/device_rules.h"

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

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
      if (NeedsValue(op.dep(i)) && !op.data_dependent_output_shape()) {
        return UseNeeds{true, !IsHostArgument(user.operand(i)->type())};
      }
      return UseNeeds{false, true};
    }
    case NodeKind::kIf:
      return UseNeeds{true, false};
    case NodeKind::kLoop:
      return i < 2 ? UseNeeds{true, false} : UseNeeds{false, true};
    default:
      return UseNeeds{false, true};
  }
}

UseNeeds YieldNeeds(const Node& owner, int i) {
  return owner.kind() == NodeKind::kLoop && i == 0 ? UseNeeds{true, false} : UseNeeds{false, true};
}

}  // namespace hetpass
