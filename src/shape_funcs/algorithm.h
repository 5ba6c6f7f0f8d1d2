// Registration entry point of the algorithm op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_ALGORITHM_H_
#define HETPASS_SRC_SHAPE_FUNCS_ALGORITHM_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterAlgorithmOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_ALGORITHM_H_
