// Registration entry point of the indexed gather/scatter op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_SCATTER_H_
#define HETPASS_SRC_SHAPE_FUNCS_SCATTER_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterScatterOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_SCATTER_H_
