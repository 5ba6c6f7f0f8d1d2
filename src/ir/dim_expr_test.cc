#include "passes/ir/dim_expr.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/parser.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

const DimExpr n = DimExpr::Symbol("n");
const DimExpr m = DimExpr::Symbol("m");
const DimExpr h = DimExpr::Symbol("h");

TEST(DimExprTest, PolynomialCanonicalisation) {
  EXPECT_EQ(n + n, 2 * n);
  EXPECT_EQ(n * 2, DimExpr(2) * n);
  EXPECT_EQ(n + m, m + n);
  EXPECT_EQ(n * m, m * n);
  EXPECT_EQ((n + 1) * (n - 1), n * n - 1);
  EXPECT_EQ(n - n, DimExpr(0));
  EXPECT_TRUE((n - n).is_constant());
  EXPECT_EQ((n + 3) - 3, n);
  EXPECT_TRUE(((n + 3) - 3).is_symbol());
  EXPECT_EQ(DimExpr(0) - (DimExpr(0) - n), n);
  EXPECT_EQ(-n, DimExpr(0) - n);
  EXPECT_EQ(DimExpr(6) * 7, DimExpr(42));
}

TEST(DimExprTest, FloorDivAndModSimplify) {
  EXPECT_EQ(DimExpr::FloorDiv(n * 4 + 3, 4), n);
  EXPECT_EQ(DimExpr::FloorDiv(n * 4 + 8, 4), n + 2);
  EXPECT_EQ(DimExpr::FloorDiv(n, 1), n);
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr(-7), 2), DimExpr(-4));  // floor, not truncation
  EXPECT_EQ(DimExpr::Mod(DimExpr(-7), 2), DimExpr(1));
  EXPECT_EQ(DimExpr::Mod(n * 6 + 4, 3), DimExpr(1));
  EXPECT_EQ(DimExpr::Mod(n, 1), DimExpr(0));
  EXPECT_EQ(DimExpr::FloorDiv(n * 4 + m, 4), n + DimExpr::FloorDiv(m, 4));
  EXPECT_TRUE(DimExpr::FloorDiv(n, 0).is_unknown());
  EXPECT_TRUE(DimExpr::Mod(n, 0).is_unknown());
  EXPECT_EQ(DimExpr::CeilDiv(n * 4 + 1, 4), n + 1);
}

TEST(DimExprTest, MinMaxSimplify) {
  EXPECT_EQ(DimExpr::Min(n, n + 1), n);
  EXPECT_EQ(DimExpr::Max(n, n + 1), n + 1);
  EXPECT_EQ(DimExpr::Min(n - 2, n), n - 2);
  EXPECT_EQ(DimExpr::Min(DimExpr(3), DimExpr(5)), DimExpr(3));
  EXPECT_EQ(DimExpr::Max(DimExpr(3), DimExpr(5)), DimExpr(5));
  EXPECT_EQ(DimExpr::Min(n, m), DimExpr::Min(m, n));  // operands sorted
  EXPECT_EQ(DimExpr::Min(n, m).kind(), DimExpr::Kind::kMin);
  EXPECT_EQ(DimExpr::Max(n, m).kind(), DimExpr::Kind::kMax);
}

// Tests the simplifications that need the symbols' signs (every symbol is a dimension, >= 0).
TEST(DimExprTest, SimplifyBySign) {
  EXPECT_EQ(DimExpr::Max(0, n + 2), n + 2);
  EXPECT_EQ(DimExpr::Max(0, n - 2).kind(), DimExpr::Kind::kMax);  // n may be below 2
  EXPECT_EQ(DimExpr::Min(n, DimExpr::Max(0, n - 2)), DimExpr::Max(0, n - 2));
  EXPECT_EQ(DimExpr::Max(0, n - DimExpr::Max(0, n - 2)), n - DimExpr::Max(0, n - 2));
  EXPECT_EQ(DimExpr::Min(DimExpr(INT64_MAX), n), n);  // a slice's "to the end"
  EXPECT_EQ(DimExpr::Max(DimExpr(INT64_MIN), n - 5), n - 5);
  EXPECT_EQ(DimExpr::Min(n * m, n * m + m), n * m);
  EXPECT_EQ(DimExpr::Min(3, DimExpr::Min(5, n)), DimExpr::Min(3, n));
  EXPECT_EQ(DimExpr::Max(3, DimExpr::Max(5, n - 9)), DimExpr::Max(5, n - 9));
  // Nested divisions by constants merge; a remainder below the divisor vanishes.
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr::FloorDiv(h + 1, 2) + 1, 2), DimExpr::FloorDiv(h + 3, 4));
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr::FloorDiv(h, 2), 3), DimExpr::FloorDiv(h, 6));
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr::Mod(n, 4), 4), DimExpr(0));
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr::Mod(n, 4) + 4, 4), DimExpr(1));
  EXPECT_EQ(DimExpr::Mod(DimExpr::Mod(n, 8), 4), DimExpr::Mod(n, 4));
  EXPECT_EQ(DimExpr::Mod(DimExpr::Min(3, n), 4), DimExpr::Min(3, n));
  EXPECT_EQ(DimExpr::Mod(DimExpr::Mod(n, 4), 4), DimExpr::Mod(n, 4));
  // A divisor provably above a non-negative dividend.
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr::Min(n, m), m + 1), DimExpr(0));
  EXPECT_EQ(DimExpr::Mod(DimExpr::Min(n, m), m + 1), DimExpr::Min(n, m));
  // A dividend whose terms are all negative is written with positive terms: a ceiling division
  // reads `(n + 3)//4`, not `-((-n)//4)`.
  EXPECT_EQ(DimExpr::CeilDiv(n, 4).ToString(), "(n + 3)//4");
  EXPECT_EQ(DimExpr::FloorDiv(DimExpr(0) - n, 4), DimExpr(0) - DimExpr::FloorDiv(n + 3, 4));
  EXPECT_EQ(DimExpr::Mod(DimExpr(1) - n * 2, 4), 3 - DimExpr::Mod(n * 2 + 2, 4));
  EXPECT_EQ(DimExpr::CeilDiv(DimExpr::FloorDiv(h, 4), 4), DimExpr::FloorDiv(h + 12, 16));
  // A divisor that divides every term exactly (`batch*windows // windows`).
  EXPECT_EQ(DimExpr::FloorDiv(n * m * 4 + m * 8, m * 4), n + 2);
  EXPECT_EQ(DimExpr::Mod(n * m * h, m * h), DimExpr(0));
  EXPECT_EQ(DimExpr::FloorDiv(n * m + 1, m).kind(), DimExpr::Kind::kFloorDiv);
  // What cannot be shown stays.
  EXPECT_EQ(DimExpr::Min(n, m).kind(), DimExpr::Kind::kMin);
  EXPECT_EQ(DimExpr::FloorDiv(n, m).kind(), DimExpr::Kind::kFloorDiv);
}

TEST(DimExprTest, BoundsAndProofs) {
  EXPECT_EQ(n.Bounds().lo, 0);
  EXPECT_EQ(n.Bounds().hi, DimBounds::kPosInf);
  EXPECT_EQ((n - 3).Bounds().lo, -3);
  EXPECT_EQ(DimExpr::Mod(n, 8).Bounds().hi, 7);
  EXPECT_EQ(DimExpr::Min(n, 100).Bounds().hi, 100);
  EXPECT_EQ((DimExpr(0) - n).Bounds().hi, 0);
  EXPECT_EQ(DimExpr(INT64_MIN).Bounds().hi, INT64_MIN + 1);  // never read as -inf
  EXPECT_TRUE(DimExpr::ProveLessEqual(DimExpr::Max(0, n - 2), n));
  EXPECT_FALSE(DimExpr::ProveLessEqual(n, DimExpr::Max(0, n - 2)));
  EXPECT_TRUE(DimExpr::ProveLessEqual(DimExpr::Min(n, m), DimExpr::Max(n, m)));
  EXPECT_FALSE(DimExpr::ProveNonNegative(n - m));
  EXPECT_FALSE(DimExpr::ProveNonNegative(DimExpr::Unknown()));
}

// Tests the examples: facts from assumptions finish what signs alone cannot.
TEST(DimExprTest, SimplifyWithFacts) {
  DimFacts facts;
  facts.AddLessEqual(2, n);  // n >= 2
  const DimExpr e = DimExpr::Max(0, n - 2) + DimExpr::Min(2, n);
  EXPECT_NE(e, n);
  EXPECT_EQ(e.Simplify(facts), n);
  EXPECT_EQ(e.Simplify(DimFacts()), e);

  // A window-partition slice: `x[:, 2:]` then `[:-2]`-style clamps, over a dim below 2^31.
  const DimExpr d = DimExpr::Symbol("dyn2");
  const DimExpr clamped = DimExpr::Max(0, d - 2);
  const DimExpr w = DimExpr::Min(d, clamped) +
                    DimExpr::Max(0, d - DimExpr::Min(DimExpr(2147483647), clamped));
  DimFacts below;
  below.AddLessEqual(d, 2147483647);
  EXPECT_EQ(w.Simplify(below), d);
  EXPECT_NE(w, d);

  // Equalities and general inequalities go through the non-negative differences.
  DimFacts rel;
  rel.AddLessEqual(m, n);  // m <= n
  EXPECT_EQ(DimExpr::Min(m, n).Simplify(rel), m);
  EXPECT_EQ(DimExpr::Max(m, n, &rel), n);
  EXPECT_EQ(DimExpr::FloorDiv(h, 4, &rel), DimExpr::FloorDiv(h, 4));
  DimFacts fixed;
  fixed.Bound("h", 7, 7);
  EXPECT_EQ((h * 2 + n).Simplify(fixed), n + 14);
}

TEST(DimExprTest, UnknownAbsorbsEverything) {
  const DimExpr u = DimExpr::Unknown();
  EXPECT_TRUE((n + u).is_unknown());
  EXPECT_TRUE((u * 2).is_unknown());
  EXPECT_TRUE(DimExpr::FloorDiv(u, 2).is_unknown());
  EXPECT_TRUE(DimExpr::Min(n, u).is_unknown());
  EXPECT_EQ(u, DimExpr::Unknown());  // structurally equal
  EXPECT_EQ(u.ToString(), "?");
}

TEST(DimExprTest, OverflowBecomesUnknown) {
  EXPECT_TRUE((DimExpr(INT64_MAX) + 1).is_unknown());
  EXPECT_TRUE((DimExpr(INT64_MAX) * 2).is_unknown());
  EXPECT_TRUE((n * INT64_MAX * 2).is_unknown());
}

TEST(DimExprTest, Printing) {
  EXPECT_EQ(DimExpr(5).ToString(), "5");
  EXPECT_EQ(DimExpr(-5).ToString(), "-5");
  EXPECT_EQ(n.ToString(), "n");
  EXPECT_EQ((n * 4 + 1).ToString(), "n*4 + 1");
  EXPECT_EQ(DimExpr::FloorDiv(h + 1, 2).ToString(), "(h + 1)//2");
  EXPECT_EQ(DimExpr::Min(DimExpr::Symbol("k"), n).ToString(), "min(k, n)");
  EXPECT_EQ(DimExpr::Mod(n, 3).ToString(), "n % 3");
  EXPECT_EQ((DimExpr(0) - n).ToString(), "-n");
  EXPECT_EQ(ShapeToString({n, 1024}), "[n, 1024]");
}

// Tests that a coefficient or constant of INT64_MIN prints without negating it in int64 (fuzzer
// finding: such a dim reaching an error message), as an added negative literal that the parser
// reads back (ir_parse_fuzzer finding: "-n*9223372036854775808" did not parse).
TEST(DimExprTest, PrintingInt64Min) {
  EXPECT_EQ(DimExpr(INT64_MIN).ToString(), "-9223372036854775808");
  EXPECT_EQ((n + INT64_MIN).ToString(), "n + -9223372036854775808");
  EXPECT_EQ((n * INT64_MIN).ToString(), "-9223372036854775808*n");
  EXPECT_EQ((m + n * INT64_MIN).ToString(), "m + -9223372036854775808*n");
  EXPECT_EQ((n * m * INT64_MIN + INT64_MIN).ToString(),
            "-9223372036854775808*m*n + -9223372036854775808");
}

// Tests that evaluating INT64_MIN // -1 is an overflow error and INT64_MIN % -1 is 0, not UB.
TEST(DimExprTest, EvaluateInt64MinByMinusOne) {
  const DimExpr::Bindings b = {{"n", INT64_MIN}, {"m", -1}};
  auto q = DimExpr::FloorDiv(n, m).Evaluate(b);
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(std::string(q.status().message()), HasSubstr("overflow evaluating 'n//m'"));
  auto r = DimExpr::Mod(n, m).Evaluate(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 0);
}

TEST(DimExprTest, PrintParseRoundTrip) {
  const DimExpr k = DimExpr::Symbol("k");
  const std::vector<DimExpr> exprs = {
      DimExpr(0),
      DimExpr(-3),
      DimExpr(INT64_MIN),
      DimExpr(INT64_MAX),
      n + INT64_MIN,
      n * INT64_MIN,
      m + n * INT64_MIN,
      n * m * INT64_MIN + INT64_MIN,
      DimExpr::FloorDiv(n * INT64_MIN, 2),
      DimExpr::Min(n * INT64_MIN, DimExpr(INT64_MIN)),
      n,
      n * m + n + 1,
      n * 4 - m * 2 - 7,
      DimExpr(0) - n,
      DimExpr(0) - n * m,
      DimExpr::FloorDiv(h + 1, 2),
      DimExpr(0) - DimExpr::FloorDiv(n, 2),
      DimExpr::FloorDiv(n, 2) * 3,
      DimExpr::FloorDiv(n, DimExpr(0) - 3),
      DimExpr::FloorDiv(n, m + 1),
      DimExpr::Mod(n * 2 + 1, 4),
      DimExpr::Mod(n, m) * DimExpr::Mod(m, 3),
      DimExpr::Min(k, n),
      DimExpr::Max(DimExpr::Min(k, n), m + 1) * 2 - 1,
      DimExpr::FloorDiv(DimExpr::FloorDiv(h + 2, 3) + 1, 2) * 4,
      (n + 1) * (m + 2) * (k + 3),
      DimExpr::Unknown(),
  };
  for (const DimExpr& e : exprs) {
    SCOPED_TRACE(e.ToString());
    auto parsed = ParseDimExpr(e.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, e);
    EXPECT_EQ(parsed->ToString(), e.ToString());
    EXPECT_EQ(parsed->Hash(), e.Hash());
  }
}

TEST(DimExprTest, Evaluate) {
  const DimExpr e = DimExpr::FloorDiv(n * 3 + m, 2) + DimExpr::Max(n, m) - DimExpr::Mod(m, 4);
  auto v = e.Evaluate({{"n", 5}, {"m", 7}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, (5 * 3 + 7) / 2 + 7 - 7 % 4);

  auto unbound = (n + m).Evaluate({{"n", 1}});
  ASSERT_FALSE(unbound.ok());
  EXPECT_THAT(std::string(unbound.status().message()), HasSubstr("symbol 'm' is not bound"));

  auto unknown = DimExpr::Unknown().Evaluate({});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("unknown dimension"));

  auto div0 = DimExpr::FloorDiv(n, m).Evaluate({{"n", 1}, {"m", 0}});
  ASSERT_FALSE(div0.ok());
  EXPECT_THAT(std::string(div0.status().message()), HasSubstr("division by zero"));

  auto overflow = (n * m).Evaluate({{"n", INT64_MAX}, {"m", 2}});
  ASSERT_FALSE(overflow.ok());
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr("overflow"));
}

TEST(DimExprTest, SubstituteAndCollectSymbols) {
  const DimExpr e = n * 4 + DimExpr::FloorDiv(m, 2);
  EXPECT_EQ(e.Substitute({{"n", DimExpr(3)}, {"m", DimExpr(9)}}), DimExpr(16));
  EXPECT_EQ(e.Substitute({{"n", m}}), m * 4 + DimExpr::FloorDiv(m, 2));
  EXPECT_EQ(e.Substitute({}), e);
  EXPECT_EQ(DimExpr::Min(n, m).Substitute({{"m", n + 1}}), n);
  std::set<std::string> symbols;
  (e + DimExpr::Max(h, 3)).CollectSymbols(&symbols);
  EXPECT_EQ(symbols, (std::set<std::string>{"h", "m", "n"}));
}

}  // namespace
}  // namespace hetpass
