// Tests of image.resize2d and dyn.image.resize2d.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Resize(std::vector<int64_t> size, std::string method, std::string mode) {
  return {{"size", std::move(size)},
          {"method", std::move(method)},
          {"coordinate_transformation_mode", std::move(mode)}};
}

TEST(ResizeTest, Masks) {
  EXPECT_EQ(Op("image.resize2d")->dep(0), InputDep::kShape);
  // TVM declared the whole dyn op data dependent; only the two size integers are needed.
  EXPECT_EQ(Op("dyn.image.resize2d")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.image.resize2d")->dep(1), InputDep::kValue);
}

TEST(ResizeTest, Inference) {
  EXPECT_EQ(InferStr("image.resize2d", {{"size", std::vector<int64_t>{8, 6}}},
                     {In(F32({S("n"), 3, S("h"), S("w")}))}),
            "f32[n, 3, 8, 6]");
  EXPECT_EQ(InferStr("image.resize2d",
                     {{"size", std::vector<int64_t>{8, 6}}, {"layout", std::string("NHWC")}},
                     {In(F32({S("n"), 4, 4, 3}))}),
            "f32[n, 8, 6, 3]");
  EXPECT_THAT(
      InferStr("image.resize2d", {{"size", std::vector<int64_t>{8}}}, {In(F32({1, 1, 2, 2}))}),
      HasSubstr("size must have 2 values, got 1"));
  EXPECT_THAT(
      InferStr("image.resize2d", {{"size", std::vector<int64_t>{8, 0}}}, {In(F32({1, 1, 2, 2}))}),
      HasSubstr("size must be positive, got 0"));
  EXPECT_THAT(
      InferStr("image.resize2d", {{"size", std::vector<int64_t>{8, 8}}}, {In(F32({1, 2, 2}))}),
      HasSubstr("data must have rank 4, got rank 3"));
  EXPECT_THAT(InferStr("image.resize2d",
                       {{"size", std::vector<int64_t>{8, 8}}, {"method", std::string("area")}},
                       {In(F32({1, 1, 2, 2}))}),
              HasSubstr("unsupported method 'area'"));
}

TEST(DynResizeTest, Inference) {
  EXPECT_EQ(
      InferStr("dyn.image.resize2d", {}, {In(F32({S("n"), 3, 4, 4})), In(T(DType::kI64, {2}))}),
      "f32[n, 3, ?, ?]");
  const std::vector<DimExpr> size = {S("h") * 2, S("w") * 2};
  EXPECT_EQ(InferStr("dyn.image.resize2d", {}, {In(F32({1, 3, S("h"), S("w")})), InSym(size)}),
            "f32[1, 3, h*2, w*2]");
  const Tensor s = I64s({5, 7});
  EXPECT_EQ(InferStr("dyn.image.resize2d", {}, {In(F32({1, 3, 4, 4})), InV(s)}), "f32[1, 3, 5, 7]");
  const Tensor bad = I64s({5, 7, 1});
  EXPECT_THAT(InferStr("dyn.image.resize2d", {}, {In(F32({1, 3, 4, 4})), InV(bad)}),
              HasSubstr("size must have 2 values, got 3"));
}

// 1x1x1x2 image [0, 10] resized to width 4 under each coordinate mode.
std::vector<double> Row(std::string method, std::string mode) {
  auto out = RunRef("image.resize2d", Resize({1, 4}, std::move(method), std::move(mode)),
                    {FT({1, 1, 1, 2}, {0, 10})});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Doubles((*out)[0]) : std::vector<double>{};
}

TEST(ResizeTest, ReferenceLinear) {
  // half_pixel: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 -> clamped lerp.
  EXPECT_THAT(Row("linear", "half_pixel"), ElementsAre(0, 2.5, 7.5, 10));
  // align_corners: x = o / 3.
  EXPECT_THAT(Row("linear", "align_corners"),
              ElementsAre(0, DoubleNear(10.0 / 3, 1e-5), DoubleNear(20.0 / 3, 1e-5), 10));
  // asymmetric: x = o / 2.
  EXPECT_THAT(Row("linear", "asymmetric"), ElementsAre(0, 5, 10, 10));
}

TEST(ResizeTest, ReferenceNearest) {
  EXPECT_THAT(Row("nearest_neighbor", "asymmetric"), ElementsAre(0, 0, 10, 10));
  EXPECT_THAT(Row("nearest_neighbor", "half_pixel"), ElementsAre(0, 0, 0, 10));
  // align_corners rounds: 0, 0.33, 0.67, 1 -> 0, 0, 1, 1.
  EXPECT_THAT(Row("nearest_neighbor", "align_corners"), ElementsAre(0, 0, 10, 10));
}

TEST(ResizeTest, ReferenceTwoDims) {
  auto out = RunRef("dyn.image.resize2d",
                    {{"method", std::string("nearest_neighbor")},
                     {"coordinate_transformation_mode", std::string("asymmetric")}},
                    {FT({1, 1, 2, 2}, {1, 2, 3, 4}), I64s({4, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
}

}  // namespace
}  // namespace hetpass::testing
