// Tests of topk, dyn.topk and argwhere.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- topk ----------------------------------------------------------------------------------

TEST(TopKTest, MaskDataIsShapeOnly) {
  EXPECT_EQ(Op("topk")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("topk")->num_outputs(), 2);
}

TEST(TopKTest, Inference) {
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{3}}}, {In(F32({S("b"), 10}))}), "f32[b, 3], i64[b, 3]");
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{3}}, {"axis", int64_t{0}}}, {In(F32({S("n"), 10}))}),
            "f32[min(3, n), 10], i64[min(3, n), 10]");
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{0}}, {"dtype", DType::kI32}}, {In(F32({4, 10}))}),
            "f32[4, 10], i32[4, 10]");
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{20}}}, {In(F32({4, 10}))}), "f32[4, 10], i64[4, 10]");
  EXPECT_THAT(InferStr("topk", {{"axis", int64_t{2}}}, {In(F32({4, 10}))}),
              HasSubstr("axis 2 is out of range"));
  EXPECT_THAT(InferStr("topk", {{"dtype", DType::kF32}}, {In(F32({4}))}),
              HasSubstr("dtype must be an integer type"));
}

TEST(TopKTest, ReferenceStableTies) {
  const Tensor x = FT({2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  auto out = RunRef("topk", {{"k", int64_t{2}}}, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(3, 3, 5, 5));
  EXPECT_THAT(Ints((*out)[1]), ElementsAre(0, 2, 1, 2));
  auto asc = RunRef("topk", {{"k", int64_t{2}}, {"is_ascend", true}}, {x});
  ASSERT_TRUE(asc.ok());
  EXPECT_THAT(Doubles((*asc)[0]), ElementsAre(1, 2, 0, 5));
  EXPECT_THAT(Ints((*asc)[1]), ElementsAre(1, 3, 0, 1));
  auto col = RunRef("topk", {{"k", int64_t{1}}, {"axis", int64_t{0}}}, {x});
  ASSERT_TRUE(col.ok());
  EXPECT_THAT(Ints((*col)[1]), ElementsAre(0, 1, 1, 1));
}

TEST(DynTopKTest, MaskOnlyKIsValue) {
  EXPECT_EQ(Op("dyn.topk")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.topk")->dep(1), InputDep::kValue);
}

TEST(DynTopKTest, Inference) {
  EXPECT_EQ(InferStr("dyn.topk", {}, {In(F32({S("b"), 10})), In(T(DType::kI64, {}))}),
            "f32[b, ?], i64[b, ?]");
  const std::vector<DimExpr> k = {S("k")};
  EXPECT_EQ(InferStr("dyn.topk", {}, {In(F32({S("b"), 10})), InSymScalar(k)}),
            "f32[b, min(10, k)], i64[b, min(10, k)]");
  const Tensor two = I64Scalar(2);
  EXPECT_EQ(InferStr("dyn.topk", {}, {In(F32({5, 10})), InV(two)}), "f32[5, 2], i64[5, 2]");
  const Tensor vec = I64s({2});
  EXPECT_THAT(InferStr("dyn.topk", {}, {In(F32({5, 10})), InV(vec)}),
              HasSubstr("k must be a scalar, got rank 1"));
}

TEST(DynTopKTest, Reference) {
  auto out = RunRef("dyn.topk", {}, {FT({4}, {1, 4, 2, 3}), I64Scalar(3)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(4, 3, 2));
  EXPECT_THAT(Ints((*out)[1]), ElementsAre(1, 3, 2));
}

// ---- argwhere ------------------------------------------------------------------------------

TEST(ArgwhereTest, MaskAndDataDependence) {
  EXPECT_EQ(Op("argwhere")->dep(0), InputDep::kValue);
  EXPECT_TRUE(Op("argwhere")->data_dependent_output_shape());
  EXPECT_EQ(Op("argwhere")->pattern(), FusionPattern::kOpaque);
}

TEST(ArgwhereTest, Inference) {
  EXPECT_EQ(InferStr("argwhere", {}, {In(T(DType::kBool, {S("n"), 3}))}), "i64[?, 2]");
  const Tensor c = FT({2, 2}, {0, 0.5, 1, 0});
  EXPECT_EQ(InferStr("argwhere", {}, {InV(c)}), "i64[2, 2]");
}

TEST(ArgwhereTest, Reference) {
  auto out = RunRef("argwhere", {}, {FT({2, 3}, {0, 1, 0, 2, 0, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(Ints((*out)[0]), ElementsAre(0, 1, 1, 0, 1, 2));
}

}  // namespace
}  // namespace hetpass::testing
