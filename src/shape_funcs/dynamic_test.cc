// Tests of shape_of, arange, dyn.full, dyn.zeros and dyn.ones.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- shape_of ------------------------------------------------------------------------------

TEST(ShapeOfTest, MaskIsShapeOnly) {
  EXPECT_EQ(Op("shape_of")->dep(0), InputDep::kShape);
  EXPECT_FALSE(Op("shape_of")->needs_values());
}

TEST(ShapeOfTest, InferenceAndSymbolicValues) {
  EXPECT_EQ(InferStr("shape_of", {}, {In(F32({S("n"), 1024}))}), "i64[2]");
  EXPECT_EQ(InferStr("shape_of", {{"dtype", DType::kI32}}, {In(F32({}))}), "i32[0]");
  EXPECT_THAT(InferStr("shape_of", {{"dtype", DType::kF32}}, {In(F32({2}))}),
              HasSubstr("dtype must be an integer type, got f32"));
  EXPECT_EQ(SymValuesStr("shape_of", {}, {In(F32({S("n"), 1024}))}), "[n, 1024]");
}

TEST(ShapeOfTest, Reference) {
  auto out = RunRef("shape_of", {}, {Tensor::Zeros(DType::kF32, {3, 0, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints((*out)[0]), ElementsAre(3, 0, 2));
}

// shape_of -> take -> concatenate -> dyn.reshape keeps the batch symbol end to end.
TEST(ShapeOfTest, ShapeSubgraphStaysSymbolic) {
  const ShapeInput x = In(F32({S("n"), 4, 8}));
  const std::string shape = SymValuesStr("shape_of", {}, {x});
  ASSERT_EQ(shape, "[n, 4, 8]");
  const std::vector<DimExpr> dims = {S("n"), 4, 8};
  const Tensor zero = I64s({0});
  const std::string first = SymValuesStr("take", {}, {InSym(dims), InV(zero)});
  ASSERT_EQ(first, "[n]");
  const std::vector<DimExpr> n = {S("n")};
  const Tensor minus_one = I64s({-1});
  ASSERT_EQ(SymValuesStr("concatenate", {}, {InSym(n), InV(minus_one)}), "[n, -1]");
  const std::vector<DimExpr> target = {S("n"), -1};
  EXPECT_EQ(InferStr("dyn.reshape", {}, {x, InSym(target)}), "f32[n, 32]");
}

// ---- arange --------------------------------------------------------------------------------

TEST(ArangeTest, MaskAllValue) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Op("arange")->dep(i), InputDep::kValue);
}

TEST(ArangeTest, ConcreteLengths) {
  const Tensor a = FT({}, {0}), b = FT({}, {1}), s = FT({}, {0.3});
  EXPECT_EQ(InferStr("arange", {}, {InV(a), InV(b), InV(s)}), "f32[4]");
  const Tensor start = I64Scalar(10), stop = I64Scalar(0), step = I64Scalar(-3);
  EXPECT_EQ(InferStr("arange", {{"dtype", DType::kI64}}, {InV(start), InV(stop), InV(step)}),
            "i64[4]");
  const Tensor up = I64Scalar(3);
  EXPECT_EQ(InferStr("arange", {}, {InV(start), InV(stop), InV(up)}), "f32[0]");
}

TEST(ArangeTest, Symbolic) {
  const std::vector<DimExpr> zero = {0}, n = {S("n")}, two = {2}, three = {3};
  EXPECT_EQ(InferStr("arange", {{"dtype", DType::kI64}},
                     {InSymScalar(zero, DType::kI64), InSymScalar(n), InSymScalar(two)}),
            "i64[(n + 1)//2]");
  EXPECT_EQ(InferStr("arange", {}, {InSymScalar(three), InSymScalar(n), InSymScalar(two)}),
            "f32[max(0, n//2 - 1)]");
  const std::vector<DimExpr> k = {S("k")};
  EXPECT_EQ(InferStr("arange", {}, {InSymScalar(zero), InSymScalar(n), InSymScalar(k)}), "f32[?]");
  const Type scalar = T(DType::kI64, {});
  EXPECT_EQ(InferStr("arange", {}, {In(scalar), In(scalar), In(scalar)}), "f32[?]");
}

TEST(ArangeTest, Errors) {
  const Tensor a = I64Scalar(0), b = I64Scalar(5), zero = I64Scalar(0), vec = I64s({1});
  EXPECT_THAT(InferStr("arange", {}, {InV(a), InV(b), InV(zero)}),
              HasSubstr("step must be non-zero"));
  EXPECT_THAT(InferStr("arange", {}, {InV(a), InV(vec), InV(b)}),
              HasSubstr("stop must be a scalar, got rank 1"));
}

// Tests that a symbolic arange with step INT64_MIN (no int64 negation) is an error, not UB
// (fuzzer finding: ONNX Range over a symbolic start).
TEST(ArangeTest, Int64MinStepIsAnError) {
  const std::vector<DimExpr> n = {S("n")}, zero = {0}, min = {DimExpr(INT64_MIN)};
  EXPECT_THAT(InferStr("arange", {{"dtype", DType::kI64}},
                       {InSymScalar(n), InSymScalar(zero), InSymScalar(min)}),
              HasSubstr("op 'arange': step -9223372036854775808 is not supported"));
}

TEST(ArangeTest, Reference) {
  auto f = RunRef("arange", {}, {FT({}, {1}), FT({}, {2}), FT({}, {0.25})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Doubles((*f)[0]), ElementsAre(1, 1.25, 1.5, 1.75));
  auto i = RunRef("arange", {{"dtype", DType::kI64}}, {I64Scalar(5), I64Scalar(0), I64Scalar(-2)});
  ASSERT_TRUE(i.ok());
  EXPECT_THAT(Ints((*i)[0]), ElementsAre(5, 3, 1));
}

// ---- dyn.full / dyn.zeros / dyn.ones -------------------------------------------------------

TEST(DynFullTest, MaskFillValueNone) {
  EXPECT_EQ(Op("dyn.full")->dep(0), InputDep::kNone);
  EXPECT_EQ(Op("dyn.full")->dep(1), InputDep::kValue);
  EXPECT_EQ(Op("dyn.zeros")->dep(0), InputDep::kValue);
  EXPECT_EQ(Op("dyn.ones")->dep(0), InputDep::kValue);
}

TEST(DynFullTest, Inference) {
  const std::vector<DimExpr> shape = {S("n"), 3};
  EXPECT_EQ(InferStr("dyn.full", {{"dtype", DType::kI32}}, {In(F32({})), InSym(shape)}),
            "i32[n, 3]");
  EXPECT_EQ(InferStr("dyn.zeros", {}, {In(T(DType::kI64, {2}))}), "f32[?, ?]");
  const Tensor s = I64s({2, 0});
  EXPECT_EQ(InferStr("dyn.ones", {}, {InV(s)}), "f32[2, 0]");
  const Tensor neg = I64s({2, -1});
  EXPECT_THAT(InferStr("dyn.zeros", {}, {InV(neg)}), HasSubstr("shape value -1 is negative"));
  EXPECT_THAT(InferStr("dyn.full", {}, {In(F32({2})), InV(s)}),
              HasSubstr("fill_value must be a scalar"));
  EXPECT_THAT(InferStr("dyn.zeros", {}, {In(T(DType::kI64, {S("k")}))}),
              HasSubstr("shape must have a static length"));
}

TEST(DynFullTest, Reference) {
  auto f = RunRef("dyn.full", {{"dtype", DType::kI64}}, {I64Scalar(7), I64s({2})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Ints((*f)[0]), ElementsAre(7, 7));
  auto z = RunRef("dyn.zeros", {}, {I64s({1, 2})});
  ASSERT_TRUE(z.ok());
  EXPECT_THAT(Doubles((*z)[0]), ElementsAre(0, 0));
  auto o = RunRef("dyn.ones", {}, {I64s({3})});
  ASSERT_TRUE(o.ok());
  EXPECT_THAT(Doubles((*o)[0]), ElementsAre(1, 1, 1));
}

}  // namespace
}  // namespace hetpass::testing
