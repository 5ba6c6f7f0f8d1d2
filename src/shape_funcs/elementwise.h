// Registration entry point of the elementwise/broadcast op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_ELEMENTWISE_H_
#define HETPASS_SRC_SHAPE_FUNCS_ELEMENTWISE_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterElementwiseOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_ELEMENTWISE_H_
