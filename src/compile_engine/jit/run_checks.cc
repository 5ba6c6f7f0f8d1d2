// Shared run-time checks of the JIT kernels (run_checks.h).
#include "compile_engine/jit/run_checks.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/ir/type.h"

namespace hetpass::jit_internal {

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string TypeString(const Plan& plan, int v) {
  return Type::Tensor(plan.dtypes[v], plan.dims[v]).ToString();
}

bool Overlaps(const TensorArg& a, const TensorArg& b) {
  const auto* a0 = static_cast<const char*>(a.data);
  const auto* b0 = static_cast<const char*>(b.data);
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

absl::Status BroadcastStepShape(const Plan& plan, const Step& step, int v,
                                absl::Span<ShapeVector> shapes) {
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", plan.fn, ": ", message));
  };
  ShapeVector& out = shapes[v];
  if (step.form == OpForm::kBiasAdd) {
    out = shapes[step.args[0]];
    const int64_t bias = shapes[step.args[1]][0];
    if (bias != out[step.axis]) {
      return invalid(absl::StrCat(step.op_name, " ", plan.names[v], ": bias has ", bias,
                                  " elements but data axis ", step.axis, " has ", out[step.axis]));
    }
    return absl::OkStatus();
  }
  out.clear();
  for (int a : step.args) {
    if (!BroadcastInto(out, shapes[a])) {
      std::vector<std::string> operand_shapes;
      for (int b : step.args) operand_shapes.push_back(ShapeString(shapes[b]));
      return invalid(absl::StrCat(step.op_name, " ", plan.names[v], ": operand shapes ",
                                  absl::StrJoin(operand_shapes, ", "), " do not broadcast"));
    }
  }
  return absl::OkStatus();
}
}  // namespace hetpass::jit_internal
