// Registration entry point of the image op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_IMAGE_H_
#define HETPASS_SRC_SHAPE_FUNCS_IMAGE_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterImageOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_IMAGE_H_
