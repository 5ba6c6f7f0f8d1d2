#include "shape_funcs/rule_helpers.h"

#include "absl/strings/str_format.h"

namespace hetpass::shape_rules {

absl::StatusOr<std::vector<DimExpr>> BroadcastShapes(absl::Span<const DimExpr> a,
                                                     absl::Span<const DimExpr> b,
                                                     const ShapeContext& ctx) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<DimExpr> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const bool has_a = i < a.size(), has_b = i < b.size();
    const DimExpr da = has_a ? a[a.size() - 1 - i] : DimExpr(1);
    const DimExpr db = has_b ? b[b.size() - 1 - i] : DimExpr(1);
    DimExpr r;
    if (da == db) {
      r = da;
    } else if (da.is_constant() && da.constant() == 1) {
      r = db;
    } else if (db.is_constant() && db.constant() == 1) {
      r = da;
    } else if (da.is_constant() && db.is_constant()) {
      return ctx.Error(absl::StrFormat("cannot broadcast %s with %s: dimension %d is %d vs %d",
                                       ShapeToString({a.begin(), a.end()}),
                                       ShapeToString({b.begin(), b.end()}),
                                       static_cast<int>(rank - 1 - i), da.constant(),
                                       db.constant()));
    } else if (da.is_unknown() || db.is_unknown()) {
      // One side unknown: if the other is a known non-1 dim it must be that dim.
      const DimExpr& known = da.is_unknown() ? db : da;
      r = known.is_unknown() ? DimExpr::Unknown() : known;
    } else {
      // Two different symbolic dims: equal at run time or one is 1; cannot say which.
      r = DimExpr::Unknown();
    }
    out[rank - 1 - i] = r;
  }
  return out;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const ShapeContext& ctx) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error(absl::StrFormat("axis %d is out of range for rank %d", axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> ConcreteShape(const Type& t) {
  std::vector<int64_t> s;
  for (const DimExpr& d : t.shape()) s.push_back(d.constant());
  return s;
}

std::vector<int64_t> Strides(absl::Span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

int64_t BroadcastSourceIndex(absl::Span<const int64_t> out_index,
                             absl::Span<const int64_t> src_shape) {
  const size_t off = out_index.size() - src_shape.size();
  int64_t idx = 0;
  for (size_t i = 0; i < src_shape.size(); ++i) {
    const int64_t coord = src_shape[i] == 1 ? 0 : out_index[off + i];
    idx = idx * src_shape[i] + coord;
  }
  return idx;
}

bool NextIndex(std::vector<int64_t>& index, absl::Span<const int64_t> shape) {
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (++index[i] < shape[i]) return true;
    index[i] = 0;
  }
  return false;
}

}  // namespace hetpass::shape_rules
