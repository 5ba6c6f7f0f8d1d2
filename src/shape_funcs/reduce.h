// Registration entry point of the reduce op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_REDUCE_H_
#define HETPASS_SRC_SHAPE_FUNCS_REDUCE_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterReduceOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_REDUCE_H_
