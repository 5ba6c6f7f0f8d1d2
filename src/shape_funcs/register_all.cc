// The explicit list of op families. Adding a family means adding a line here; there are no
// static registration constructors (their order is unspecified and they hide dependencies).
#include "passes/shape_funcs/op_registry.h"
#include "shape_funcs/elementwise.h"

namespace hetpass {

void RegisterAllOps(OpRegistry::Builder& builder) {
  RegisterElementwiseOps(builder);
}

}  // namespace hetpass
