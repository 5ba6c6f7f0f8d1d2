// Tests of the ONNX converters' Resize forms (which registry op each form of scales, sizes and
// roi becomes), of the older op versions the importer converts (Scatter-9, Upsample-9,
// ReduceLogSum-1, ConvTranspose-1 without output_shape / SAME padding) and of
// BatchNormalization in training mode. The node tests (onnx.conformance) check the values.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/onnx_one_node_model.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::testing::HasSubstr;
using ::testing::Not;

// Constant scales on symbolic spatial dims (torch's interpolate(scale_factor=2) exported with
// dynamic axes): integral scales multiply shape_of on the host and keep the native-kernel op.
TEST(OnnxResize, IntegralScalesOnSymbolicDims) {
  OneNodeModel m(13, "Resize", {"x", "", "scales"});
  m.Input("x", {"n", "3", "h", "w"}).Floats("scales", {4}, {1, 1, 2, 2});
  const std::string ir = m.Import();
  EXPECT_THAT(ir, HasSubstr("dyn.image.resize2d(%x"));
  EXPECT_THAT(ir, HasSubstr("f32[n, 3, h*2, w*2]"));
  EXPECT_THAT(ir, Not(HasSubstr("resize2d_scaled")));
}

// Fractional scales transform coordinates with the scale itself (ONNX), which only the scaled
// op does; on static dims its output shape is still static.
TEST(OnnxResize, FractionalScalesUseTheScaledOp) {
  OneNodeModel m(13, "Resize", {"x", "", "scales"});
  m.Input("x", {"1", "1", "2", "4"}).Floats("scales", {4}, {1, 1, 0.6f, 0.6f}).Str("mode", "linear");
  const std::string ir = m.Import();
  EXPECT_THAT(ir, HasSubstr("dyn.image.resize2d_scaled(%x"));
  EXPECT_THAT(ir, HasSubstr("-> f32[1, 1, 1, 2]"));
}

TEST(OnnxResize, CubicAndCropAndResizeImport) {
  OneNodeModel cubic(13, "Resize", {"x", "", "", "sizes"});
  cubic.Input("x", {"1", "1", "4", "4"}).Int64s("sizes", {1, 1, 3, 3}).Str("mode", "cubic");
  EXPECT_THAT(cubic.Import(), HasSubstr("method = \"cubic\""));
  OneNodeModel crop(13, "Resize", {"x", "roi", "", "sizes"});
  crop.Input("x", {"1", "1", "4", "4"})
      .Input("roi", {"8"})
      .Int64s("sizes", {1, 1, 3, 3})
      .Str("coordinate_transformation_mode", "tf_crop_and_resize");
  EXPECT_THAT(crop.Import(), HasSubstr("dyn.image.resize2d_scaled(%x"));
  OneNodeModel no_roi(13, "Resize", {"x", "", "", "sizes"});
  no_roi.Input("x", {"1", "1", "4", "4"})
      .Int64s("sizes", {1, 1, 3, 3})
      .Str("coordinate_transformation_mode", "tf_crop_and_resize");
  EXPECT_THAT(no_roi.Import(), HasSubstr("tf_crop_and_resize needs a roi"));
  OneNodeModel both(13, "Resize", {"x", "", "scales", "sizes"});
  both.Input("x", {"1", "1", "4", "4"}).Floats("scales", {4}, {1, 1, 2, 2}).Int64s("sizes", {1, 1, 3, 3});
  EXPECT_THAT(both.Import(), HasSubstr("needs exactly one of scales and sizes"));
  OneNodeModel batch(13, "Resize", {"x", "", "scales"});
  batch.Input("x", {"1", "1", "4", "4"}).Floats("scales", {4}, {2, 1, 2, 2});
  EXPECT_THAT(batch.Import(), HasSubstr("scales of N and C other than 1"));
}

// Upsample-9 is Resize with the asymmetric transformation and floor rounding; Upsample-7 (scales
// an attribute) is refused by name.
TEST(OnnxVersions, UpsampleNine) {
  OneNodeModel m(9, "Upsample", {"x", "scales"});
  m.Input("x", {"1", "1", "2", "2"}).Floats("scales", {4}, {1, 1, 2, 3});
  const std::string ir = m.Import();
  EXPECT_THAT(ir, HasSubstr("coordinate_transformation_mode = \"asymmetric\""));
  EXPECT_THAT(ir, HasSubstr("rounding_method = \"floor\""));
  EXPECT_THAT(ir, HasSubstr("-> f32[1, 1, 4, 6]"));
  OneNodeModel seven(7, "Upsample", {"x"});
  seven.Input("x", {"1", "1", "2", "2"}).FloatList("scales", {1, 1, 2, 2});
  EXPECT_THAT(seven.Import(), HasSubstr("Upsample-7"));
}

// Older versions the converters read are imported; ConvTranspose-1's output_shape (split
// differently from ConvTranspose-11) is refused by name.
TEST(OnnxVersions, OlderVersionsTheConvertersRead) {
  OneNodeModel scatter(10, "Scatter", {"x", "i", "u"});
  scatter.Input("x", {"3", "3"}).Input("i", {"1", "2"}, onnx::TensorProto::INT64).Input("u", {"1", "2"});
  EXPECT_THAT(scatter.Import(), HasSubstr("scatter_elements"));
  OneNodeModel log_sum(6, "ReduceLogSum", {"x"});
  log_sum.Input("x", {"3", "4"}).Ints("axes", {1});
  EXPECT_THAT(log_sum.Import(), HasSubstr("-> f32[3, 1]"));
  // An odd total padding (stride 1: (3 - 1) + 3 - 4 = 1 per axis) splits differently in
  // ConvTranspose-1.
  OneNodeModel ct(8, "ConvTranspose", {"x", "w"});
  ct.Input("x", {"1", "1", "3", "3"}).Input("w", {"1", "2", "3", "3"}).Ints("output_shape", {4, 4});
  EXPECT_THAT(ct.Import(), HasSubstr("ConvTranspose-1's output_shape"));
  OneNodeModel longer(8, "ConvTranspose", {"x", "w"});
  longer.Input("x", {"1", "1", "3", "3"}).Input("w", {"1", "2", "3", "3"}).Ints("output_shape", {10, 8});
  EXPECT_THAT(longer.Import(), HasSubstr("-> f32[1, 2, 10, 8]"));
  OneNodeModel plain(8, "ConvTranspose", {"x", "w"});
  plain.Input("x", {"1", "1", "3", "3"}).Input("w", {"1", "2", "3", "3"});
  EXPECT_THAT(plain.Import(), HasSubstr("-> f32[1, 2, 5, 5]"));
  // An older version no converter reads is still named.
  OneNodeModel scan(9, "Scan", {"x"});
  scan.Input("x", {"2"});
  EXPECT_THAT(scan.Import(), HasSubstr("error"));
}

// BatchNormalization training mode: batch statistics over every axis but 1, three outputs of
// the right types with a symbolic batch.
TEST(OnnxBatchNorm, TrainingModeOutputs) {
  OneNodeModel m(15, "BatchNormalization", {"x", "s", "b", "mean", "var"},
                 {"y", "running_mean", "running_var"});
  m.Input("x", {"n", "3", "4", "4"})
      .Input("s", {"3"})
      .Input("b", {"3"})
      .Input("mean", {"3"})
      .Input("var", {"3"})
      .Int("training_mode", 1);
  const std::string ir = m.Import();
  EXPECT_THAT(ir, HasSubstr("-> f32[n, 3, 4, 4], f32[3], f32[3]"));
  EXPECT_THAT(ir, HasSubstr("mean(%x) {axis = [0, 2, 3], keepdims = true"));
}

}  // namespace
}  // namespace hetpass
