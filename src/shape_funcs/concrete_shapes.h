// Concrete shape arithmetic: the shapes of NumPy broadcasting, reshape, strided_slice and
// broadcast_to when every dim and every target value is a known int64, and the reduced axes of
// a reduction (internal header).
//
// The symbolic shape rules (elementwise.cc, transform.cc, slice.cc) define these ops on DimExpr
// and run at compile time. Kernels that re-derive shapes per call at run time (the CPU JIT's
// shape programs in compile_engine/jit/elementwise_kernel.cc and injective_kernel.cc) need the same arithmetic on plain
// integers without building DimExprs on the hot path: they call these helpers, so the
// arithmetic lives once beside the rules, and concrete_shapes_test.cc checks on random cases
// that each helper gives exactly what the registry's rule gives for constant inputs, errors
// included.
//
// Error messages are the rules' messages without the "op '...': " prefix (callers add their own
// context). No helper allocates for shapes up to rank 6 (ShapeVector is inline).
#ifndef HETPASS_SRC_SHAPE_FUNCS_CONCRETE_SHAPES_H_
#define HETPASS_SRC_SHAPE_FUNCS_CONCRETE_SHAPES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace hetpass {

using ShapeVector = absl::InlinedVector<int64_t, 6>;

// NumPy broadcasting of `b` into `acc`, right-aligned: a missing or unit dim takes the other
// side's. False when some pair of dims differs and neither is 1 (`acc` is then unspecified);
// callers name the operands in their own message.
bool BroadcastInto(ShapeVector& acc, absl::Span<const int64_t> b);

// reshape / dyn.reshape (Relay): 0 copies the input dim at its position, one -1 takes the
// remaining element count, other negative values are errors, and the element counts must agree.
// Products that overflow int64 are errors, never wrapped values.
absl::Status ReshapeShape(absl::Span<const int64_t> in, absl::Span<const int64_t> newshape,
                          ShapeVector& out);

// strided_slice / dyn.strided_slice arguments (views; empty strides: 1, empty axes: 0..n-1).
struct SliceArgs {
  absl::Span<const int64_t> begin, end, strides, axes;
  bool size_mode = false;  // slice_mode "size": end is a length (-1: to the end), stride 1
};

// NumPy/Relay slicing: negative begin/end count from the end, both are clamped into the axis
// ([0, d] forward, [-1, d - 1] backward), a begin/end at or beyond +-(2^31 - 1) means "from the
// start" / "to the end", a zero stride is an error. `out` gets the result shape; when
// `start_stride` is not null it gets, per data axis j, the first element's index at [2j] and
// the stride at [2j + 1] (0 and 1 for axes that are not sliced).
absl::Status StridedSliceShape(absl::Span<const int64_t> in, const SliceArgs& args,
                               ShapeVector& out, int64_t* start_stride = nullptr);

// broadcast_to: `in` broadcast to `target` (right-aligned, no target dim negative, every input
// dim 1 or equal to the target's); `out` gets the target. both_ways (dyn.broadcast_to, ONNX
// Expand): a target dim of 1 also takes the input's dim, so `out` is broadcast(in, target).
absl::Status BroadcastToShape(absl::Span<const int64_t> in, absl::Span<const int64_t> target,
                              ShapeVector& out, bool both_ways = false);

// The reduced-axis mask of a reduction over rank `rank` (reduce.cc's rule): `axes` (possibly
// negative) are reduced, none listed means every axis, `exclude` flips the mask. nullopt for an
// axis out of range or given twice (the rule's errors, which callers word themselves).
std::optional<std::vector<bool>> ReducedAxisMask(absl::Span<const int64_t> axes, bool exclude,
                                                 int64_t rank);

}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_CONCRETE_SHAPES_H_
