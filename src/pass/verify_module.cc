// Module verification (verify_module.h): the structural verifier, whose walk over every
// function's nodes (regions included) also compares each shape-function invoke's recorded mask
// with the mask its callee derives (VerifyOptions::node_check).
#include "passes/pass/verify_module.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/shape_funcs/primitive_function.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

std::string ParamText(const Value* v) {
  return v->name().empty() ? absl::StrCat("<parameter ", v->index(), ">") : absl::StrCat("%", v->name());
}

absl::Status CheckInvoke(const Module& module, const Function& f, const Node& node) {
  const Function* callee = module.FindFunction(node.callee());
  const std::vector<InputDep>* mask = ShapeFunctionMask(node);
  if (callee == nullptr || mask == nullptr) return absl::OkStatus();  // the verifier reports these
  const std::vector<InputDep>& entries = *mask;
  const std::vector<InputDep> derived = DeriveInputMask(*callee);
  for (size_t i = 0; i < derived.size() && i < entries.size(); ++i) {
    const InputDep recorded = entries[i];
    const int missing = static_cast<int>(derived[i]) & ~static_cast<int>(recorded);
    if (missing == 0) continue;
    const absl::string_view bits = missing == 3   ? "shape and value bits"
                                   : missing == 2 ? "value bit"
                                                  : "shape bit";
    std::string results;  // as the structural verifier names a node: "invoke %a, %b"
    for (int r = 0; r < node.num_results(); ++r) {
      const Value* v = node.result(r);
      absl::StrAppend(&results, r ? ", " : " ",
                      v->name().empty() ? absl::StrCat("<result ", r, ">") : absl::StrCat("%", v->name()));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: in function '@%s': %s%s: mask of '@%s' lacks the %s of parameter %d %s: the call "
        "records '%s' but the body derives '%s'",
        FormatLocation(&module, node.loc()), f.name(), node.OpName(), results, node.callee(), bits, i,
        ParamText(callee->body().param(static_cast<int>(i))), InputDepName(recorded),
        InputDepName(derived[i])));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyShapeFunctionMasks(const Module& module) {
  for (const auto& f : module.functions()) {
    absl::Status status = absl::OkStatus();
    WalkNodes(f->body(), [&](const Node& n) {
      if (status.ok() && IsShapeFunctionInvoke(n)) status = CheckInvoke(module, *f, n);
    });
    RETURN_IF_ERROR(status);
  }
  return absl::OkStatus();
}

absl::Status VerifyModule(const Module& module, const VerifyOptions& options) {
  VerifyOptions with_masks = options;
  with_masks.node_check = [&module, user = options.node_check](const Function& f,
                                                             const Node& n) -> absl::Status {
    if (user) RETURN_IF_ERROR(user(f, n));
    return IsShapeFunctionInvoke(n) ? CheckInvoke(module, f, n) : absl::OkStatus();
  };
  return Verify(module, with_masks);
}

}  // namespace hetpass
