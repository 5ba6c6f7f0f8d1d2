// Registration entry point of the random-number ops (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_RANDOM_H_
#define HETPASS_SRC_SHAPE_FUNCS_RANDOM_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterRandomOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_RANDOM_H_
