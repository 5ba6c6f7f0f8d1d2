// Helpers shared by the op families' shape rules and reference kernels (internal header).
#ifndef HETPASS_SRC_SHAPE_FUNCS_RULE_HELPERS_H_
#define HETPASS_SRC_SHAPE_FUNCS_RULE_HELPERS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/ir/tensor.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::shape_rules {

// NumPy broadcasting of two symbolic shapes. Dims that are provably different and neither 1
// are an error; a symbolic dim against 1 keeps the symbol; two different symbols give the
// symbol of... neither: the result is unknown unless they are equal (the runtime checks).
absl::StatusOr<std::vector<DimExpr>> BroadcastShapes(absl::Span<const DimExpr> a,
                                                     absl::Span<const DimExpr> b,
                                                     const ShapeContext& ctx);

// Normalises a possibly negative axis against `rank`; error names the op and the axis.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const ShapeContext& ctx);

// Concrete shape of a host tensor type (every dim must be constant).
std::vector<int64_t> ConcreteShape(const Type& t);
// Row-major strides of a concrete shape.
std::vector<int64_t> Strides(absl::Span<const int64_t> shape);
// Index of the broadcast source element for output multi-index `out_index`.
int64_t BroadcastSourceIndex(absl::Span<const int64_t> out_index,
                             absl::Span<const int64_t> src_shape);
// Advances a multi-index in row-major order; false after the last one.
bool NextIndex(std::vector<int64_t>& index, absl::Span<const int64_t> shape);

// Single-output helpers.
inline std::vector<Type> One(Type t) { return {std::move(t)}; }

}  // namespace hetpass::shape_rules

#endif  // HETPASS_SRC_SHAPE_FUNCS_RULE_HELPERS_H_
