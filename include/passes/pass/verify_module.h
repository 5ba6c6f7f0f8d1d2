// Module verification as the pass manager runs it: the IR verifier's structural invariants
// (passes/ir/verifier.h) plus the checks that need the op families' rules, which sit above the
// IR layer:
//   - every shape-function invoke's recorded mask covers the mask its primitive's body derives
//     (DeriveInputMask): more is allowed (it only costs copies), a missing bit is an error
//     naming the function, the parameter and the bit, since the shape function would read
//     dims or data the call does not supply.
#ifndef HETPASS_PASS_VERIFY_MODULE_H_
#define HETPASS_PASS_VERIFY_MODULE_H_

#include "absl/status/status.h"
#include "passes/ir/ir.h"
#include "passes/ir/verifier.h"

namespace hetpass {

// Verify(module, options) with VerifyShapeFunctionMasks' check run in the same walk (through
// VerifyOptions::node_check, after the caller's own node_check when it has one): the errors of
// both, a node's structural error before its mask's.
absl::Status VerifyModule(const Module& module, const VerifyOptions& options = {});

// The mask check alone. Errors are InvalidArgument: "<loc>: in function '@f': invoke %r: mask
// of '@p' lacks the value bit of parameter 1 %x: ...". Assumes Verify passed (masks have one
// entry per parameter).
absl::Status VerifyShapeFunctionMasks(const Module& module);

}  // namespace hetpass

#endif  // HETPASS_PASS_VERIFY_MODULE_H_
