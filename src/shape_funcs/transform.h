// Registration entry point of the transform op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_TRANSFORM_H_
#define HETPASS_SRC_SHAPE_FUNCS_TRANSFORM_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterTransformOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_TRANSFORM_H_
