#include "shape_funcs/rule_helpers.h"

#include <cstring>
#include <set>
#include <string>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"

namespace hetpass::shape_rules {

namespace {

bool SharesASymbol(const DimExpr& a, const DimExpr& b) {
  std::set<std::string> sa, sb;
  a.CollectSymbols(&sa);
  b.CollectSymbols(&sb);
  for (const std::string& s : sa) {
    if (sb.contains(s)) return true;
  }
  return false;
}

// A bare symbol is the simplest dim; otherwise the shorter text.
size_t Complexity(const DimExpr& d) { return d.is_symbol() ? 0 : d.ToString().size(); }

}  // namespace

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
      return ctx.Error(
          absl::StrFormat("cannot broadcast %s with %s: dimension %d is %d vs %d",
                          ShapeToString({a.begin(), a.end()}), ShapeToString({b.begin(), b.end()}),
                          static_cast<int>(rank - 1 - i), da.constant(), db.constant()));
    } else if (da.is_unknown() || db.is_unknown()) {
      // One side unknown: if the other is a constant non-1 dim it must be that dim. A symbolic
      // other side may be 1 at run time (then the unknown side wins), so the result is unknown.
      const DimExpr& known = da.is_unknown() ? db : da;
      r = known.is_constant() ? known : DimExpr::Unknown();
    } else if (ctx.can_assume() && SharesASymbol(da, db)) {
      // Two related dims (`seq` and `min(128, seq)`): the broadcast is valid when they are
      // equal or the other is 1. Keep the simpler one (the input's symbol) under that
      // assumption, which the VM checks, instead of a fresh symbol that forgets the relation.
      const bool keep_a = Complexity(da) <= Complexity(db);
      const DimExpr& keep = keep_a ? da : db;
      const DimExpr& other = keep_a ? db : da;
      ctx.Assume(Assumption::Kind::kBroadcast, other, keep,
                 absl::StrFormat("broadcast of %s with %s (dimension %d)",
                                 ShapeToString({a.begin(), a.end()}),
                                 ShapeToString({b.begin(), b.end()}),
                                 static_cast<int>(rank - 1 - i)));
      r = keep;
    } else {
      // Two unrelated symbolic dims: equal at run time or one is 1; cannot say which.
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

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int64_t rank,
                                                   const ShapeContext& ctx) {
  std::vector<int64_t> out;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank, ctx));
    if (seen[n]) return ctx.Error(absl::StrFormat("axis %d is given twice", a));
    seen[n] = true;
    out.push_back(n);
  }
  return out;
}

Tensor ZerosOf(const Type& t) { return Tensor::Zeros(t.dtype(), ConcreteShape(t)); }

void CopyElements(const Tensor& src, int64_t si, Tensor& dst, int64_t di, int64_t n) {
  if (n <= 0) return;
  const int size = DTypeSize(src.dtype());
  std::memcpy(dst.mutable_data() + di * size, src.data() + si * size, n * size);
}

int64_t Offset(absl::Span<const int64_t> index, absl::Span<const int64_t> strides) {
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) off += index[i] * strides[i];
  return off;
}

bool ProvablyNonNegative(const DimExpr& e) { return DimExpr::ProveNonNegative(e); }

namespace {

// What DimExpr's prover does not see: x // c <= x for x >= 0 and c >= 1; min(x, y) <= either
// (each then proved by ProvablyLessOrEqual, prover first).
bool StructurallyLessOrEqual(const DimExpr& a, const DimExpr& b) {
  if (a.is_constant() || a.is_unknown()) return false;
  const DimNode& n = *a.node();
  if (n.kind == DimExpr::Kind::kFloorDiv && n.args[1].is_constant() && n.args[1].constant() >= 1 &&
      ProvablyNonNegative(n.args[0])) {
    return ProvablyLessOrEqual(n.args[0], b);
  }
  if (n.kind == DimExpr::Kind::kMin) {
    return ProvablyLessOrEqual(n.args[0], b) || ProvablyLessOrEqual(n.args[1], b);
  }
  return false;
}

}  // namespace

bool ProvablyLessOrEqual(const DimExpr& a, const DimExpr& b) {
  return ProvablyNonNegative(b - a) || StructurallyLessOrEqual(a, b);
}

// The structural rules first, then DimExpr::Min/Max, whose own proofs run the prover once per
// direction (asking ProvablyLessOrEqual first proved each direction twice when both failed).
// The argument order makes each ask a <= b before b <= a, as the structural checks do.
DimExpr SymMin(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return DimExpr::Unknown();
  if (StructurallyLessOrEqual(a, b)) return a;
  if (StructurallyLessOrEqual(b, a)) return b;
  return DimExpr::Min(b, a);  // b >= a -> a; b <= a -> b
}

DimExpr SymMax(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return DimExpr::Unknown();
  if (StructurallyLessOrEqual(b, a)) return a;
  if (StructurallyLessOrEqual(a, b)) return b;
  return DimExpr::Max(a, b);  // a >= b -> a; a <= b -> b
}

DimExpr CeilDivPositive(const DimExpr& a, int64_t c) { return DimExpr::FloorDiv(a + (c - 1), c); }

DimExpr Product(absl::Span<const DimExpr> dims) {
  DimExpr p = 1;
  for (const DimExpr& d : dims) p = p * d;
  return p;
}

std::optional<std::vector<int64_t>> AllConstant(absl::Span<const DimExpr> values) {
  std::vector<int64_t> out;
  out.reserve(values.size());
  for (const DimExpr& v : values) {
    if (!v.is_constant()) return std::nullopt;
    out.push_back(v.constant());
  }
  return out;
}

std::vector<DimExpr> ToDims(absl::Span<const int64_t> values) {
  return std::vector<DimExpr>(values.begin(), values.end());
}

std::vector<DimExpr> UnknownDims(int64_t rank) {
  return std::vector<DimExpr>(rank, DimExpr::Unknown());
}

absl::StatusOr<std::optional<std::vector<DimExpr>>> IntInput(ShapeContext& ctx, int i,
                                                             absl::string_view what) {
  if (!IsInteger(ctx.dtype(i))) {
    return ctx.Error(
        absl::StrFormat("%s must be an integer tensor, got %s", what, DTypeName(ctx.dtype(i))));
  }
  return ctx.IntValues(i);
}

absl::StatusOr<int64_t> StaticLength(ShapeContext& ctx, int i, absl::string_view what) {
  if (ctx.rank(i) != 1) {
    return ctx.Error(absl::StrFormat("%s must be 1-D, got rank %d", what, ctx.rank(i)));
  }
  ASSIGN_OR_RETURN(DimExpr length, ctx.NumValues(i));
  if (!length.is_constant()) {
    return ctx.Error(absl::StrFormat("%s must have a static length to fix the output rank, got %s",
                                     what, length.ToString()));
  }
  return length.constant();
}

std::optional<std::vector<std::vector<DimExpr>>> ForwardIntValues(ShapeContext& ctx) {
  if (!IsInteger(ctx.dtype(0))) return std::nullopt;
  auto v = ctx.IntValues(0);
  if (!v.ok() || !v->has_value()) return std::nullopt;
  return std::vector<std::vector<DimExpr>>{**v};
}

std::vector<int64_t> ConcreteShape(const Type& t) {
  std::vector<int64_t> s;
  for (const DimExpr& d : t.shape()) s.push_back(d.constant());
  return s;
}

std::optional<int64_t> ResolveNegativeIndex(int64_t i, int64_t n) {
  if (i < -n || i >= n) return std::nullopt;
  return i < 0 ? i + n : i;
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
