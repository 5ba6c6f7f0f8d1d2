// Tests of linalg.det: inference (batch dims kept, symbolic ones included), its errors, and the
// LU reference kernel against determinants computed by hand (pivoting, singular matrices,
// batches, the empty matrix).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<double> Det(std::vector<int64_t> shape, std::vector<double> values) {
  auto out = RunRef("linalg.det", {}, {FT(std::move(shape), std::move(values))});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Doubles((*out)[0]) : std::vector<double>{};
}

TEST(DetTest, MaskAndInference) {
  EXPECT_EQ(Op("linalg.det")->dep(0), InputDep::kShape);
  EXPECT_EQ(InferStr("linalg.det", {}, {In(F32({S("b"), 4, S("m"), S("m")}))}), "f32[b, 4]");
  EXPECT_EQ(InferStr("linalg.det", {}, {In(T(DType::kF64, {3, 3}))}), "f64[]");
  EXPECT_THAT(InferStr("linalg.det", {}, {In(F32({2, 3, 4}))}),
              HasSubstr("matrices must be square, got 3 x 4"));
  EXPECT_THAT(InferStr("linalg.det", {}, {In(F32({3}))}),
              HasSubstr("need rank >= 2 ([*, M, M]), got rank 1"));
  EXPECT_THAT(InferStr("linalg.det", {}, {In(T(DType::kI64, {2, 2}))}),
              HasSubstr("matrices must be floating point, got i64"));
}

// Tests a 3 x 3 whose first pivot is 0, so the elimination must swap rows:
// det [[0, 2, 1], [3, 1, 4], [1, 5, 9]] = 0 (9 - 20) - 2 (27 - 4) + 1 (15 - 1) = -46 + 14 = -32.
TEST(DetTest, ThreeByThreeNeedsPivoting) {
  EXPECT_THAT(Det({3, 3}, {0, 2, 1, 3, 1, 4, 1, 5, 9}), ElementsAre(DoubleNear(-32, 1e-9)));
  // The same rows swapped once: the sign flips.
  EXPECT_THAT(Det({3, 3}, {3, 1, 4, 0, 2, 1, 1, 5, 9}), ElementsAre(DoubleNear(32, 1e-9)));
}

// Tests that singular matrices give exactly 0 (a zero column; dependent rows leave a zero pivot
// after elimination), never NaN from dividing by a zero pivot.
TEST(DetTest, SingularIsZero) {
  EXPECT_THAT(Det({3, 3}, {0, 1, 2, 0, 3, 4, 0, 5, 6}), ElementsAre(0));
  EXPECT_THAT(Det({3, 3}, {1, 2, 3, 2, 4, 6, 1, 1, 1}), ElementsAre(0));
}

// Tests batches (each matrix on its own), 1 x 1 and the empty 0 x 0 matrix (determinant 1).
TEST(DetTest, BatchesAndSmallSizes) {
  EXPECT_THAT(Det({2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 0.5}),
              ElementsAre(DoubleNear(-2, 1e-12), DoubleNear(1, 1e-12)));
  EXPECT_THAT(Det({1, 1}, {-7}), ElementsAre(-7));
  EXPECT_THAT(Det({2, 0, 0}, {}), ElementsAre(1, 1));
}

// Tests the run-time check of symbolic dims that the shape function did not see.
TEST(DetTest, KernelRejectsNonSquareAtRunTime) {
  const OpDef* op = Op("linalg.det");
  auto attrs = op->CheckAttrs({});
  ASSERT_TRUE(attrs.ok());
  auto out = op->reference()({FT({2, 3}, {1, 2, 3, 4, 5, 6})}, *attrs, {F32({})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("linalg.det: matrices must be square, got 2 x 3 at run time"));
}

}  // namespace
}  // namespace hetpass::testing
