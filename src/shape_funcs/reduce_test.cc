// Tests of the reductions: sum, mean, prod, max, min, argmax, argmin.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Axis(std::vector<int64_t> axes, bool keepdims = false, bool exclude = false) {
  return {{"axis", std::move(axes)}, {"keepdims", keepdims}, {"exclude", exclude}};
}

TEST(ReduceTest, MasksAndPatterns) {
  for (const char* name : {"sum", "mean", "prod", "max", "min", "argmax", "argmin"}) {
    EXPECT_EQ(Op(name)->dep(0), InputDep::kShape) << name;
    EXPECT_EQ(Op(name)->pattern(), FusionPattern::kReduction) << name;
  }
}

TEST(ReduceTest, SymbolicAndStatic) {
  const Type x = F32({S("n"), 3, 4});
  EXPECT_EQ(InferStr("sum", Axis({1}), {In(x)}), "f32[n, 4]");
  EXPECT_EQ(InferStr("sum", Axis({-1}, true), {In(x)}), "f32[n, 3, 1]");
  EXPECT_EQ(InferStr("max", Axis({}), {In(x)}), "f32[]");
  EXPECT_EQ(InferStr("max", Axis({}, true), {In(x)}), "f32[1, 1, 1]");
  EXPECT_EQ(InferStr("sum", Axis({0}, false, true), {In(x)}), "f32[n]");
  EXPECT_EQ(InferStr("mean", Axis({0}), {In(F32({2, 5}))}), "f32[5]");
}

TEST(ReduceTest, Errors) {
  EXPECT_THAT(InferStr("sum", Axis({3}), {In(F32({2, 3}))}), HasSubstr("axis 3 is out of range"));
  EXPECT_THAT(InferStr("sum", Axis({1, -1}), {In(F32({2, 3}))}),
              HasSubstr("axis -1 is given twice"));
  EXPECT_THAT(InferStr("max", Axis({0}), {In(F32({0, 3}))}),
              HasSubstr("cannot reduce axis 0 of size 0"));
  EXPECT_EQ(InferStr("sum", Axis({0}), {In(F32({0, 3}))}), "f32[3]");  // sum has an identity
  EXPECT_THAT(InferStr("argmax", {{"dtype", DType::kF32}}, {In(F32({3}))}),
              HasSubstr("dtype must be an integer type"));
  EXPECT_THAT(InferStr("sum", {{"axes", std::vector<int64_t>{0}}}, {In(F32({3}))}),
              HasSubstr("has no attribute 'axes'"));
}

TEST(ReduceTest, ArgInference) {
  EXPECT_EQ(InferStr("argmax", Axis({1}), {In(F32({S("n"), 3}))}), "i32[n]");
  Attrs a = Axis({1}, true);
  a.Set("dtype", DType::kI64);
  EXPECT_EQ(InferStr("argmin", a, {In(F32({S("n"), 3}))}), "i64[n, 1]");
}

TEST(ReduceTest, Reference) {
  const Tensor x = FT({2, 3}, {1, 5, 3, 4, 2, 6});
  auto sum = RunRef("sum", Axis({1}), {x});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT(Doubles((*sum)[0]), ElementsAre(9, 12));
  auto mean = RunRef("mean", Axis({0}), {x});
  ASSERT_TRUE(mean.ok());
  EXPECT_THAT(Doubles((*mean)[0]), ElementsAre(2.5, 3.5, 4.5));
  auto prod = RunRef("prod", Axis({}), {x});
  ASSERT_TRUE(prod.ok());
  EXPECT_THAT(Doubles((*prod)[0]), ElementsAre(720));
  auto mx = RunRef("max", Axis({1}, true), {x});
  ASSERT_TRUE(mx.ok());
  EXPECT_EQ((*mx)[0].shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_THAT(Doubles((*mx)[0]), ElementsAre(5, 6));
  auto mn = RunRef("min", Axis({0}), {x});
  ASSERT_TRUE(mn.ok());
  EXPECT_THAT(Doubles((*mn)[0]), ElementsAre(1, 2, 3));
}

// dyn.sum: ONNX ReduceSum-13's computed axes, read on the host.
TEST(DynSumTest, MasksInferenceAndReference) {
  EXPECT_EQ(Op("dyn.sum")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.sum")->dep(1), InputDep::kValue);
  const Tensor axes = I64s({-1});
  EXPECT_EQ(InferStr("dyn.sum", {}, {In(F32({S("n"), 4})), InV(axes)}), "f32[n]");
  EXPECT_EQ(InferStr("dyn.sum", {{"keepdims", true}}, {In(F32({S("n"), 4})), InV(axes)}),
            "f32[n, 1]");
  // Axes unknown at compile time: keepdims keeps the rank; otherwise their count decides it.
  EXPECT_EQ(InferStr("dyn.sum", {{"keepdims", true}}, {In(F32({S("n"), 4})), In(T(DType::kI64, {1}))}),
            "f32[?, ?]");
  EXPECT_EQ(InferStr("dyn.sum", {}, {In(F32({2, 3, 4})), In(T(DType::kI64, {2}))}), "f32[?]");
  EXPECT_THAT(InferStr("dyn.sum", {}, {In(F32({2, 3})), In(T(DType::kI64, {S("k")}))}),
              HasSubstr("number of axes must be known"));
  const Tensor twice = I64s({0, -2});
  EXPECT_THAT(InferStr("dyn.sum", {}, {In(F32({2, 3})), InV(twice)}), HasSubstr("axis"));
  const Tensor x = FT({2, 3}, {1, 5, 3, 4, 2, 6});
  auto rows = RunRef("dyn.sum", {}, {x, I64s({1})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Doubles((*rows)[0]), ElementsAre(9, 12));
  auto all = RunRef("dyn.sum", {}, {x, I64s({})});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Doubles((*all)[0]), ElementsAre(21));
  auto none = RunRef("dyn.sum", {{"noop_with_empty_axes", true}, {"keepdims", true}}, {x, I64s({})});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(Doubles((*none)[0]), ElementsAre(1, 5, 3, 4, 2, 6));
}

TEST(ReduceTest, ReferenceArgTies) {
  const Tensor x = FT({2, 3}, {1, 5, 5, 4, 2, 4});
  auto am = RunRef("argmax", Axis({1}), {x});
  ASSERT_TRUE(am.ok()) << am.status();
  EXPECT_THAT(Ints((*am)[0]), ElementsAre(1, 0));
  Attrs last = Axis({1});
  last.Set("select_last_index", true);
  auto al = RunRef("argmax", last, {x});
  ASSERT_TRUE(al.ok());
  EXPECT_THAT(Ints((*al)[0]), ElementsAre(2, 2));
  auto flat = RunRef("argmin", Axis({}), {x});
  ASSERT_TRUE(flat.ok());
  EXPECT_THAT(Ints((*flat)[0]), ElementsAre(0));
}

}  // namespace
}  // namespace hetpass::testing
