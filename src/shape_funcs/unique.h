// Registration entry point of unique and its shape counter (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_UNIQUE_H_
#define HETPASS_SRC_SHAPE_FUNCS_UNIQUE_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterUniqueOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_UNIQUE_H_
