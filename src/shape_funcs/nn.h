// Registration entry point of the neural-network op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_NN_H_
#define HETPASS_SRC_SHAPE_FUNCS_NN_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterNnOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_NN_H_
