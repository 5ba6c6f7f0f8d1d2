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

// ---- Interval arithmetic (DimBounds). Lower bounds round toward -inf and upper bounds toward
// +inf: an overflow on either side gives up to "unbounded" on that side, which is always sound.

constexpr int64_t kNegInf = DimBounds::kNegInf;
constexpr int64_t kPosInf = DimBounds::kPosInf;

bool IsInf(int64_t v) { return v == kNegInf || v == kPosInf; }

// x + y for a lower (up == false) or upper (up == true) bound.
int64_t AddBound(int64_t x, int64_t y, bool up) {
  const int64_t inf = up ? kPosInf : kNegInf;
  if (IsInf(x) || IsInf(y)) return inf;
  int64_t r;
  if (__builtin_add_overflow(x, y, &r) || IsInf(r)) return inf;
  return r;
}

// x * y where either may be infinite; an overflow is the infinity of the product's sign.
int64_t MulBound(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  const bool negative = (x < 0) != (y < 0);
  if (IsInf(x) || IsInf(y)) return negative ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(x, y, &r) || IsInf(r)) return negative ? kNegInf : kPosInf;
  return r;
}

DimBounds MulBounds(const DimBounds& a, const DimBounds& b) {
  const int64_t c[4] = {MulBound(a.lo, b.lo), MulBound(a.lo, b.hi), MulBound(a.hi, b.lo),
                        MulBound(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// A constant's interval. INT64_MIN and INT64_MAX double as the infinities, so as an upper
// (lower) bound they would claim "-inf" ("+inf"): step one inside, which is still a bound.
DimBounds ConstantBounds(int64_t c) {
  return {c == kPosInf ? kPosInf - 1 : c, c == kNegInf ? kNegInf + 1 : c};
}

int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);

// floor(x / c) of a bound, c > 0 (infinities stay).
int64_t DivBound(int64_t x, int64_t c) { return IsInf(x) ? x : FloorDivInt(x, c); }

// The bounds of an atom or sum from its operands' bounds; `of` gives an operand's bounds.
template <typename BoundsOf>
DimBounds ComputeBounds(const DimNode& n, const BoundsOf& of) {
  switch (n.kind) {
    case DimExpr::Kind::kConstant:
    case DimExpr::Kind::kUnknown:
    case DimExpr::Kind::kSymbol:
      return {};  // callers answer these themselves
    case DimExpr::Kind::kSum: {
      DimBounds r = ConstantBounds(n.constant);
      for (const DimTerm& t : n.terms) {
        DimBounds tb = ConstantBounds(t.coeff);
        for (const DimExpr& f : t.factors) tb = MulBounds(tb, of(f));
        r.lo = AddBound(r.lo, tb.lo, false);
        r.hi = AddBound(r.hi, tb.hi, true);
      }
      return r;
    }
    case DimExpr::Kind::kMin:
    case DimExpr::Kind::kMax: {
      const DimBounds a = of(n.args[0]), b = of(n.args[1]);
      if (n.kind == DimExpr::Kind::kMin) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case DimExpr::Kind::kFloorDiv: {
      const DimBounds a = of(n.args[0]), b = of(n.args[1]);
      if (b.lo == b.hi && b.lo > 0 && !IsInf(b.lo)) {
        return {DivBound(a.lo, b.lo), DivBound(a.hi, b.lo)};
      }
      // A divisor >= 0 is >= 1 wherever the division is defined.
      if (b.lo >= 0 && a.lo >= 0) return {0, DivBound(a.hi, std::max<int64_t>(b.lo, 1))};
      return {};
    }
    case DimExpr::Kind::kMod: {
      const DimBounds a = of(n.args[0]), b = of(n.args[1]);
      if (b.lo < 0) return {};  // floor modulo takes the divisor's sign
      // Floor modulo by a positive divisor lies in [0, b - 1], and in [0, a] for a >= 0.
      DimBounds r{0, IsInf(b.hi) ? kPosInf : b.hi - 1};
      if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
      return r;
    }
  }
  return {};
}

DimBounds DefaultBounds(const DimExpr& e) {
  if (e.is_constant()) return ConstantBounds(e.constant());
  return e.node()->bounds;
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
  switch (node.kind) {
    case Kind::kSymbol:
      node.bounds = {0, kPosInf};  // a symbol is a dimension
      break;
    case Kind::kUnknown:
      node.bounds = {};
      break;
    default:
      node.bounds = ComputeBounds(node, DefaultBounds);
  }
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

// ---- Bounds under facts and the prover.

DimBounds BoundsWith(const DimExpr& e, const DimFacts* f) {
  if (e.is_constant()) return ConstantBounds(e.constant());
  if (f == nullptr || !f->has_symbol_bounds()) return e.node()->bounds;
  const DimNode& n = *e.node();
  if (n.kind == Kind::kSymbol) return f->SymbolBounds(n.name);
  if (n.kind == Kind::kUnknown) return {};
  return ComputeBounds(n, [f](const DimExpr& x) { return BoundsWith(x, f); });
}

// How many expressions one proof may look at: case splits double the work per min/max term, and
// a proof runs inside every symbolic Min/Max/FloorDiv/Mod, so it must stay cheap. Expressions
// from real models need a handful.
constexpr int kProofBudget = 48;

bool ProveNonNegativeImpl(const DimExpr& e, const DimFacts* f, int* budget) {
  if (e.is_unknown() || --*budget < 0) return false;
  const DimBounds b = BoundsWith(e, f);
  if (b.lo >= 0) return true;
  if (b.hi < 0 || e.is_constant()) return false;
  if (f != nullptr) {
    for (const DimExpr& known : f->non_negative()) {
      if (BoundsWith(e - known, f).lo >= 0) return true;  // e = known + (e - known)
    }
  }
  // Case split on the first min/max that occurs as a linear term c*m(p, q): e is the min or the
  // max of e[m := p] and e[m := q]. A min needs both to be >= 0, a max either.
  const Poly p = ToPoly(e);
  for (const DimTerm& t : p.terms) {
    if (t.factors.size() != 1) continue;
    const DimExpr& atom = t.factors[0];
    if (atom.kind() != Kind::kMin && atom.kind() != Kind::kMax) continue;
    const DimExpr rest = e - DimExpr(t.coeff) * atom;
    const DimExpr e1 = rest + DimExpr(t.coeff) * atom.node()->args[0];
    const DimExpr e2 = rest + DimExpr(t.coeff) * atom.node()->args[1];
    const bool is_min = (atom.kind() == Kind::kMin) == (t.coeff > 0);
    if (is_min) return ProveNonNegativeImpl(e1, f, budget) && ProveNonNegativeImpl(e2, f, budget);
    return ProveNonNegativeImpl(e1, f, budget) || ProveNonNegativeImpl(e2, f, budget);
  }
  return false;
}

bool ProveNonNeg(const DimExpr& e, const DimFacts* f) {
  int budget = kProofBudget;
  return ProveNonNegativeImpl(e, f, &budget);
}

// `r` as `x OP c1 + k` with one term of coefficient 1 (OP a floordiv or mod by a positive
// constant c1): sets x, c1 and k.
bool AsDivisionPlusConstant(const DimExpr& r, Kind op, DimExpr* x, int64_t* c1, int64_t* k) {
  const Poly p = ToPoly(r);
  if (p.terms.size() != 1 || p.terms[0].coeff != 1 || p.terms[0].factors.size() != 1) return false;
  const DimExpr& atom = p.terms[0].factors[0];
  if (atom.kind() != op) return false;
  const DimExpr& divisor = atom.node()->args[1];
  if (!divisor.is_constant() || divisor.constant() <= 0) return false;
  *x = atom.node()->args[0];
  *c1 = divisor.constant();
  *k = p.constant;
  return true;
}

// Whether every term of `p` has a negative coefficient (there is at least one term).
bool AllNegative(const Poly& p) {
  if (p.terms.empty()) return false;
  for (const DimTerm& t : p.terms) {
    if (t.coeff >= 0 || t.coeff == INT64_MIN) return false;
  }
  return true;
}

// The terms of `p` negated, without its constant (AllNegative(p): no overflow).
DimExpr NegatedTerms(const Poly& p) {
  Poly n;
  for (const DimTerm& t : p.terms) n.terms.push_back(DimTerm{-t.coeff, t.factors});
  return FromPoly(std::move(n));
}

// Both bounds finite and in one multiple of c: floor(v / c) is that constant for every value.
bool SameQuotient(const DimBounds& b, int64_t c, int64_t* quotient) {
  if (IsInf(b.lo) || IsInf(b.hi)) return false;
  *quotient = FloorDivInt(b.lo, c);
  return *quotient == FloorDivInt(b.hi, c);
}

// a / b when b is one term `c * f1 * f2 ...` that divides every term of a exactly (a window
// count divided out of `batch * windows`): sets q. Exact, so floor and truncation agree.
bool ExactQuotient(const DimExpr& a, const DimExpr& b, DimExpr* q) {
  const Poly pa = ToPoly(a), pb = ToPoly(b);
  if (pb.constant != 0 || pb.terms.size() != 1 || pa.constant != 0) return false;
  const DimTerm& d = pb.terms[0];
  if (d.coeff == 0 || d.coeff == -1) return false;  // -1: INT64_MIN / -1 overflows
  Poly r;
  for (const DimTerm& t : pa.terms) {
    if (t.coeff % d.coeff != 0) return false;
    // Remove d's factors (a sorted multiset) from t's.
    std::vector<DimExpr> rest;
    size_t j = 0;
    for (const DimExpr& f : t.factors) {
      if (j < d.factors.size() && f == d.factors[j]) {
        ++j;
      } else {
        rest.push_back(f);
      }
    }
    if (j != d.factors.size()) return false;
    r.terms.push_back(DimTerm{t.coeff / d.coeff, std::move(rest)});
  }
  // Terms left without factors are constants.
  Poly merged;
  for (DimTerm& t : r.terms) {
    if (t.factors.empty()) {
      if (__builtin_add_overflow(merged.constant, t.coeff, &merged.constant)) return false;
    } else {
      merged.terms.push_back(std::move(t));
    }
  }
  *q = FromPoly(std::move(merged));
  return !q->is_unknown();
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

DimExpr DimExpr::FloorDiv(const DimExpr& a, const DimExpr& b, const DimFacts* facts) {
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
      const DimExpr qe = FromPoly(std::move(q));
      if (r.terms.empty()) return qe;  // r's constant is in [0, c): contributes 0
      if (AllNegative(r)) {
        // (k - s)//c == -((s + c - 1 - k)//c): the dividend's terms print positive, and a
        // ceiling `-((-x)//c)` reads as `(x + c - 1)//c`.
        return qe - FloorDiv(NegatedTerms(r) + (c - 1 - r.constant), b, facts);
      }
      const DimExpr re = FromPoly(std::move(r));
      int64_t k = 0;
      if (SameQuotient(BoundsWith(re, facts), c, &k)) return qe + k;
      // (x//c1 + k)//c == (x + k*c1)//(c1*c) for positive c1 and c.
      DimExpr x;
      int64_t c1 = 0, shift = 0, divisor = 0;
      if (AsDivisionPlusConstant(re, Kind::kFloorDiv, &x, &c1, &k) &&
          !__builtin_mul_overflow(k, c1, &shift) && !__builtin_mul_overflow(c1, c, &divisor)) {
        const DimExpr merged = FloorDiv(x + shift, divisor, facts);
        if (!merged.is_unknown()) return qe + merged;
      }
      const DimExpr atom = MakeBinaryAtom(Kind::kFloorDiv, re, b);
      return qe.is_constant() && qe.constant() == 0 ? atom : qe + atom;
    }
  }
  if (a.is_constant() && a.constant() == 0) return 0;
  DimExpr exact;
  if (!b.is_constant() && ExactQuotient(a, b, &exact)) return exact;
  // 0 <= a < b: the quotient is 0.
  if (!b.is_constant() && ProveNonNeg(a, facts) && ProveNonNeg(b - a - 1, facts)) return 0;
  return MakeBinaryAtom(Kind::kFloorDiv, a, b);
}

DimExpr DimExpr::Mod(const DimExpr& a, const DimExpr& b, const DimFacts* facts) {
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
      if (AllNegative(r)) {
        // (k - s) % c == (c - 1) - (s + c - 1 - k) % c, with the dividend's terms positive.
        return DimExpr(c - 1) - Mod(NegatedTerms(r) + (c - 1 - r.constant), b, facts);
      }
      const DimExpr re = FromPoly(std::move(r));
      int64_t k = 0;
      if (SameQuotient(BoundsWith(re, facts), c, &k)) return re - DimExpr(k) * c;
      // (x % c1 + k) % c == (x + k) % c when c divides c1.
      DimExpr x;
      int64_t c1 = 0;
      if (AsDivisionPlusConstant(re, Kind::kMod, &x, &c1, &k) && c1 % c == 0) {
        return Mod(x + k, b, facts);
      }
      return MakeBinaryAtom(Kind::kMod, re, b);
    }
  }
  if (a.is_constant() && a.constant() == 0) return 0;
  DimExpr exact;
  if (!b.is_constant() && ExactQuotient(a, b, &exact)) return 0;
  // 0 <= a < b: a itself.
  if (!b.is_constant() && ProveNonNeg(a, facts) && ProveNonNeg(b - a - 1, facts)) return a;
  return MakeBinaryAtom(Kind::kMod, a, b);
}

namespace {

// `e` rebuilt bottom-up through the canonicalising constructors: `leaf` answers each symbol,
// `facts` (null: none) reach min, max, floordiv and mod. Substitute and Simplify are this.
template <typename Leaf>
DimExpr Rebuild(const DimExpr& e, const Leaf& leaf, const DimFacts* facts) {
  if (e.is_constant()) return e;
  const DimNode& n = *e.node();
  auto arg = [&](int i) { return Rebuild(n.args[i], leaf, facts); };
  switch (n.kind) {
    case DimExpr::Kind::kConstant:
    case DimExpr::Kind::kUnknown:
      return e;
    case DimExpr::Kind::kSymbol:
      return leaf(e);
    case DimExpr::Kind::kSum: {
      DimExpr total(n.constant);
      for (const DimTerm& t : n.terms) {
        DimExpr prod(t.coeff);
        for (const DimExpr& f : t.factors) prod = prod * Rebuild(f, leaf, facts);
        total = total + prod;
      }
      return total;
    }
    case DimExpr::Kind::kFloorDiv: return DimExpr::FloorDiv(arg(0), arg(1), facts);
    case DimExpr::Kind::kMod: return DimExpr::Mod(arg(0), arg(1), facts);
    case DimExpr::Kind::kMin: return DimExpr::Min(arg(0), arg(1), facts);
    case DimExpr::Kind::kMax: return DimExpr::Max(arg(0), arg(1), facts);
  }
  return e;
}

// min or max (is_min) of two expressions that are not both constant and not comparable by a
// constant difference.
DimExpr MinMax(bool is_min, const DimExpr& a, const DimExpr& b, const DimExpr& a_minus_b,
               const DimFacts* facts) {
  // Every value is an int64_t, so INT64_MAX bounds everything (a slice's "to the end").
  const int64_t neutral = is_min ? INT64_MAX : INT64_MIN;
  if (a.is_constant() && a.constant() == neutral) return b;
  if (b.is_constant() && b.constant() == neutral) return a;
  if (ProveNonNeg(a_minus_b, facts)) return is_min ? b : a;      // a >= b
  if (ProveNonNeg(0 - a_minus_b, facts)) return is_min ? a : b;  // a <= b
  const Kind kind = is_min ? Kind::kMin : Kind::kMax;
  // min(c1, min(c2, x)) == min(min(c1, c2), x): constants meet (constants sort first).
  for (int side = 0; side < 2; ++side) {
    const DimExpr& c = side == 0 ? a : b;
    const DimExpr& other = side == 0 ? b : a;
    if (c.is_constant() && other.kind() == kind && other.node()->args[0].is_constant()) {
      const int64_t c2 = other.node()->args[0].constant();
      const int64_t folded = is_min ? std::min(c.constant(), c2) : std::max(c.constant(), c2);
      return is_min ? DimExpr::Min(folded, other.node()->args[1], facts)
                    : DimExpr::Max(folded, other.node()->args[1], facts);
    }
  }
  return MakeBinaryAtom(kind, a, b);
}

}  // namespace

DimExpr DimExpr::Min(const DimExpr& a, const DimExpr& b, const DimFacts* facts) {
  if (a.is_unknown() || b.is_unknown()) return Unknown();
  DimExpr d = a - b;
  if (d.is_constant()) return d.constant() <= 0 ? a : b;
  return MinMax(true, a, b, d, facts);
}

DimExpr DimExpr::Max(const DimExpr& a, const DimExpr& b, const DimFacts* facts) {
  if (a.is_unknown() || b.is_unknown()) return Unknown();
  DimExpr d = a - b;
  if (d.is_constant()) return d.constant() >= 0 ? a : b;
  return MinMax(false, a, b, d, facts);
}

DimExpr DimExpr::CeilDiv(const DimExpr& a, const DimExpr& b, const DimFacts* facts) {
  return DimExpr(0) - FloorDiv(DimExpr(0) - a, b, facts);
}

DimBounds DimExpr::Bounds(const DimFacts* facts) const { return BoundsWith(*this, facts); }

bool DimExpr::ProveNonNegative(const DimExpr& e, const DimFacts* facts) {
  return ProveNonNeg(e, facts);
}

bool DimExpr::ProveLessEqual(const DimExpr& a, const DimExpr& b, const DimFacts* facts) {
  return ProveNonNeg(b - a, facts);
}

DimExpr DimExpr::Simplify(const DimFacts& facts) const {
  return Rebuild(
      *this,
      [&facts](const DimExpr& sym) {
        const DimBounds b = facts.SymbolBounds(sym.symbol_name());
        return b.lo == b.hi ? DimExpr(b.lo) : sym;
      },
      &facts);
}

void DimFacts::Bound(absl::string_view symbol, int64_t lo, int64_t hi) {
  DimBounds& b = symbols_.try_emplace(symbol, DimBounds{0, DimBounds::kPosInf}).first->second;
  b.lo = std::max(b.lo, lo);
  b.hi = std::min(b.hi, hi);
}

void DimFacts::AddLessEqual(const DimExpr& a, const DimExpr& b) {
  if (a.is_symbol() && b.is_constant()) return Bound(a.symbol_name(), DimBounds::kNegInf, b.constant());
  if (a.is_constant() && b.is_symbol()) return Bound(b.symbol_name(), a.constant(), DimBounds::kPosInf);
  const DimExpr d = b - a;
  if (!d.is_unknown() && !d.is_constant()) non_negative_.push_back(d);
}

DimBounds DimFacts::SymbolBounds(const std::string& symbol) const {
  auto it = symbols_.find(symbol);
  return it == symbols_.end() ? DimBounds{0, DimBounds::kPosInf} : it->second;
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
  return Rebuild(
      *this,
      [&map](const DimExpr& sym) {
        auto it = map.find(sym.symbol_name());
        return it == map.end() ? sym : it->second;
      },
      nullptr);
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
