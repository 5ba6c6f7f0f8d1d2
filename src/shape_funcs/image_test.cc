// Tests of image.resize2d, dyn.image.resize2d and image.roi_align.
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

// dyn.image.resize2d_scaled: ONNX's scales transform coordinates with the scale itself, not
// out / in: 1x1x1x4 [0, 10, 20, 30] by 0.6 has 2 outputs (floor 2.4), at x = (o + 0.5) / 0.6 -
// 0.5 = 0.333.., 2 -> lerp 3.33.., 20; the size [1, 2] would sample 0.5 and 2.5 instead.
TEST(ResizeScaledTest, ScalesTransformCoordinates) {
  const Tensor x = FT({1, 1, 1, 4}, {0, 10, 20, 30});
  const Attrs linear = {{"method", std::string("linear")}};
  auto scaled = RunRef("dyn.image.resize2d_scaled", linear,
                       {x, I64s({}), FT({4}, {1, 1, 1, 0.6}), FT({0}, {})});
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  EXPECT_EQ((*scaled)[0].shape(), (std::vector<int64_t>{1, 1, 1, 2}));
  EXPECT_THAT(Doubles((*scaled)[0]), ElementsAre(DoubleNear(10.0 / 3, 1e-5), DoubleNear(20, 1e-5)));
  auto sized = RunRef("dyn.image.resize2d_scaled", linear,
                      {x, I64s({1, 2}), FT({0}, {}), FT({0}, {})});
  ASSERT_TRUE(sized.ok()) << sized.status();
  EXPECT_THAT(Doubles((*sized)[0]), ElementsAre(5, 25));
  EXPECT_EQ(InferStr("dyn.image.resize2d_scaled", linear,
                     {In(F32({S("n"), 3, 5, 4})), InV(I64s({})), InV(FT({4}, {1, 1, 2, 0.5})),
                      InV(FT({0}, {}))}),
            "f32[n, 3, 10, 2]");
  EXPECT_THAT(InferStr("dyn.image.resize2d_scaled", linear,
                       {In(F32({1, 3, 5, 4})), InV(I64s({})), InV(FT({4}, {2, 1, 2, 2})),
                        InV(FT({0}, {}))}),
              HasSubstr("only the spatial dims may be scaled"));
  auto no_roi = RunRef("dyn.image.resize2d_scaled",
                       {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}},
                       {x, I64s({2, 2}), FT({0}, {}), FT({0}, {})});
  ASSERT_FALSE(no_roi.ok());
  EXPECT_THAT(no_roi.status().message(), HasSubstr("tf_crop_and_resize needs a roi of 8 values"));
}

// tf_crop_and_resize maps the output onto the roi and gives extrapolation_value outside the
// input: width 4 cropped to [0.5, 1.5] of [0, 30] at 3 points: 15, 30 (the last pixel) and 45,
// outside -> -1.
TEST(ResizeScaledTest, CropAndResizeExtrapolates) {
  auto out = RunRef("dyn.image.resize2d_scaled",
                    {{"method", std::string("linear")},
                     {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                     {"extrapolation_value", -1.0}},
                    {FT({1, 1, 1, 4}, {0, 10, 20, 30}), I64s({1, 3}), FT({0}, {}),
                     FT({8}, {0, 0, 0, 0.5, 1, 1, 1, 1.5})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(15, 30, -1));
}

// Cubic with A = -0.75 at half a pixel between 10 and 20 of a linear ramp stays on the ramp
// (the kernel reproduces linear functions away from the edges); exclude_outside renormalizes at
// the border: upsampling [0, 10, 20, 30] by 2 under align_corners keeps the end points.
TEST(ResizeTest, ReferenceCubic) {
  const Tensor ramp = FT({1, 1, 1, 4}, {0, 10, 20, 30});
  auto out = RunRef("image.resize2d",
                    {{"size", std::vector<int64_t>{1, 7}},
                     {"method", std::string("cubic")},
                     {"cubic_alpha", -0.75},
                     {"coordinate_transformation_mode", std::string("align_corners")}},
                    {ramp});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> got = Doubles((*out)[0]);
  ASSERT_EQ(got.size(), 7u);
  EXPECT_NEAR(got[0], 0, 1e-9);
  EXPECT_NEAR(got[3], 15, 1e-9);
  EXPECT_NEAR(got[6], 30, 1e-9);
  // Away from the border the four taps are all inside: a ramp stays a ramp.
  EXPECT_NEAR(got[2], 10, 1e-9);
  EXPECT_NEAR(got[4], 20, 1e-9);
}

// ---- image.roi_align -----------------------------------------------------------------------

Attrs RoiAttrs(std::string mode, std::string ctm, int64_t sampling_ratio, int64_t oh = 1,
               int64_t ow = 1) {
  return {{"mode", std::move(mode)},
          {"coordinate_transformation_mode", std::move(ctm)},
          {"sampling_ratio", sampling_ratio},
          {"output_height", oh},
          {"output_width", ow}};
}

// Tests that no input's values reach the output shape: rois computed on the device by the
// proposal stages never travel to the host for the shape function.
TEST(RoiAlignTest, MasksAreShapeOnly) {
  const OpDef* def = Op("image.roi_align");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(def->dep(i), InputDep::kShape) << i;
  EXPECT_FALSE(def->needs_values());
  EXPECT_FALSE(def->data_dependent_output_shape());
}

// Tests that the output is [R, C, output_height, output_width] with R a symbol when the roi
// count is dynamic.
TEST(RoiAlignTest, Inference) {
  EXPECT_EQ(InferStr("image.roi_align", RoiAttrs("avg", "half_pixel", 2, 7, 5),
                     {In(F32({1, 32, S("h"), S("w")})), In(F32({S("r"), 4})),
                      In(T(DType::kI64, {S("r")}))}),
            "f32[r, 32, 7, 5]");
  EXPECT_EQ(InferStr("image.roi_align", {},
                     {In(F32({2, 3, 8, 8})), In(F32({5, 4})), In(T(DType::kI32, {5}))}),
            "f32[5, 3, 1, 1]");
}

// Tests that bad ranks, dims, dtypes and attributes are errors naming the op.
TEST(RoiAlignTest, Errors) {
  const auto infer = [](const Attrs& a, Type x, Type rois, Type batch) {
    return InferStr("image.roi_align", a,
                    {In(std::move(x)), In(std::move(rois)), In(std::move(batch))});
  };
  const Type x = F32({1, 3, 8, 8}), rois = F32({2, 4}), batch = T(DType::kI64, {2});
  EXPECT_THAT(infer({}, F32({3, 8, 8}), rois, batch),
              HasSubstr("op 'image.roi_align': data must have rank 4, got rank 3"));
  EXPECT_THAT(infer({}, x, F32({8}), batch), HasSubstr("rois must have rank 2, got rank 1"));
  EXPECT_THAT(infer({}, x, F32({2, 5}), batch), HasSubstr("rois must be [R, 4], got [2, 5]"));
  EXPECT_THAT(infer({}, x, rois, T(DType::kI64, {2, 1})),
              HasSubstr("batch_indices must have rank 1, got rank 2"));
  EXPECT_THAT(infer({}, x, rois, T(DType::kI64, {3})), HasSubstr("2 rois but 3 batch_indices"));
  EXPECT_THAT(infer({}, x, rois, F32({2})), HasSubstr("batch_indices must be integers, got f32"));
  EXPECT_THAT(infer({}, x, T(DType::kI64, {2, 4}), batch),
              HasSubstr("rois must have the data's dtype f32, got i64"));
  EXPECT_THAT(infer({}, T(DType::kI64, {1, 3, 8, 8}), rois, batch),
              HasSubstr("data must be floating point, got i64"));
  EXPECT_THAT(infer({{"mode", std::string("sum")}}, x, rois, batch),
              HasSubstr("unsupported mode 'sum'"));
  EXPECT_THAT(
      infer({{"coordinate_transformation_mode", std::string("asymmetric")}}, x, rois, batch),
      HasSubstr("unsupported coordinate_transformation_mode 'asymmetric'"));
  EXPECT_THAT(infer({{"output_height", int64_t{0}}}, x, rois, batch),
              HasSubstr("output_height must be positive, got 0"));
  EXPECT_THAT(infer({{"sampling_ratio", int64_t{-1}}}, x, rois, batch),
              HasSubstr("sampling_ratio must be >= 0, got -1"));
}

// One roi over the 2x2 image [[1, 2], [3, 4]] into a single bin.
double OneBin(const Attrs& attrs, std::vector<double> roi) {
  auto out = RunRef("image.roi_align", attrs,
                    {FT({1, 1, 2, 2}, {1, 2, 3, 4}), FT({1, 4}, std::move(roi)), I64s({0})});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Doubles((*out)[0])[0] : -1;
}

// Tests the sampling rules of ONNX's reference with hand-computed single bins.
TEST(RoiAlignTest, ReferenceSampling) {
  // output_half_pixel: one sample at the roi centre (0.5, 0.5): the mean of the 4 pixels.
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "output_half_pixel", 1), {0, 0, 1, 1}), 2.5);
  // half_pixel shifts the roi by -0.5: the sample lands on pixel (0, 0).
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "half_pixel", 1), {0, 0, 1, 1}), 1);
  // output_half_pixel forces a flipped roi to 1 x 1 from its start; half_pixel keeps it
  // flipped: ceil of a negative size is no sample at all, so 0.
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "output_half_pixel", 0), {1, 1, 0, 0}), 4);
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "half_pixel", 0), {1, 1, 0, 0}), 0);
  // A sample past the last row and column is pinned to them (no interpolation): 4.
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "output_half_pixel", 1), {1, 1, 2, 2}), 4);
  // A sample beyond the image (y > H) contributes 0.
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "output_half_pixel", 1), {5, 5, 6, 6}), 0);
  // Adaptive sampling (ratio 0): a 2x2 roi in one bin takes ceil(2 / 1) = 2 samples per axis
  // at 0.5 and 1.5: 2.5, 3 (x pinned), 3.5 (y pinned), 4; their mean 3.25.
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("avg", "output_half_pixel", 0), {0, 0, 2, 2}), 3.25);
  // spatial_scale maps image coordinates to the feature map: the roi (0, 0, 4, 4) at 0.5 is
  // the 2x2 roi above.
  Attrs scaled = RoiAttrs("avg", "output_half_pixel", 0);
  scaled.Set("spatial_scale", 0.5);
  EXPECT_DOUBLE_EQ(OneBin(scaled, {0, 0, 4, 4}), 3.25);
}

// Tests ONNX's max mode: per sample the max of the four weighted corners (w * v), not of the
// interpolated values. At the centre every weight is 0.25, so the bin is 0.25 * 4 = 1, where
// a max of interpolated values would give 2.5.
TEST(RoiAlignTest, ReferenceMaxIsOverWeightedCorners) {
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("max", "output_half_pixel", 1), {0, 0, 1, 1}), 1);
  // Two samples per axis over the 2x2 roi: the pinned corner sample (4 with weight 1) wins.
  EXPECT_DOUBLE_EQ(OneBin(RoiAttrs("max", "output_half_pixel", 0), {0, 0, 2, 2}), 4);
}

// Tests that each roi reads the image its batch index names, every channel, in bins.
TEST(RoiAlignTest, ReferenceBatchChannelsAndBins) {
  // Two images of two channels, 2x2 each: image b channel c pixel p is 100 b + 10 c + p.
  std::vector<double> data;
  for (int b = 0; b < 2; ++b) {
    for (int c = 0; c < 2; ++c) {
      for (int p = 0; p < 4; ++p) data.push_back(100 * b + 10 * c + p);
    }
  }
  // One roi over the whole image of batch 1, 2x2 bins of one sample each (pixel centres).
  auto out = RunRef("image.roi_align", RoiAttrs("avg", "half_pixel", 1, 2, 2),
                    {FT({2, 2, 2, 2}, data), FT({1, 4}, {0, 0, 2, 2}), I64s({1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(100, 101, 102, 103, 110, 111, 112, 113));
}

// Tests that a batch index outside the batch (data the shape rule cannot check) is a kernel
// error naming the op and the roi, not an out-of-bounds read.
TEST(RoiAlignTest, ReferenceRejectsBadBatchIndex) {
  auto out =
      RunRef("image.roi_align", {},
             {FT({1, 1, 2, 2}, {1, 2, 3, 4}), FT({2, 4}, {0, 0, 1, 1, 0, 0, 1, 1}), I64s({0, 1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("op 'image.roi_align': batch index 1 of roi 1 is outside the batch of 1"));
}

// Tests that an empty image (H or W = 0) gives zero bins rather than reading row -1.
TEST(RoiAlignTest, ReferenceEmptyImageIsZero) {
  auto out = RunRef("image.roi_align", RoiAttrs("avg", "half_pixel", 0, 2, 2),
                    {FT({1, 2, 0, 3}, {}), FT({1, 4}, {0, 0, 1, 1}), I64s({0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ::testing::Each(0.0));
}

}  // namespace
}  // namespace hetpass::testing
