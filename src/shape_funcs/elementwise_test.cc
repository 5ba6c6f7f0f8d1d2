// Tests of the elementwise/broadcast family (unary math, binary ops, comparisons, cast, where).
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ElementwiseTest, MasksArePureShape) {
  for (const char* name :
       {"nn.relu", "exp", "sigmoid", "tanh", "sqrt", "log", "negative", "abs", "cast"}) {
    EXPECT_EQ(Op(name)->dep(0), InputDep::kShape) << name;
    EXPECT_EQ(Op(name)->pattern(), FusionPattern::kElementwise) << name;
  }
  for (const char* name : {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                           "equal", "greater", "less"}) {
    EXPECT_EQ(Op(name)->dep(0), InputDep::kShape) << name;
    EXPECT_EQ(Op(name)->dep(1), InputDep::kShape) << name;
    EXPECT_EQ(Op(name)->pattern(), FusionPattern::kBroadcast) << name;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Op("where")->dep(i), InputDep::kShape);
}

TEST(ElementwiseTest, UnaryInferenceAndReference) {
  EXPECT_EQ(InferStr("sqrt", {}, {In(F32({S("n"), 2}))}), "f32[n, 2]");
  auto s = RunRef("sqrt", {}, {FT({2}, {4, 9})});
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(Doubles((*s)[0]), ElementsAre(2, 3));
  auto l = RunRef("log", {}, {FT({1}, {1})});
  ASSERT_TRUE(l.ok());
  EXPECT_THAT(Doubles((*l)[0]), ElementsAre(0));
  auto n = RunRef("negative", {}, {FT({2}, {1, -2})});
  ASSERT_TRUE(n.ok());
  EXPECT_THAT(Doubles((*n)[0]), ElementsAre(-1, 2));
  auto a = RunRef("abs", {}, {FT({2}, {-3, 2})});
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(Doubles((*a)[0]), ElementsAre(3, 2));
  auto r = RunRef("nn.relu", {}, {FT({2}, {-3, 2})});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Doubles((*r)[0]), ElementsAre(0, 2));
}

TEST(ElementwiseTest, BinaryBroadcastSymbolic) {
  EXPECT_EQ(InferStr("add", {}, {In(F32({S("n"), 1})), In(F32({4}))}), "f32[n, 4]");
  EXPECT_EQ(InferStr("power", {}, {In(F32({S("n"), 4})), In(F32({}))}), "f32[n, 4]");
  EXPECT_EQ(InferStr("less", {}, {In(F32({2})), In(F32({2}))}), "bool[2]");
  EXPECT_THAT(InferStr("add", {}, {In(F32({3})), In(F32({4}))}),
              HasSubstr("cannot broadcast [3] with [4]"));
  EXPECT_THAT(InferStr("multiply", {}, {In(F32({3})), In(T(DType::kI32, {3}))}),
              HasSubstr("operand dtypes differ: f32 vs i32"));
}

TEST(ElementwiseTest, BinaryReference) {
  auto p = RunRef("power", {}, {FT({2, 1}, {2, 3}), FT({2}, {2, 3})});
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(Doubles((*p)[0]), ElementsAre(4, 8, 9, 27));
  auto d = RunRef("divide", {}, {IT({2}, {7, -7}), IT({}, {2})});
  ASSERT_TRUE(d.ok());
  EXPECT_THAT(Ints((*d)[0]), ElementsAre(3, -3));
  auto z = RunRef("divide", {}, {IT({1}, {7}), IT({}, {0})});
  EXPECT_FALSE(z.ok());
}

TEST(ElementwiseTest, SymbolicValuesOfShapeArithmetic) {
  const std::vector<DimExpr> n = {S("n")};
  const Tensor four = I64Scalar(4);
  EXPECT_EQ(SymValuesStr("multiply", {}, {InSymScalar(n), InV(four)}), "[n*4]");
  EXPECT_EQ(SymValuesStr("divide", {}, {InSymScalar(n), InV(four)}), "[n//4]");
  EXPECT_EQ(SymValuesStr("cast", {{"dtype", DType::kI32}}, {InSym(n)}), "[n]");
}

// Tests mod (floor: the sign of the divisor) and fmod (truncated: the sign of the dividend) on
// every sign combination, integers and floats, INT64_MIN % -1 = 0, a zero divisor (an error
// on integers, NaN on floats), and their symbolic values.
TEST(ElementwiseTest, ModAndFmod) {
  const Tensor a = IT({6}, {7, -7, 7, -7, INT64_MIN, 6}), b = IT({6}, {3, 3, -3, -3, -1, 3});
  auto m = RunRef("mod", {}, {a, b});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ints((*m)[0]), ElementsAre(1, 2, -2, -1, 0, 0));
  auto f = RunRef("fmod", {}, {a, b});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Ints((*f)[0]), ElementsAre(1, -1, 1, -1, 0, 0));
  auto mf = RunRef("mod", {}, {FT({4}, {7.5, -7.5, 7.5, 1}), FT({4}, {2, 2, -2, 0})});
  ASSERT_TRUE(mf.ok()) << mf.status();
  const std::vector<double> mv = Doubles((*mf)[0]);
  EXPECT_THAT(std::vector<double>(mv.begin(), mv.begin() + 3), ElementsAre(1.5, 0.5, -0.5));
  EXPECT_TRUE(std::isnan(mv[3]));
  auto ff = RunRef("fmod", {}, {FT({2}, {-7.5, 7.5}), FT({2}, {2, -2})});
  ASSERT_TRUE(ff.ok()) << ff.status();
  EXPECT_THAT(Doubles((*ff)[0]), ElementsAre(-1.5, 1.5));
  for (const char* op : {"mod", "fmod"}) EXPECT_FALSE(RunRef(op, {}, {IT({1}, {7}), IT({}, {0})}).ok()) << op;
  const std::vector<DimExpr> n = {S("n")};
  EXPECT_EQ(SymValuesStr("mod", {}, {InSymScalar(n), InV(I64Scalar(4))}), "[n - (n//4)*4]");
  EXPECT_EQ(SymValuesStr("mod", {}, {InV(I64Scalar(-7)), InV(I64Scalar(3))}), "[2]");
  EXPECT_EQ(SymValuesStr("fmod", {}, {InV(I64Scalar(-7)), InV(I64Scalar(3))}), "[-1]");
  EXPECT_EQ(SymValuesStr("fmod", {}, {InSymScalar(n), InV(I64Scalar(4))}), "<unknown>");
}

// Tests u64 semantics where int64 differs: values from 2^63 up order and divide unsigned, and
// right_shift is logical; shifts by the bit width or more shift everything out.
TEST(ElementwiseTest, UnsignedSixtyFourBitAndShifts) {
  auto u64 = [](std::vector<int64_t> bits) {
    return Tensor::FromInt64s(DType::kU64, {static_cast<int64_t>(bits.size())}, bits);
  };
  const Tensor big = u64({INT64_MIN, -1, 7}), small = u64({3, 2, 2});  // 2^63, 2^64 - 1, 7
  auto mx = RunRef("maximum", {}, {big, small});
  ASSERT_TRUE(mx.ok()) << mx.status();
  EXPECT_THAT(Ints((*mx)[0]), ElementsAre(INT64_MIN, -1, 7));
  auto gt = RunRef("greater", {}, {big, small});
  ASSERT_TRUE(gt.ok()) << gt.status();
  EXPECT_THAT(Ints((*gt)[0]), ElementsAre(1, 1, 1));
  auto q = RunRef("divide", {}, {big, small});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(static_cast<uint64_t>((*q)[0].GetInt64(0)), (uint64_t{1} << 63) / 3);
  EXPECT_EQ(static_cast<uint64_t>((*q)[0].GetInt64(1)), UINT64_MAX / 2);
  auto r = RunRef("mod", {}, {big, small});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Ints((*r)[0]), ElementsAre(static_cast<int64_t>((uint64_t{1} << 63) % 3), 1, 1));
  auto sh = RunRef("right_shift", {}, {big, u64({63, 60, 64})});
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_THAT(Ints((*sh)[0]), ElementsAre(1, 15, 0));
  const Tensor u8 = Tensor::FromInt64s(DType::kU8, {3}, {0x81, 1, 255});
  auto left = RunRef("left_shift", {}, {u8, Tensor::FromInt64s(DType::kU8, {3}, {1, 8, 200})});
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_THAT(Ints((*left)[0]), ElementsAre(2, 0, 0));
  auto signed_right = RunRef("right_shift", {}, {IT({2}, {-8, -8}), IT({2}, {1, 99})});
  ASSERT_TRUE(signed_right.ok()) << signed_right.status();
  EXPECT_THAT(Ints((*signed_right)[0]), ElementsAre(-4, -1));
  EXPECT_THAT(InferStr("left_shift", {}, {In(F32({2})), In(F32({2}))}),
              HasSubstr("operands must be integers, got f32"));
}

// Tests that the one int64 quotient that does not fit, INT64_MIN / -1, wraps to INT64_MIN (two's
// complement, like the wrapping add/subtract/multiply) in the kernel and the symbolic values,
// instead of being undefined behaviour.
TEST(ElementwiseTest, IntegerOverflowWraps) {
  auto d = RunRef("divide", {}, {IT({2}, {INT64_MIN, INT64_MIN}), IT({2}, {-1, 1})});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(Ints((*d)[0]), ElementsAre(INT64_MIN, INT64_MIN));
  EXPECT_EQ(SymValuesStr("divide", {}, {InSymScalar({DimExpr(INT64_MIN)}), InV(I64Scalar(-1))}),
            "[-9223372036854775808]");
  auto a = RunRef("add", {}, {IT({1}, {INT64_MAX}), IT({}, {1})});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Ints((*a)[0]), ElementsAre(INT64_MIN));
  auto m = RunRef("multiply", {}, {IT({1}, {INT64_MIN}), IT({}, {-1})});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(Ints((*m)[0]), ElementsAre(INT64_MIN));
  auto s = RunRef("subtract", {}, {IT({1}, {INT64_MIN}), IT({}, {1})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(Ints((*s)[0]), ElementsAre(INT64_MAX));
}

TEST(WhereTest, InferenceErrorsReference) {
  EXPECT_EQ(InferStr("where", {}, {In(T(DType::kBool, {S("n"), 1})), In(F32({1, 3})), In(F32({}))}),
            "f32[n, 3]");
  EXPECT_THAT(
      InferStr("where", {}, {In(T(DType::kBool, {3})), In(F32({3})), In(T(DType::kI64, {3}))}),
      HasSubstr("x and y dtypes differ: f32 vs i64"));
  EXPECT_THAT(InferStr("where", {}, {In(T(DType::kBool, {2})), In(F32({3})), In(F32({3}))}),
              HasSubstr("cannot broadcast"));
  auto w = RunRef("where", {},
                  {Tensor::FromInt64s(DType::kBool, {2, 1}, std::vector<int64_t>{1, 0}),
                   FT({2}, {1, 2}), FT({}, {-1})});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(Doubles((*w)[0]), ElementsAre(1, 2, -1, -1));
}

TEST(CastTest, InferenceAndReference) {
  EXPECT_EQ(InferStr("cast", {{"dtype", DType::kI32}}, {In(F32({S("n")}))}), "i32[n]");
  EXPECT_THAT(InferStr("cast", {}, {In(F32({2}))}), HasSubstr("needs attribute 'dtype'"));
  auto c = RunRef("cast", {{"dtype", DType::kI32}}, {FT({2}, {1.7, -1.7})});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(Ints((*c)[0]), ElementsAre(1, -1));
  auto s = RunRef("sigmoid", {}, {FT({1}, {0})});
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(Doubles((*s)[0]), ElementsAre(DoubleNear(0.5, 1e-7)));
}

}  // namespace
}  // namespace hetpass::testing
