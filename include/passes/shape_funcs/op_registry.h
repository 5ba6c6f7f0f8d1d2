// The built-in op families: every op hetpass knows, registered into the op-definition
// machinery of the IR layer (passes/ir/op_def.h: OpDef, InputDep, ShapeContext, OpRegistry).
// One file per family in src/shape_funcs (elementwise.cc, nn.cc, transform.cc, ...), listed by
// RegisterAllOps; OpRegistry::Global() is the registry built from that list.
#ifndef HETPASS_SHAPE_FUNCS_OP_REGISTRY_H_
#define HETPASS_SHAPE_FUNCS_OP_REGISTRY_H_

#include "passes/ir/op_def.h"

namespace hetpass {

// The explicit list of op families (src/shape_funcs/register_all.cc).
void RegisterAllOps(OpRegistry::Builder& builder);

}  // namespace hetpass

#endif  // HETPASS_SHAPE_FUNCS_OP_REGISTRY_H_
