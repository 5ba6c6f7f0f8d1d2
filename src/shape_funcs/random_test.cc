// Tests of random.uniform_like and random.normal_like: types and errors, seeded streams that
// repeat, ranges and moments of the draws, and that the passes treat them as impure (never
// folded, never merged).
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"
#include "support/ir_test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::HasSubstr;

TEST(RandomTest, TypesMasksAndErrors) {
  EXPECT_EQ(Op("random.uniform_like")->dep(0), InputDep::kShape);
  EXPECT_TRUE(Op("random.uniform_like")->impure());
  EXPECT_TRUE(Op("random.normal_like")->impure());
  EXPECT_FALSE(Op("add")->impure());
  EXPECT_EQ(InferStr("random.uniform_like", {{"dtype", DType::kF64}}, {In(T(DType::kI64, {S("n"), 3}))}),
            "f64[n, 3]");
  EXPECT_THAT(InferStr("random.normal_like", {{"dtype", DType::kI32}}, {In(F32({2}))}),
              HasSubstr("dtype must be floating point, got i32"));
  auto bad = RunRef("random.uniform_like", {{"low", 2.0}, {"high", 1.0}, {"seed", int64_t{1}}}, {FT({2}, {0, 0})});
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("low 2 is above high 1"));
}

// A seed fixes the stream of every call; draws fall in [low, high) and have roughly the
// moments of their distribution (10000 draws: the mean within 0.05 of the expected).
TEST(RandomTest, SeededDrawsRepeatAndHaveTheirDistribution) {
  const Tensor like = Tensor::Zeros(DType::kF32, {100, 100});
  const Attrs uniform = {{"seed", int64_t{42}}, {"low", -2.0}, {"high", 4.0}};
  auto a = RunRef("random.uniform_like", uniform, {like});
  auto b = RunRef("random.uniform_like", uniform, {like});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Doubles((*a)[0]), Doubles((*b)[0]));
  double sum = 0, lo = 1e9, hi = -1e9;
  for (double v : Doubles((*a)[0])) sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, -2.0);
  EXPECT_LT(hi, 4.0);
  EXPECT_NEAR(sum / 10000, 1.0, 0.05);
  auto other = RunRef("random.uniform_like", {{"seed", int64_t{43}}, {"low", -2.0}, {"high", 4.0}}, {like});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(Doubles((*a)[0]), Doubles((*other)[0]));
  auto normal = RunRef("random.normal_like", {{"seed", int64_t{7}}, {"mean", 3.0}, {"scale", 2.0}}, {like});
  ASSERT_TRUE(normal.ok());
  double s = 0, s2 = 0;
  for (double v : Doubles((*normal)[0])) s += v, s2 += v * v;
  const double mean = s / 10000;
  EXPECT_NEAR(mean, 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(s2 / 10000 - mean * mean), 2.0, 0.05);
}

// Two draws with the same input and attributes stay two values, and a draw over a constant
// shape is not folded into a constant.
TEST(RandomTest, PassesKeepDrawsApart) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[4]) {
  %s = constant<[4]> : i64[1]
  %z = dyn.zeros(%s) {dtype = f32} : f32[4]
  %a = random.uniform_like(%z) : f32[4]
  %b = random.uniform_like(%z) : f32[4]
  %c = add(%a, %b)
  return %c
}
)",
                                      "fold-constants,cse");
  EXPECT_THAT(out, HasSubstr("%a = random.uniform_like("));
  EXPECT_THAT(out, HasSubstr("%b = random.uniform_like("));
  EXPECT_THAT(out, HasSubstr("add(%a, %b)"));
}

}  // namespace
}  // namespace hetpass::testing
