// Property test of the dimension simplifier: random expressions, built once as a plain tree
// evaluated by the definitions (floor division, floor modulo, min, max) and once through the
// canonicalising DimExpr constructors (and DimExpr::Simplify under random facts), must agree at
// random symbol values — including 0, 1, values around the constants in play and values near
// 2^31 and 2^62. A simplification that is wrong anywhere in the domain (symbols >= 0, the facts)
// shows up as a disagreement, printed with the expression and the values.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/ir/dim_expr.h"

namespace hetpass {
namespace {

enum class Op { kConst, kSym, kAdd, kSub, kMul, kFloorDiv, kMod, kMin, kMax };

struct Tree {
  Op op = Op::kConst;
  int64_t value = 0;
  int symbol = 0;
  std::shared_ptr<const Tree> a, b;
};
using TreePtr = std::shared_ptr<const Tree>;

const char* const kSymbols[] = {"a", "b", "c"};
constexpr int kNumSymbols = 3;

// Constants a shape rule writes: small sizes, window and stride sizes, -1, slice clamps.
const int64_t kConstants[] = {0, 1, 2, 3, 4, 7, 8, -1, -2, -5, 128, 2147483647,
                              INT64_MAX, INT64_MIN, int64_t{1} << 40};

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int Pick(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }

  TreePtr Random(int depth) {
    auto t = std::make_shared<Tree>();
    const int leaf = depth <= 0 ? 10 : 3;
    if (Pick(10) < leaf) {
      if (Pick(2) == 0) {
        t->op = Op::kSym;
        t->symbol = Pick(kNumSymbols);
      } else {
        t->op = Op::kConst;
        // Mostly small constants: huge ones make most expressions overflow.
        t->value = Pick(4) == 0 ? kConstants[Pick(std::size(kConstants))] : Pick(9) - 2;
      }
      return t;
    }
    static constexpr Op kOps[] = {Op::kAdd, Op::kSub, Op::kMul,  Op::kFloorDiv,
                                  Op::kMod, Op::kMin, Op::kMax};
    t->op = kOps[Pick(std::size(kOps))];
    t->a = Random(depth - 1);
    // Divisors are mostly positive constants, as in shape rules; sometimes symbolic.
    if ((t->op == Op::kFloorDiv || t->op == Op::kMod) && Pick(4) != 0) {
      auto d = std::make_shared<Tree>();
      d->value = Pick(8) + 1;
      t->b = d;
    } else {
      t->b = Random(depth - 1);
    }
    return t;
  }

  int64_t Value(int64_t lo, int64_t hi) {
    // Edges and random picks in [lo, hi].
    const int64_t edges[] = {lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, 127, 128, 129,
                             2147483646, 2147483647, 2147483648, int64_t{1} << 62};
    for (int tries = 0; tries < 4; ++tries) {
      int64_t v = Pick(3) == 0 ? edges[Pick(std::size(edges))]
                               : static_cast<int64_t>(rng() % 300);
      if (v >= lo && v <= hi) return v;
    }
    return lo;
  }
};

// Evaluation by the definitions; false on overflow or division by zero.
bool Eval(const Tree& t, const int64_t* values, int64_t* out) {
  if (t.op == Op::kConst) {
    *out = t.value;
    return true;
  }
  if (t.op == Op::kSym) {
    *out = values[t.symbol];
    return true;
  }
  int64_t x, y;
  if (!Eval(*t.a, values, &x) || !Eval(*t.b, values, &y)) return false;
  switch (t.op) {
    case Op::kAdd: return !__builtin_add_overflow(x, y, out);
    case Op::kSub: return !__builtin_sub_overflow(x, y, out);
    case Op::kMul: return !__builtin_mul_overflow(x, y, out);
    case Op::kFloorDiv:
    case Op::kMod: {
      if (y == 0 || (x == INT64_MIN && y == -1)) return false;
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      *out = t.op == Op::kFloorDiv ? q : r;
      return true;
    }
    case Op::kMin: *out = std::min(x, y); return true;
    case Op::kMax: *out = std::max(x, y); return true;
    default: return false;
  }
}

DimExpr Build(const Tree& t) {
  switch (t.op) {
    case Op::kConst: return DimExpr(t.value);
    case Op::kSym: return DimExpr::Symbol(kSymbols[t.symbol]);
    case Op::kAdd: return Build(*t.a) + Build(*t.b);
    case Op::kSub: return Build(*t.a) - Build(*t.b);
    case Op::kMul: return Build(*t.a) * Build(*t.b);
    case Op::kFloorDiv: return DimExpr::FloorDiv(Build(*t.a), Build(*t.b));
    case Op::kMod: return DimExpr::Mod(Build(*t.a), Build(*t.b));
    case Op::kMin: return DimExpr::Min(Build(*t.a), Build(*t.b));
    case Op::kMax: return DimExpr::Max(Build(*t.a), Build(*t.b));
  }
  return DimExpr::Unknown();
}

std::string Show(const Tree& t) {
  switch (t.op) {
    case Op::kConst: return absl::StrCat(t.value);
    case Op::kSym: return kSymbols[t.symbol];
    case Op::kAdd: return absl::StrCat("(", Show(*t.a), " + ", Show(*t.b), ")");
    case Op::kSub: return absl::StrCat("(", Show(*t.a), " - ", Show(*t.b), ")");
    case Op::kMul: return absl::StrCat("(", Show(*t.a), " * ", Show(*t.b), ")");
    case Op::kFloorDiv: return absl::StrCat("(", Show(*t.a), " // ", Show(*t.b), ")");
    case Op::kMod: return absl::StrCat("(", Show(*t.a), " % ", Show(*t.b), ")");
    case Op::kMin: return absl::StrCat("min(", Show(*t.a), ", ", Show(*t.b), ")");
    case Op::kMax: return absl::StrCat("max(", Show(*t.a), ", ", Show(*t.b), ")");
  }
  return "?";
}

struct Tally {
  int compared = 0;           // both sides gave a value
  int simplified_errors = 0;  // the definitions gave a value, the simplified form overflowed
};

// Compares `e` against the tree at `values`; a wrong value fails the test.
void Check(const Tree& t, const DimExpr& e, const int64_t* values, const std::string& what,
           Tally* tally) {
  int64_t want;
  if (!Eval(t, values, &want)) return;  // undefined by the definitions: nothing to compare
  DimExpr::Bindings b;
  for (int i = 0; i < kNumSymbols; ++i) b[kSymbols[i]] = values[i];
  const absl::StatusOr<int64_t> got = e.Evaluate(b);
  const std::string where =
      absl::StrCat(what, ": ", Show(t), " -> ", e.ToString(), " at a=", values[0],
                   " b=", values[1], " c=", values[2]);
  if (!got.ok()) {
    // Canonical forms may multiply out, so they can overflow where the tree did not; they must
    // never divide by zero where it did not, nor give up on an unknown.
    ASSERT_EQ(got.status().code(), absl::StatusCode::kOutOfRange) << where << ": " << got.status();
    ++tally->simplified_errors;
    return;
  }
  ++tally->compared;
  ASSERT_EQ(*got, want) << where;
  // Soundness of the bounds the prover relies on.
  const DimBounds bounds = e.Bounds();
  ASSERT_TRUE(bounds.lo <= want && want <= bounds.hi)
      << where << ": bounds [" << bounds.lo << ", " << bounds.hi << "]";
}

TEST(DimExprPropertyTest, SimplifiedExpressionsEvaluateAsTheirDefinitions) {
  Gen gen(20261129);
  Tally tally;
  for (int i = 0; i < 20000; ++i) {
    const TreePtr t = gen.Random(1 + gen.Pick(4));
    const DimExpr e = Build(*t);
    if (e.is_unknown()) continue;  // overflow while building: nothing claimed
    for (int k = 0; k < 6; ++k) {
      int64_t values[kNumSymbols];
      for (int64_t& v : values) v = gen.Value(0, INT64_MAX);
      Check(*t, e, values, "signs only", &tally);
      if (HasFatalFailure()) return;
    }
  }
  // The test must compare, not skip: most expressions evaluate.
  EXPECT_GT(tally.compared, 60000);
  EXPECT_LT(tally.simplified_errors, tally.compared / 50);
}

TEST(DimExprPropertyTest, SimplifyUnderFactsAgreesWhereTheFactsHold) {
  Gen gen(7);
  Tally tally;
  for (int i = 0; i < 20000; ++i) {
    const TreePtr t = gen.Random(1 + gen.Pick(4));
    const DimExpr built = Build(*t);
    if (built.is_unknown()) continue;
    // Random facts: a bound per symbol, and sometimes `a <= b`.
    DimFacts facts;
    int64_t lo[kNumSymbols], hi[kNumSymbols];
    for (int s = 0; s < kNumSymbols; ++s) {
      static constexpr int64_t kLows[] = {0, 0, 1, 2, 3, 128};
      static constexpr int64_t kHighs[] = {INT64_MAX, INT64_MAX, 4, 128, 2147483647, 1000};
      lo[s] = kLows[gen.Pick(std::size(kLows))];
      hi[s] = std::max(lo[s], kHighs[gen.Pick(std::size(kHighs))]);
      if (lo[s] > 0) facts.AddLessEqual(lo[s], DimExpr::Symbol(kSymbols[s]));
      if (hi[s] < INT64_MAX) facts.AddLessEqual(DimExpr::Symbol(kSymbols[s]), hi[s]);
    }
    const bool a_le_b = gen.Pick(3) == 0;
    if (a_le_b) facts.AddLessEqual(DimExpr::Symbol("a"), DimExpr::Symbol("b"));
    const DimExpr e = built.Simplify(facts);
    if (e.is_unknown()) continue;
    for (int k = 0; k < 6; ++k) {
      int64_t values[kNumSymbols];
      for (int s = 0; s < kNumSymbols; ++s) values[s] = gen.Value(lo[s], hi[s]);
      if (a_le_b && values[0] > values[1]) std::swap(values[0], values[1]);
      bool in_facts = true;  // the swap may have left a symbol's own bound
      for (int s = 0; s < kNumSymbols; ++s) in_facts &= lo[s] <= values[s] && values[s] <= hi[s];
      if (!in_facts) continue;
      Check(*t, e, values, "under facts", &tally);
      if (HasFatalFailure()) return;
      const DimBounds bounds = e.Bounds(&facts);
      int64_t want;
      if (Eval(*t, values, &want)) {
        ASSERT_TRUE(bounds.lo <= want && want <= bounds.hi)
            << Show(*t) << " -> " << e.ToString() << ": bounds under facts";
      }
    }
  }
  EXPECT_GT(tally.compared, 50000);
  EXPECT_LT(tally.simplified_errors, tally.compared / 50);
}

}  // namespace
}  // namespace hetpass
