// unique and its shape counter unique_count (ONNX Unique-11).
//
//   unique(data) {axis = [] or [a], sorted} -> (y, indices, inverse_indices, counts)
// With axis [] the data is flattened and its elements are compared; with axis [a] the slices
// data[.., j, ..] along axis a are (element by element, lexicographically). y holds the U
// distinct elements or slices: ascending with sorted, else in order of first occurrence.
// indices [U] (i64): the first occurrence of each; inverse_indices [n] (n = the element count,
// or data's dim a): the position in y of each element or slice; counts [U]: occurrences.
//
// Algorithm: a stable sort of the slice numbers 0..n-1 by lexicographic comparison, then one
// pass grouping equal neighbours: each group's first member is the first occurrence (the sort
// is stable). Unsorted output orders the groups by that first occurrence. Integers compare as
// int64, floats as doubles with NaN after every number and NaNs equal to each other (NumPy's
// unique, which ONNX's reference uses, collapses NaNs the same way). O(n log n) comparisons.
//
// U depends on the values: y, indices and counts have one `?` dim each (y's dim a, or its
// only dim). So unique is DataDependentOutputShape with the counter unique_count, which runs
// on unique's device and returns U as an i64 scalar: manifest-alloc copies those 8 bytes to
// the host, never the data (unique's shape rule reads the data's values, mask shape+value,
// for constant folding and for the host shape function the counter replaces). The counter's
// rule reads nothing (its result is always i64[]): mask none. Both ops share FindUnique, so the
// count and the outputs cannot disagree.
#include "shape_funcs/unique.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

// data viewed as [outer, n, inner]: slice j is data[o, j, i] for every (o, i), o major.
struct SliceLayout {
  int64_t outer = 1, n = 0, inner = 1;
};

// The layout for `axis` (nullopt: flattened) of a concrete shape.
SliceLayout LayoutOf(const std::vector<int64_t>& shape, std::optional<int64_t> axis) {
  SliceLayout l;
  if (!axis) {
    l.n = 1;
    for (int64_t d : shape) l.n *= d;
    return l;
  }
  l.n = shape[*axis];
  for (int64_t d = 0; d < *axis; ++d) l.outer *= shape[d];
  for (size_t d = *axis + 1; d < shape.size(); ++d) l.inner *= shape[d];
  return l;
}

// The grouping of the n slices (see the file comment).
struct Grouping {
  std::vector<int64_t> first;    // per output position: the slice of first occurrence
  std::vector<int64_t> inverse;  // per slice: its output position
  std::vector<int64_t> counts;   // per output position
};

// -1, 0, 1 under the total order of the file comment.
template <typename T>
int CompareValues(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

template <typename T>
Grouping FindUnique(const std::vector<T>& v, const SliceLayout& l, bool sorted) {
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const int c = CompareValues(v[(o * l.n + a) * l.inner + i], v[(o * l.n + b) * l.inner + i]);
        if (c != 0) return c;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(l.n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  // Groups in sorted order: their first member and size; each slice's group.
  std::vector<int64_t> group_first, group_size, group_of(l.n);
  for (int64_t k = 0; k < l.n; ++k) {
    if (k == 0 || compare(order[k - 1], order[k]) != 0) {
      group_first.push_back(order[k]);
      group_size.push_back(0);
    }
    ++group_size.back();
    group_of[order[k]] = static_cast<int64_t>(group_first.size()) - 1;
  }
  const int64_t u = static_cast<int64_t>(group_first.size());
  std::vector<int64_t> position(u);  // group -> output position
  std::iota(position.begin(), position.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(u);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return group_first[a] < group_first[b]; });
    for (int64_t p = 0; p < u; ++p) position[by_first[p]] = p;
  }
  Grouping g;
  g.first.resize(u);
  g.counts.resize(u);
  for (int64_t k = 0; k < u; ++k) {
    g.first[position[k]] = group_first[k];
    g.counts[position[k]] = group_size[k];
  }
  g.inverse.resize(l.n);
  for (int64_t j = 0; j < l.n; ++j) g.inverse[j] = position[group_of[j]];
  return g;
}

// The grouping of a host tensor: integers as int64, floats as doubles.
Grouping FindUniqueOf(const Tensor& data, const SliceLayout& l, bool sorted) {
  if (IsFloat(data.dtype())) return FindUnique(data.ToDoubles(), l, sorted);
  return FindUnique(data.ToInt64s(), l, sorted);
}

// The axis attribute: nullopt for [] (flattened), else the normalised axis.
absl::StatusOr<std::optional<int64_t>> AxisOf(const Attrs& attrs, int64_t rank) {
  const std::vector<int64_t>& axis = attrs.GetIntList("axis");
  if (axis.empty()) return std::nullopt;
  if (axis.size() > 1 || axis[0] < -rank || axis[0] >= rank) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "axis must be [] (flattened) or one axis in [%d, %d), got %d values starting %d", -rank,
        rank, axis.size(), axis[0]));
  }
  return axis[0] < 0 ? axis[0] + rank : axis[0];
}

Result UniqueRule(ShapeContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> axis = AxisOf(ctx.attrs(), ctx.rank(0));
  if (!axis.ok()) return ctx.Error(axis.status().message());
  ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
  const DimExpr n = *axis ? shape[**axis] : shape_rules::Product(shape);
  // The count of distinct slices when the values are known now (constants, or the host shape
  // function when the counter is not used).
  DimExpr u = DimExpr::Unknown();
  if (const std::optional<std::vector<int64_t>> concrete = shape_rules::AllConstant(shape)) {
    std::optional<Tensor> data;
    if (IsFloat(ctx.dtype(0))) {
      ASSIGN_OR_RETURN(auto v, ctx.FloatValues(0));
      if (v) data = Tensor::FromDoubles(ctx.dtype(0), *concrete, *v);
    } else {
      ASSIGN_OR_RETURN(auto v, ctx.IntValues(0));
      if (v && shape_rules::AllConstant(*v)) {
        data = Tensor::FromInt64s(DType::kI64, *concrete, *shape_rules::AllConstant(*v));
      }
    }
    if (data) {
      const Grouping g =
          FindUniqueOf(*data, LayoutOf(*concrete, *axis), ctx.attrs().GetBool("sorted"));
      u = static_cast<int64_t>(g.first.size());
    }
  }
  std::vector<DimExpr> y = *axis ? shape_rules::ToVec(shape) : std::vector<DimExpr>{u};
  if (*axis) y[**axis] = u;
  return std::vector<Type>{Type::Tensor(ctx.dtype(0), std::move(y)), Type::Tensor(DType::kI64, {u}),
                           Type::Tensor(DType::kI64, {n}), Type::Tensor(DType::kI64, {u})};
}

KernelResult UniqueKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  const Tensor& data = in[0];
  ASSIGN_OR_RETURN(std::optional<int64_t> axis, AxisOf(attrs, data.rank()));
  const SliceLayout l = LayoutOf(data.shape(), axis);
  const Grouping g = FindUniqueOf(data, l, attrs.GetBool("sorted"));
  const int64_t u = static_cast<int64_t>(g.first.size());
  std::vector<int64_t> ys = data.shape();
  if (axis) {
    ys[*axis] = u;
  } else {
    ys = {u};
  }
  // The outputs were allocated from the counter's count (or the shape function): a mismatch
  // is a bug of one of them, reported rather than written out of bounds.
  if (out_t[0].shape() != shape_rules::ToDims(ys)) {
    return absl::InternalError(absl::StrFormat(
        "unique: %d distinct slices but y is allocated as %s", u, out_t[0].ToString()));
  }
  Tensor y = shape_rules::ZerosOf(out_t[0]);
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t p = 0; p < u; ++p) {
      shape_rules::CopyElements(data, (o * l.n + g.first[p]) * l.inner, y, (o * u + p) * l.inner,
                                l.inner);
    }
  }
  return std::vector<Tensor>{std::move(y), Tensor::FromInt64s(DType::kI64, {u}, g.first),
                             Tensor::FromInt64s(DType::kI64, {l.n}, g.inverse),
                             Tensor::FromInt64s(DType::kI64, {u}, g.counts)};
}

void UniqueAttrs(OpDefBuilder& op) {
  op.Attr("axis", AttrType::kIntList, std::vector<int64_t>{}).Attr("sorted", AttrType::kBool, true);
}

}  // namespace

void RegisterUniqueOps(OpRegistry::Builder& b) {
  OpDefBuilder count = b.Register("unique_count");
  count.Input("data", InputDep::kNone)
      .Pattern(FusionPattern::kOpaque)
      .Doc(
          "the number of distinct elements or slices unique finds, as an i64 scalar (its shape "
          "counter)")
      .Rule(
          [](ShapeContext&) -> Result { return std::vector<Type>{Type::Tensor(DType::kI64, {})}; })
      .Reference([](absl::Span<const Tensor> in, const Attrs& attrs,
                    absl::Span<const Type>) -> KernelResult {
        ASSIGN_OR_RETURN(std::optional<int64_t> axis, AxisOf(attrs, in[0].rank()));
        const Grouping g = FindUniqueOf(in[0], LayoutOf(in[0].shape(), axis), true);
        return std::vector<Tensor>{
            Tensor::FromInt64s(DType::kI64, {}, {static_cast<int64_t>(g.first.size())})};
      });
  UniqueAttrs(count);
  OpDefBuilder unique = b.Register("unique");
  unique.Input("data", InputDep::kShapeAndValue)
      .Outputs(4)
      .Pattern(FusionPattern::kOpaque)
      .DataDependentOutputShape("unique_count")
      .Doc(
          "the distinct elements (axis []) or slices along axis of data: (y, indices, "
          "inverse_indices, counts), ascending with sorted, else by first occurrence (ONNX "
          "Unique)")
      .Rule(UniqueRule)
      .Reference(UniqueKernel);
  UniqueAttrs(unique);
}

}  // namespace hetpass
