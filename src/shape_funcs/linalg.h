// Registration entry point of the linear-algebra op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_LINALG_H_
#define HETPASS_SRC_SHAPE_FUNCS_LINALG_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterLinalgOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_LINALG_H_
