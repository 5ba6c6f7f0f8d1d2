// IR verifier: structural invariants every pass must keep. Run after each pass in tests.
// Checks: SSA (each value defined once, uses dominated by definitions in the same or an
// enclosing block), op arity and attribute schema, result counts, region shapes (if: bool
// condition, both branches yield the same count; loop: body params = 2 + carried, yields =
// 1 + carried + scans), invoke targets exist with matching arity, a shape-function invoke
// records a mask with one input dependence per parameter, constant data matches its type, and
// with `require_types` that every value is typed and function results match the declared
// result types. Checks that need the op families' rules (a recorded mask covers what its
// primitive's body derives) are VerifyModule's (passes/pass/verify_module.h), one layer up.
#ifndef HETPASS_IR_VERIFIER_H_
#define HETPASS_IR_VERIFIER_H_

#include <functional>

#include "absl/status/status.h"
#include "passes/ir/ir.h"

namespace hetpass {

struct VerifyOptions {
  bool require_types = false;
  // A further check of each node, run in the verifier's walk right after the node's own checks
  // (VerifyModule's mask check: one walk over the module instead of two).
  std::function<absl::Status(const Function&, const Node&)> node_check;
};

// Errors are InvalidArgument naming the function, node location, op and value.
absl::Status Verify(const Module& module, const VerifyOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_IR_VERIFIER_H_
