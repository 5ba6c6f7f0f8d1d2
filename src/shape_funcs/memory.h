// Registration entry point of the memory/data-movement op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_MEMORY_H_
#define HETPASS_SRC_SHAPE_FUNCS_MEMORY_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterMemoryOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_MEMORY_H_
