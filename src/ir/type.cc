#include "passes/ir/type.h"

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hetpass {

const std::vector<DimExpr> Type::kNoDims;
const std::vector<Type> Type::kNoFields;

Type Type::Make(Kind kind, DType dtype, std::vector<DimExpr> shape, std::vector<Type> fields) {
  Type t;
  t.kind_ = kind;
  t.dtype_ = dtype;
  if (!fields.empty()) {
    t.rep_ = std::make_shared<const Rep>(Rep{std::move(shape), std::move(fields)});
  } else if (!shape.empty()) {
    // A type is an immutable value and a model repeats a handful of shapes (every op of an
    // elementwise chain has its input's): the dims of the last few types made on this thread
    // are shared by an equal new one. The values of a 100k-op model then point at a few dims
    // lists instead of one each, which keeps what every pass reads per value in cache, and
    // most comparisons of types stop at operator=='s pointer check.
    constexpr int kRecent = 8;
    thread_local std::shared_ptr<const Rep> recent[kRecent];
    thread_local int next = 0;
    for (const std::shared_ptr<const Rep>& r : recent) {
      if (r != nullptr && r->fields.empty() && r->shape == shape) {
        t.rep_ = r;
        return t;
      }
    }
    t.rep_ = std::make_shared<const Rep>(Rep{std::move(shape), {}});
    recent[next] = t.rep_;
    next = (next + 1) % kRecent;
  }
  return t;
}

Type Type::Tensor(DType dtype, std::vector<DimExpr> shape) {
  return Make(Kind::kTensor, dtype, std::move(shape), {});
}

Type Type::Tuple(std::vector<Type> fields) {
  return Make(Kind::kTuple, DType::kF32, {}, std::move(fields));
}

Type Type::Storage(DimExpr bytes) {
  std::vector<DimExpr> shape;
  shape.push_back(std::move(bytes));
  return Make(Kind::kStorage, DType::kU8, std::move(shape), {});
}

Type Type::Sequence(Type elem) {
  std::vector<Type> fields;
  fields.push_back(std::move(elem));
  return Make(Kind::kSequence, DType::kF32, {}, std::move(fields));
}

Type Type::Optional(Type inner) {
  std::vector<Type> fields;
  fields.push_back(std::move(inner));
  return Make(Kind::kOptional, DType::kF32, {}, std::move(fields));
}

bool Type::is_static() const {
  // A sequence's length is a run-time value, so it is never static.
  if (kind_ == Kind::kSequence) return false;
  if (kind_ == Kind::kTuple || kind_ == Kind::kOptional) {
    for (const Type& f : fields()) {
      if (!f.is_static()) return false;
    }
    return true;
  }
  if (kind_ != Kind::kTensor && kind_ != Kind::kStorage) return false;
  for (const DimExpr& d : shape()) {
    if (!d.is_constant()) return false;
  }
  return true;
}

namespace {

// The product of `dims` and `scale`: the constant dims folded first, so that a shape like
// [n, 16] costs one symbolic multiplication (each builds a polynomial), not one per dim.
DimExpr Product(const std::vector<DimExpr>& dims, int64_t scale) {
  int64_t constant = scale;
  DimExpr symbolic(1);
  bool any_symbolic = false;
  for (const DimExpr& d : dims) {
    if (d.is_constant()) {
      if (__builtin_mul_overflow(constant, d.constant(), &constant)) return DimExpr::Unknown();
    } else {
      symbolic = any_symbolic ? symbolic * d : d;
      any_symbolic = true;
    }
  }
  if (!any_symbolic) return constant;
  return constant == 1 ? symbolic : symbolic * DimExpr(constant);
}

}  // namespace

DimExpr Type::NumElements() const { return Product(shape(), 1); }

DimExpr Type::NumBytes() const { return Product(shape(), DTypeSize(dtype_)); }

bool Type::operator==(const Type& o) const {
  if (kind_ != o.kind_) return false;
  if (kind_ == Kind::kTensor && dtype_ != o.dtype_) return false;
  if (rep_ == o.rep_) return true;  // copies of one type (or both without dims and fields)
  switch (kind_) {
    case Kind::kUnset:
      return true;
    case Kind::kTensor:
    case Kind::kStorage:
      return shape() == o.shape();
    case Kind::kTuple:
    case Kind::kSequence:
    case Kind::kOptional:
      return fields() == o.fields();
  }
  return false;
}

size_t Type::Hash() const {
  size_t h = absl::HashOf(static_cast<int>(kind_));
  if (kind_ == Kind::kTensor || kind_ == Kind::kStorage) {
    h = absl::HashOf(h, static_cast<int>(dtype_));
    for (const DimExpr& d : shape()) h = absl::HashOf(h, d.Hash());
  }
  for (const Type& f : fields()) h = absl::HashOf(h, f.Hash());
  return h;
}

std::string Type::ToString() const {
  switch (kind_) {
    case Kind::kUnset:
      return "<unset>";
    case Kind::kTensor:
      return absl::StrCat(DTypeName(dtype_), ShapeToString(shape()));
    case Kind::kStorage:
      return absl::StrCat("storage[", storage_bytes().ToString(), "]");
    case Kind::kSequence:
      return absl::StrCat("seq<", element().is_unset() ? "?" : element().ToString(), ">");
    case Kind::kOptional:
      return absl::StrCat("opt<", element().is_unset() ? "?" : element().ToString(), ">");
    case Kind::kTuple:
      return absl::StrCat("(",
                          absl::StrJoin(fields(), ", ",
                                        [](std::string* out, const Type& t) {
                                          out->append(t.ToString());
                                        }),
                          ")");
  }
  return "<bad type>";
}

namespace {

template <typename DimMerge>
std::optional<Type> Combine(const Type& a, const Type& b, const DimMerge& merge) {
  if (a.kind() != b.kind()) return std::nullopt;
  if (a.is_unset()) return a;
  if (a.is_storage()) {
    auto d = merge(a.storage_bytes(), b.storage_bytes());
    if (!d) return std::nullopt;
    return Type::Storage(*d);
  }
  if (a.is_sequence() || a.is_optional()) {
    // An unknown element type (`seq<?>`, an empty sequence of unknown rank) fits any.
    if (a.element().is_unset()) return b;
    if (b.element().is_unset()) return a;
    auto e = Combine(a.element(), b.element(), merge);
    if (!e) return std::nullopt;
    return a.is_sequence() ? Type::Sequence(*std::move(e)) : Type::Optional(*std::move(e));
  }
  if (a.is_tuple()) {
    if (a.fields().size() != b.fields().size()) return std::nullopt;
    std::vector<Type> fields;
    for (size_t i = 0; i < a.fields().size(); ++i) {
      auto f = Combine(a.fields()[i], b.fields()[i], merge);
      if (!f) return std::nullopt;
      fields.push_back(*std::move(f));
    }
    return Type::Tuple(std::move(fields));
  }
  if (a.dtype() != b.dtype() || a.rank() != b.rank()) return std::nullopt;
  std::vector<DimExpr> shape;
  for (int i = 0; i < a.rank(); ++i) {
    auto d = merge(a.shape()[i], b.shape()[i]);
    if (!d) return std::nullopt;
    shape.push_back(*d);
  }
  return Type::Tensor(a.dtype(), std::move(shape));
}

}  // namespace

std::optional<Type> RefineType(const Type& declared, const Type& inferred) {
  return Combine(declared, inferred,
                 [](const DimExpr& d, const DimExpr& i) -> std::optional<DimExpr> {
                   if (d.is_unknown()) return i;
                   if (i.is_unknown()) return d;
                   if (d == i) return d;
                   return std::nullopt;
                 });
}

std::optional<Type> MergeTypes(
    const Type& a, const Type& b,
    const std::function<std::optional<DimExpr>(const DimExpr&, const DimExpr&)>& merge) {
  return Combine(a, b, merge);
}

std::optional<Type> JoinTypes(const Type& a, const Type& b) {
  return Combine(a, b, [](const DimExpr& x, const DimExpr& y) -> std::optional<DimExpr> {
    return x == y ? x : DimExpr::Unknown();
  });
}

}  // namespace hetpass
