// Registration entry point of the slice op family (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_SLICE_H_
#define HETPASS_SRC_SHAPE_FUNCS_SLICE_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterSliceOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_SLICE_H_
