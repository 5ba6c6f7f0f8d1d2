// Canonicalising construction of symbolic dimensions (see dim_expr.h for the canonical form).
//
// Everything goes through ToPoly / FromPoly: an expression is viewed as
// constant + sum(coeff * monomial), where a monomial is a sorted list of atoms. Sums and products
// merge these lists, so `n + n` and `2*n` meet in one form. Integer overflow while simplifying
// makes the result unknown rather than wrong.
#include "passes/ir/dim_expr.h"

#include <algorithm>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

using Kind = DimExpr::Kind;

int KindRank(Kind k) {
  switch (k) {
    case Kind::kConstant: return 0;
    case Kind::kSymbol: return 1;
    case Kind::kFloorDiv: return 2;
    case Kind::kMod: return 3;
    case Kind::kMin: return 4;
    case Kind::kMax: return 5;
    case Kind::kSum: return 6;
    case Kind::kUnknown: return 7;
  }
  return 8;
}

struct Poly {
  int64_t constant = 0;
  std::vector<DimTerm> terms;  // sorted by MonomialLess, no zero coefficients
  bool overflow = false;
};

int CompareFactors(const std::vector<DimExpr>& a, const std::vector<DimExpr>& b) {
  // Higher degree first, then lexicographic: `n*m + n + 1`.
  if (a.size() != b.size()) return a.size() > b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    int c = DimExpr::Compare(a[i], b[i]);
    if (c != 0) return c;
  }
  return 0;
}

size_t HashNode(const DimNode& n) {
  size_t h = absl::HashOf(static_cast<int>(n.kind), n.name, n.constant);
  for (const DimExpr& a : n.args) h = absl::HashOf(h, a.Hash());
  for (const DimTerm& t : n.terms) {
    h = absl::HashOf(h, t.coeff);
    for (const DimExpr& f : t.factors) h = absl::HashOf(h, f.Hash());
  }
  return h;
}

DimExpr MakeNode(DimNode node) {
  node.hash = HashNode(node);
  return DimExpr(std::make_shared<const DimNode>(std::move(node)));
}

const DimExpr& UnknownSingleton() {
  static const DimExpr* unknown = [] {
    DimNode n;
    n.kind = Kind::kUnknown;
    return new DimExpr(MakeNode(std::move(n)));
  }();
  return *unknown;
}

Poly ToPoly(const DimExpr& e) {
  Poly p;
  if (e.is_constant()) {
    p.constant = e.constant();
  } else if (e.kind() == Kind::kSum) {
    p.constant = e.node()->constant;
    p.terms = e.node()->terms;
  } else {
    p.terms.push_back(DimTerm{1, {e}});
  }
  return p;
}

DimExpr FromPoly(Poly p) {
  if (p.overflow) return UnknownSingleton();
  std::sort(p.terms.begin(), p.terms.end(), [](const DimTerm& a, const DimTerm& b) {
    return CompareFactors(a.factors, b.factors) < 0;
  });
  // Merge equal monomials and drop zero coefficients.
  std::vector<DimTerm> merged;
  for (DimTerm& t : p.terms) {
    if (!merged.empty() && CompareFactors(merged.back().factors, t.factors) == 0) {
      if (__builtin_add_overflow(merged.back().coeff, t.coeff, &merged.back().coeff)) {
        return UnknownSingleton();
      }
    } else {
      merged.push_back(std::move(t));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const DimTerm& t) { return t.coeff == 0; }),
               merged.end());
  if (merged.empty()) return DimExpr(p.constant);
  if (p.constant == 0 && merged.size() == 1 && merged[0].coeff == 1 &&
      merged[0].factors.size() == 1) {
    return merged[0].factors[0];
  }
  DimNode n;
  n.kind = Kind::kSum;
  n.constant = p.constant;
  n.terms = std::move(merged);
  return MakeNode(std::move(n));
}

Poly AddPoly(const Poly& a, const Poly& b, int64_t sign) {
  Poly r;
  int64_t bc;
  if (__builtin_mul_overflow(b.constant, sign, &bc) ||
      __builtin_add_overflow(a.constant, bc, &r.constant)) {
    r.overflow = true;
    return r;
  }
  r.terms = a.terms;
  for (const DimTerm& t : b.terms) {
    DimTerm n = t;
    if (__builtin_mul_overflow(n.coeff, sign, &n.coeff)) r.overflow = true;
    r.terms.push_back(std::move(n));
  }
  return r;
}

Poly MulPoly(const Poly& a, const Poly& b) {
  Poly r;
  // Treat each constant as a term with no factors.
  std::vector<DimTerm> at = a.terms, bt = b.terms;
  if (a.constant != 0) at.push_back(DimTerm{a.constant, {}});
  if (b.constant != 0) bt.push_back(DimTerm{b.constant, {}});
  for (const DimTerm& x : at) {
    for (const DimTerm& y : bt) {
      int64_t c;
      if (__builtin_mul_overflow(x.coeff, y.coeff, &c)) {
        r.overflow = true;
        return r;
      }
      if (x.factors.empty() && y.factors.empty()) {
        if (__builtin_add_overflow(r.constant, c, &r.constant)) r.overflow = true;
        continue;
      }
      DimTerm t;
      t.coeff = c;
      t.factors = x.factors;
      t.factors.insert(t.factors.end(), y.factors.begin(), y.factors.end());
      std::sort(t.factors.begin(), t.factors.end(), [](const DimExpr& p, const DimExpr& q) {
        return DimExpr::Compare(p, q) < 0;
      });
      r.terms.push_back(std::move(t));
    }
  }
  return r;
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Callers rule out b == 0; b == -1 is answered directly because INT64_MIN % -1 is undefined.
int64_t FloorModInt(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Splits a = c*q + r with every term of q an exact multiple and r's constant in [0, c).
void SplitByDivisor(const Poly& a, int64_t c, Poly* q, Poly* r) {
  q->constant = FloorDivInt(a.constant, c);
  r->constant = FloorModInt(a.constant, c);
  for (const DimTerm& t : a.terms) {
    if (t.coeff % c == 0) {
      q->terms.push_back(DimTerm{t.coeff / c, t.factors});
    } else {
      r->terms.push_back(t);
    }
  }
}

DimExpr MakeBinaryAtom(Kind kind, DimExpr a, DimExpr b) {
  DimNode n;
  n.kind = kind;
  if ((kind == Kind::kMin || kind == Kind::kMax) && DimExpr::Compare(b, a) < 0) std::swap(a, b);
  n.args = {std::move(a), std::move(b)};
  return MakeNode(std::move(n));
}

// Printing precedence: 1 sum, 2 product/floordiv/mod, 3 atom.
int Precedence(const DimExpr& e) {
  if (e.is_constant()) return e.constant() < 0 ? 1 : 3;
  switch (e.kind()) {
    case Kind::kSum: {
      const DimNode* n = e.node();
      if (n->constant == 0 && n->terms.size() == 1) {
        return (n->terms[0].coeff < 0) ? 1 : 2;
      }
      return 1;
    }
    case Kind::kFloorDiv:
    case Kind::kMod:
      return 2;
    default:
      return 3;
  }
}

std::string Wrap(const DimExpr& e, int min_prec) {
  std::string s = e.ToString();
  if (Precedence(e) < min_prec) return absl::StrCat("(", s, ")");
  return s;
}

// |v| without overflow: INT64_MIN's magnitude does not fit in int64_t.
uint64_t Magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

std::string TermToString(const DimTerm& t, uint64_t abs_coeff) {
  std::vector<std::string> parts;
  const bool alone = t.factors.size() == 1 && abs_coeff == 1;
  for (const DimExpr& f : t.factors) parts.push_back(alone ? Wrap(f, 2) : Wrap(f, 3));
  if (abs_coeff != 1) parts.push_back(absl::StrCat(abs_coeff));
  return absl::StrJoin(parts, "*");
}

}  // namespace

DimExpr DimExpr::Symbol(absl::string_view name) {
  // Interned so that equal symbols share one node (cheap equality, less memory).
  static std::mutex* mu = new std::mutex;
  static auto* table = new absl::flat_hash_map<std::string, DimExpr>;
  std::lock_guard<std::mutex> lock(*mu);
  auto it = table->find(name);
  if (it != table->end()) return it->second;
  DimNode n;
  n.kind = Kind::kSymbol;
  n.name = std::string(name);
  DimExpr e = MakeNode(std::move(n));
  table->emplace(std::string(name), e);
  return e;
}

DimExpr DimExpr::Unknown() { return UnknownSingleton(); }

DimExpr::Kind DimExpr::kind() const { return node_ ? node_->kind : Kind::kConstant; }

const std::string& DimExpr::symbol_name() const { return node_->name; }

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return DimExpr::Unknown();
  if (a.is_constant() && b.is_constant()) {
    int64_t r;
    if (__builtin_add_overflow(a.constant(), b.constant(), &r)) return DimExpr::Unknown();
    return r;
  }
  return FromPoly(AddPoly(ToPoly(a), ToPoly(b), 1));
}

DimExpr operator-(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return DimExpr::Unknown();
  if (a.is_constant() && b.is_constant()) {
    int64_t r;
    if (__builtin_sub_overflow(a.constant(), b.constant(), &r)) return DimExpr::Unknown();
    return r;
  }
  return FromPoly(AddPoly(ToPoly(a), ToPoly(b), -1));
}

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return DimExpr::Unknown();
  if (a.is_constant() && b.is_constant()) {
    int64_t r;
    if (__builtin_mul_overflow(a.constant(), b.constant(), &r)) return DimExpr::Unknown();
    return r;
  }
  return FromPoly(MulPoly(ToPoly(a), ToPoly(b)));
}

DimExpr DimExpr::FloorDiv(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return Unknown();
  if (b.is_constant()) {
    const int64_t c = b.constant();
    if (c == 0) return Unknown();
    if (c == 1) return a;
    if (a.is_constant()) {
      if (a.constant() == INT64_MIN && c == -1) return Unknown();
      return FloorDivInt(a.constant(), c);
    }
    if (c > 0) {
      Poly q, r;
      SplitByDivisor(ToPoly(a), c, &q, &r);
      DimExpr qe = FromPoly(std::move(q));
      if (r.terms.empty()) return qe;  // r's constant is in [0, c): contributes 0
      if (qe.is_constant() && qe.constant() == 0) {
        return MakeBinaryAtom(Kind::kFloorDiv, FromPoly(std::move(r)), b);
      }
      return qe + MakeBinaryAtom(Kind::kFloorDiv, FromPoly(std::move(r)), b);
    }
  }
  if (a.is_constant() && a.constant() == 0) return 0;
  return MakeBinaryAtom(Kind::kFloorDiv, a, b);
}

DimExpr DimExpr::Mod(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return Unknown();
  if (b.is_constant()) {
    const int64_t c = b.constant();
    if (c == 0) return Unknown();
    if (c == 1 || c == -1) return 0;
    if (a.is_constant()) return FloorModInt(a.constant(), c);
    if (c > 0) {
      Poly q, r;
      SplitByDivisor(ToPoly(a), c, &q, &r);
      if (r.terms.empty()) return r.constant;
      return MakeBinaryAtom(Kind::kMod, FromPoly(std::move(r)), b);
    }
  }
  if (a.is_constant() && a.constant() == 0) return 0;
  return MakeBinaryAtom(Kind::kMod, a, b);
}

DimExpr DimExpr::Min(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return Unknown();
  DimExpr d = a - b;
  if (d.is_constant()) return d.constant() <= 0 ? a : b;
  return MakeBinaryAtom(Kind::kMin, a, b);
}

DimExpr DimExpr::Max(const DimExpr& a, const DimExpr& b) {
  if (a.is_unknown() || b.is_unknown()) return Unknown();
  DimExpr d = a - b;
  if (d.is_constant()) return d.constant() >= 0 ? a : b;
  return MakeBinaryAtom(Kind::kMax, a, b);
}

DimExpr DimExpr::CeilDiv(const DimExpr& a, const DimExpr& b) {
  return DimExpr(0) - FloorDiv(DimExpr(0) - a, b);
}

bool DimExpr::operator==(const DimExpr& o) const {
  if (node_ == o.node_) return node_ != nullptr || value_ == o.value_;
  if (!node_ || !o.node_) return false;
  if (node_->hash != o.node_->hash) return false;
  return Compare(*this, o) == 0;
}

int DimExpr::Compare(const DimExpr& a, const DimExpr& b) {
  const int ra = KindRank(a.kind()), rb = KindRank(b.kind());
  if (ra != rb) return ra < rb ? -1 : 1;
  if (a.is_constant()) {
    return a.constant() < b.constant() ? -1 : (a.constant() > b.constant() ? 1 : 0);
  }
  if (a.node_ == b.node_) return 0;
  const DimNode& x = *a.node_;
  const DimNode& y = *b.node_;
  switch (x.kind) {
    case Kind::kUnknown:
      return 0;
    case Kind::kSymbol:
      return x.name.compare(y.name) < 0 ? -1 : (x.name == y.name ? 0 : 1);
    case Kind::kSum: {
      if (x.constant != y.constant) return x.constant < y.constant ? -1 : 1;
      const size_t n = std::min(x.terms.size(), y.terms.size());
      for (size_t i = 0; i < n; ++i) {
        int c = CompareFactors(x.terms[i].factors, y.terms[i].factors);
        if (c != 0) return c;
        if (x.terms[i].coeff != y.terms[i].coeff) {
          return x.terms[i].coeff < y.terms[i].coeff ? -1 : 1;
        }
      }
      if (x.terms.size() != y.terms.size()) return x.terms.size() < y.terms.size() ? -1 : 1;
      return 0;
    }
    default: {
      for (size_t i = 0; i < x.args.size(); ++i) {
        int c = Compare(x.args[i], y.args[i]);
        if (c != 0) return c;
      }
      return 0;
    }
  }
}

size_t DimExpr::Hash() const {
  return node_ ? node_->hash : absl::HashOf(value_);
}

std::string DimExpr::ToString() const {
  if (!node_) return absl::StrCat(value_);
  const DimNode& n = *node_;
  switch (n.kind) {
    case Kind::kConstant:
      return absl::StrCat(value_);
    case Kind::kUnknown:
      return "?";
    case Kind::kSymbol:
      return n.name;
    case Kind::kFloorDiv:
      return absl::StrCat(Wrap(n.args[0], 2), "//", Wrap(n.args[1], 3));
    case Kind::kMod:
      return absl::StrCat(Wrap(n.args[0], 2), " % ", Wrap(n.args[1], 3));
    case Kind::kMin:
      return absl::StrCat("min(", n.args[0].ToString(), ", ", n.args[1].ToString(), ")");
    case Kind::kMax:
      return absl::StrCat("max(", n.args[0].ToString(), ", ", n.args[1].ToString(), ")");
    case Kind::kSum: {
      // INT64_MIN is the one value whose magnitude the parser cannot read as a literal of its
      // own: it reads "-9223372036854775808" only as a whole, and "a - b" as a + (-1)*b, which
      // cannot negate it back. So a term or constant of INT64_MIN prints as an added negative
      // literal, coefficient first ("n + -9223372036854775808*m"), and parses back to itself.
      std::string s;
      for (size_t i = 0; i < n.terms.size(); ++i) {
        const DimTerm& t = n.terms[i];
        if (i > 0) s += t.coeff < 0 && t.coeff != INT64_MIN ? " - " : " + ";
        if (t.coeff == INT64_MIN) {
          absl::StrAppend(&s, INT64_MIN);
          for (const DimExpr& f : t.factors) absl::StrAppend(&s, "*", Wrap(f, 3));
          continue;
        }
        if (i == 0 && t.coeff < 0) s += "-";
        s += TermToString(t, Magnitude(t.coeff));
      }
      if (n.constant == INT64_MIN) {
        absl::StrAppend(&s, " + ", INT64_MIN);
      } else if (n.constant > 0) {
        absl::StrAppend(&s, " + ", n.constant);
      } else if (n.constant < 0) {
        absl::StrAppend(&s, " - ", -n.constant);
      }
      return s;
    }
  }
  return "<bad dim>";
}

absl::StatusOr<int64_t> DimExpr::Evaluate(const Bindings& bindings) const {
  if (!node_) return value_;
  const DimNode& n = *node_;
  switch (n.kind) {
    case Kind::kConstant:
      return value_;
    case Kind::kUnknown:
      return absl::InvalidArgumentError("cannot evaluate an unknown dimension '?'");
    case Kind::kSymbol: {
      auto it = bindings.find(n.name);
      if (it == bindings.end()) {
        return absl::InvalidArgumentError(absl::StrFormat("symbol '%s' is not bound", n.name));
      }
      return it->second;
    }
    case Kind::kSum: {
      int64_t total = n.constant;
      for (const DimTerm& t : n.terms) {
        int64_t prod = t.coeff;
        for (const DimExpr& f : t.factors) {
          ASSIGN_OR_RETURN(int64_t v, f.Evaluate(bindings));
          if (__builtin_mul_overflow(prod, v, &prod)) {
            return absl::OutOfRangeError(absl::StrFormat("overflow evaluating '%s'", ToString()));
          }
        }
        if (__builtin_add_overflow(total, prod, &total)) {
          return absl::OutOfRangeError(absl::StrFormat("overflow evaluating '%s'", ToString()));
        }
      }
      return total;
    }
    default: {
      ASSIGN_OR_RETURN(int64_t a, n.args[0].Evaluate(bindings));
      ASSIGN_OR_RETURN(int64_t b, n.args[1].Evaluate(bindings));
      if ((n.kind == Kind::kFloorDiv || n.kind == Kind::kMod) && b == 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("division by zero evaluating '%s'", ToString()));
      }
      if (n.kind == Kind::kFloorDiv && a == INT64_MIN && b == -1) {
        return absl::OutOfRangeError(absl::StrFormat("overflow evaluating '%s'", ToString()));
      }
      switch (n.kind) {
        case Kind::kFloorDiv: return FloorDivInt(a, b);
        case Kind::kMod: return FloorModInt(a, b);
        case Kind::kMin: return std::min(a, b);
        default: return std::max(a, b);
      }
    }
  }
}

DimExpr DimExpr::Substitute(const absl::flat_hash_map<std::string, DimExpr>& map) const {
  if (!node_) return *this;
  const DimNode& n = *node_;
  switch (n.kind) {
    case Kind::kConstant:
    case Kind::kUnknown:
      return *this;
    case Kind::kSymbol: {
      auto it = map.find(n.name);
      return it == map.end() ? *this : it->second;
    }
    case Kind::kSum: {
      DimExpr total(n.constant);
      for (const DimTerm& t : n.terms) {
        DimExpr prod(t.coeff);
        for (const DimExpr& f : t.factors) prod = prod * f.Substitute(map);
        total = total + prod;
      }
      return total;
    }
    case Kind::kFloorDiv:
      return FloorDiv(n.args[0].Substitute(map), n.args[1].Substitute(map));
    case Kind::kMod:
      return Mod(n.args[0].Substitute(map), n.args[1].Substitute(map));
    case Kind::kMin:
      return Min(n.args[0].Substitute(map), n.args[1].Substitute(map));
    case Kind::kMax:
      return Max(n.args[0].Substitute(map), n.args[1].Substitute(map));
  }
  return *this;
}

void DimExpr::CollectSymbols(std::set<std::string>* out) const {
  if (!node_) return;
  const DimNode& n = *node_;
  if (n.kind == Kind::kSymbol) out->insert(n.name);
  for (const DimExpr& a : n.args) a.CollectSymbols(out);
  for (const DimTerm& t : n.terms) {
    for (const DimExpr& f : t.factors) f.CollectSymbols(out);
  }
}

std::string ShapeToString(const std::vector<DimExpr>& shape) {
  return absl::StrCat(
      "[", absl::StrJoin(shape, ", ", [](std::string* out, const DimExpr& d) {
        out->append(d.ToString());
      }),
      "]");
}

std::ostream& operator<<(std::ostream& os, const DimExpr& e) { return os << e.ToString(); }

}  // namespace hetpass
