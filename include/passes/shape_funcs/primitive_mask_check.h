// Checks a primitive function's dependence mask against what its composed shape function
// really does: the perturbation check that src/shape_funcs/mask_verification_test.cc runs on
// every op, here for a fused group. DeriveInputMask computes the mask by a dataflow over the
// body; nothing in that derivation proves it right, and an under-declared mask is a silent bug
// at run time (manifest-alloc hides those dims or skips that copy, and the shape function reads
// garbage or fails). CheckPrimitiveMask tests one set of concrete arguments:
//
//   Phase 1 (base run): the composed shape function runs with EVERY parameter's dims and data
//     visible (PrimitiveShapeRunOptions::apply_derived_mask = false), recording what it reads
//     of each parameter. It must succeed (the arguments must be a valid call), and every
//     recorded read must be covered by the mask: a read outside it is under-declared.
//   Phase 2 (perturbations): for each parameter and each bit its mask lacks,
//       value missing: the contents change, same shape (a step of one element, two unequal
//         elements swapped, one negated);
//       shape missing: each dim the declared type leaves open (a symbol or `?`) grows or
//         shrinks by one, contents refilled cyclically. Static dims are fixed by the type, and
//         a parameter whose mask has `value` keeps its shape: the count of its values travels
//         with them (ShapeContext::NumValues), so it is declared with them.
//     Each perturbed run must give the same result types AND record the same reads as the base
//     run. An error counts as a change here, unlike the over-declaration side of the op
//     verification: an input the mask says is never read must not even be able to break the
//     shape function.
//
// Over-declaration is not checked: a derived bit nothing needs costs a copy, not correctness;
// the op registry's verification keeps each op's mask exact, and the derivation only joins
// those. Checking one call proves nothing about others: callers run it over many random
// arguments (src/shape_funcs/primitive_mask_check_test.cc builds random fused groups).
#ifndef HETPASS_SHAPE_FUNCS_PRIMITIVE_MASK_CHECK_H_
#define HETPASS_SHAPE_FUNCS_PRIMITIVE_MASK_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "passes/ir/ir.h"
#include "passes/ir/tensor.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

struct PrimitiveMaskCheckOptions {
  uint64_t seed = 1;      // the perturbations are pseudo-random and reproducible
  int perturbations = 3;  // value perturbations per parameter lacking `value`
};

// Checks `mask` (one entry per parameter of `primitive`, normally DeriveInputMask's) on the
// concrete arguments `args` (one per parameter, dtype and rank as declared). Errors:
// InvalidArgument when the arguments do not fit or the base run fails; FailedPrecondition
// naming the function, the parameter and the bit when the mask is under-declared.
absl::Status CheckPrimitiveMask(const Function& primitive, absl::Span<const InputDep> mask,
                                absl::Span<const Tensor> args,
                                const PrimitiveMaskCheckOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_SHAPE_FUNCS_PRIMITIVE_MASK_CHECK_H_
