// Where a use needs its value's data: the rules plan-devices places by and the verifier checks.
#ifndef HETPASS_DEVICE_PLANNER_DEVICE_RULES_H_
#define HETPASS_DEVICE_PLANNER_DEVICE_RULES_H_

#include <set>
#include <string>

#include "passes/ir/ir.h"

namespace hetpass {

// What a use needs of its value's data.
struct UseNeeds {
  bool host = false;    // the host reads it: `value` inputs (shape functions), if/loop control
  bool device = false;  // the user's own device reads it: kernel inputs
};

// Value inputs small enough to be passed to a kernel as host arguments (a 0-d or 1-d tensor of
// at most this many elements: begin/end/strides, a target shape, k). The host already holds
// them for the shape function, so the kernel never reads them from device memory.
inline constexpr int64_t kMaxHostArgumentElements = 64;
bool IsHostArgument(const Type& type);

// The symbols bound when `function` is called: those of its parameters' types. The runtime
// binds them once per call from the arguments' shapes.
std::set<std::string> BoundSymbols(const Function& function);
// True if `type` is a tensor whose dims are constants or expressions of `bound` symbols: its
// size is a host expression, no shape function is needed.
bool ShapeKnown(const Type& type, const std::set<std::string>& bound);
// True if every result of `node` has a known shape in its enclosing function.
bool ResultShapesKnown(const Node& node);

// What operand `i` of `user` needs:
//   shape queries (shape_of): nothing (metadata);
//   `value` inputs that are host arguments: the host;
//   other `value` inputs (a large tensor read by the kernel: what the single-flag baseline masks
//     produces): the user's device, plus the host when a shape function must run (some
//     result shape is not known from the bound symbols);
//   `value` inputs of ops with data-dependent output shapes and an on-device counter
//     (argwhere): the device only (the kernel counts there; manifest-alloc copies the count,
//     not the tensor);
//   if conditions, loop trip counts and conditions: the host;
//   shape-function invokes ({shape_func = true, mask = M}): the host for `value` parameters of
//     M, nothing (metadata) for the others;
//   everything else: the user's device.
UseNeeds OperandNeeds(const Node& user, int i);

// What result `i` of a region body needs when yielded to `owner`: the first yield of a loop
// body (the continue condition) is read by the host; other yields on the owner's device.
UseNeeds YieldNeeds(const Node& owner, int i);

}  // namespace hetpass

#endif  // HETPASS_DEVICE_PLANNER_DEVICE_RULES_H_
