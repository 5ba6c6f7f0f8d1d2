// Primitive functions: the fused kernel groups fuse-ops creates (`def @fused_... attributes
// {primitive = true}`). Each one is compiled as a single kernel; what the rest of the pipeline
// needs to know about it as a *unit* is derived here from the ops inside, never written by hand:
//
//   DeriveInputMask      the per-parameter dependence mask of the fused function (the same
//                        none/shape/value/shape+value lattice as an op's inputs, see
//                        op_registry.h): what the fused function's shape function reads of each
//                        argument. ManifestAlloc and plan-devices ask this instead of the ops.
//   InferPrimitiveTypes  the fused function's shape function: the inner ops' shape rules run in
//                        program order, in symbolic mode (types over symbols) or in concrete mode
//                        (the host shape function at run time). It reads of its inputs exactly
//                        what DeriveInputMask promises and no more.
//
// Mask derivation (backward dataflow over the body, last binding first):
//   need(v)   what the composed shape function needs of inner value v; starts as `shape` for
//             every returned value (the output shapes are what the function computes).
//   For a call whose results' joined need is N (N == none: the binding contributes nothing):
//     shape in N  operand i gains the op's dep(i) (its shape rule runs)
//     value in N  a later op reads the contents: the value is computed on the host by the op's
//                 reference kernel (or its symbolic-value rule), which reads every operand's
//                 shape and contents -> operand i gains shape+value; except for a shape query
//                 (role kShapeQuery, e.g. shape_of), whose contents are its operand's shape ->
//                 operand i gains shape only. A value needed as a value also needs its shape.
//   tuple / get_item pass the need through; other kinds (invoke, if, loop: never produced by
//   fuse-ops) are treated conservatively as shape+value on every operand.
//   The mask of parameter p is need(p): the union over all its uses.
// Examples: dense+bias_add+relu -> every parameter `shape`; dyn.reshape(%a, %p) -> %p `value`;
// %p used by exp and as dyn.reshape's target -> `shape+value` (TVM's single flag could not say
// that); %p used only as dyn.full's fill_value -> `none`.
#ifndef HETPASS_SHAPE_FUNCS_PRIMITIVE_FUNCTION_H_
#define HETPASS_SHAPE_FUNCS_PRIMITIVE_FUNCTION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

// kPrimitiveAttr and IsPrimitive() live in passes/ir/ir.h.

// One mask per parameter of `primitive` (see the derivation above).
std::vector<InputDep> DeriveInputMask(const Function& primitive);

// The composed shape function of `primitive`: its result types for the given argument types
// (one ShapeInput per parameter, dtype and rank as declared). Only data of parameters whose
// derived mask includes `value` is read (`value` / `sym_value` of others are ignored), and the
// dims of parameters whose mask is `none` are hidden from the inner rules. Inner values needed
// as values are computed on the host by the op's reference kernel when every operand's data is
// known, else by its symbolic-value rule. Errors name the function and the inner binding; an
// inner rule reading beyond its op's mask is an internal error.
absl::StatusOr<std::vector<Type>> InferPrimitiveTypes(const Function& primitive,
                                                      std::vector<ShapeInput> inputs);

// How a run of the composed shape function behaves, for checkers of the derived mask
// (CheckPrimitiveMask in primitive_mask_check.h). The defaults are the run-time contract above.
struct PrimitiveShapeRunOptions {
  // True: the inner rules see what the derived mask promises and nothing more (no dims of
  // `none` parameters, no data of parameters without `value`). False: every parameter's dims
  // and data are visible, so the reads recorded are what the rules really ask for, whatever
  // the derived mask says.
  bool apply_derived_mask = true;
  // When set, receives one entry per parameter: what the run read of it. `shape`: its dims
  // reached an inner shape rule, a host kernel or a result; `value`: its contents (or their
  // count) reached an inner rule or a host kernel. Filled in when the run fails too.
  std::vector<InputDep>* reads = nullptr;
};
absl::StatusOr<std::vector<Type>> InferPrimitiveTypes(const Function& primitive,
                                                      std::vector<ShapeInput> inputs,
                                                      const PrimitiveShapeRunOptions& options);

}  // namespace hetpass

#endif  // HETPASS_SHAPE_FUNCS_PRIMITIVE_FUNCTION_H_
