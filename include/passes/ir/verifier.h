// IR verifier: structural invariants every pass must keep. Run after each pass in tests.
// Checks: SSA (each value defined once, uses dominated by definitions in the same or an
// enclosing block), op arity and attribute schema, result counts, region shapes (if: bool
// condition, both branches yield the same count; loop: body params = 2 + carried, yields =
// 1 + carried + scans), invoke targets exist with matching arity, the mask a shape-function
// invoke records covers the mask its primitive's body derives (more is allowed: it only costs
// copies; a missing bit is an error naming the function, parameter and bit), constant data
// matches its type, and with `require_types` that every value is typed and function results
// match the declared result types.
#ifndef HETPASS_IR_VERIFIER_H_
#define HETPASS_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "passes/ir/ir.h"

namespace hetpass {

struct VerifyOptions {
  bool require_types = false;
};

// Errors are InvalidArgument naming the function, node location, op and value.
absl::Status Verify(const Module& module, const VerifyOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_IR_VERIFIER_H_
