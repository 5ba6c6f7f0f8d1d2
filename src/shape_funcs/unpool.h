// Registration entry point of the max unpooling ops (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_UNPOOL_H_
#define HETPASS_SRC_SHAPE_FUNCS_UNPOOL_H_

#include "passes/shape_funcs/op_registry.h"

namespace hetpass {
void RegisterUnpoolOps(OpRegistry::Builder& builder);
}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_UNPOOL_H_
