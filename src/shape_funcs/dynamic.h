// Registration entry point of the dynamic op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_DYNAMIC_H_
#define HETPASS_SRC_SHAPE_FUNCS_DYNAMIC_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterDynamicOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_DYNAMIC_H_
