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
// Normalises a list of axes; duplicates are an error. The result keeps the given order.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int64_t rank,
                                                   const ShapeContext& ctx);

// Concrete shape of a host tensor type (every dim must be constant).
std::vector<int64_t> ConcreteShape(const Type& t);
// A zero tensor of a concrete type (reference kernels allocate their outputs with it).
Tensor ZerosOf(const Type& t);
// An index along an axis of size n, negative counting from the end (ONNX's gather/scatter
// indices); nullopt when out of [-n, n).
std::optional<int64_t> ResolveNegativeIndex(int64_t i, int64_t n);
// Row-major strides of a concrete shape.
std::vector<int64_t> Strides(absl::Span<const int64_t> shape);
// Index of the broadcast source element for output multi-index `out_index`.
int64_t BroadcastSourceIndex(absl::Span<const int64_t> out_index,
                             absl::Span<const int64_t> src_shape);
// Advances a multi-index in row-major order; false after the last one.
bool NextIndex(std::vector<int64_t>& index, absl::Span<const int64_t> shape);
// Copies `n` elements from src[si..] to dst[di..] bitwise (dtypes must match).
void CopyElements(const Tensor& src, int64_t si, Tensor& dst, int64_t di, int64_t n = 1);
// Flat offset of a multi-index under `strides`.
int64_t Offset(absl::Span<const int64_t> index, absl::Span<const int64_t> strides);

// ---- symbolic reasoning ----------------------------------------------------------------------
// Every symbol denotes a tensor dimension, so it is >= 0 and (by convention, documented in the
// families that rely on it) at most kMaxDim. These helpers only simplify what that proves.
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
// True if `e` is provably >= 0 for every non-negative binding of its symbols.
bool ProvablyNonNegative(const DimExpr& e);
// True if both are constants and differ (symbolic dims are only rejected when provably wrong).
inline bool ProvablyDifferent(const DimExpr& a, const DimExpr& b) {
  return a.is_constant() && b.is_constant() && a.constant() != b.constant();
}
// True if a <= b is provable (differences with a provable sign, x // c <= x, min(x, y) <= x).
bool ProvablyLessOrEqual(const DimExpr& a, const DimExpr& b);
// ceil(a / c) for a constant c >= 1, as (a + c - 1) // c (prints better than -((-a) // c)).
DimExpr CeilDivPositive(const DimExpr& a, int64_t c);
// min / max that pick a side when the difference has a provable sign.
DimExpr SymMin(const DimExpr& a, const DimExpr& b);
DimExpr SymMax(const DimExpr& a, const DimExpr& b);
// Product of dims (1 for an empty list).
DimExpr Product(absl::Span<const DimExpr> dims);
// The integers when every expression is a constant.
std::optional<std::vector<int64_t>> AllConstant(absl::Span<const DimExpr> values);
std::vector<DimExpr> ToDims(absl::Span<const int64_t> values);
inline std::vector<DimExpr> ToVec(absl::Span<const DimExpr> s) { return {s.begin(), s.end()}; }
std::vector<DimExpr> UnknownDims(int64_t rank);

// Reads the integer contents of `value` input i: nullopt when unknown now. Error when the
// input is not an integer tensor.
absl::StatusOr<std::optional<std::vector<DimExpr>>> IntInput(ShapeContext& ctx, int i,
                                                             absl::string_view what);
// The static length of 1-D input i read from its shape (inputs declared shape+value because the
// rule needs the length when the values are unknown at compile time).
absl::StatusOr<int64_t> StaticLength(ShapeContext& ctx, int i, absl::string_view what);

// Symbolic-value rule that forwards the integer contents of input 0 unchanged (reshape,
// squeeze, expand_dims of shape tensors).
std::optional<std::vector<std::vector<DimExpr>>> ForwardIntValues(ShapeContext& ctx);

// Single-output helpers.
inline std::vector<Type> One(Type t) { return {std::move(t)}; }

}  // namespace hetpass::shape_rules

#endif  // HETPASS_SRC_SHAPE_FUNCS_RULE_HELPERS_H_
