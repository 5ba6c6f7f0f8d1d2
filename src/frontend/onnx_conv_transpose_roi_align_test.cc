// Tests of the ONNX ConvTranspose and RoiAlign converters (Mask R-CNN's mask head and roi
// pooling): small ModelProtos built in code, checked against the printed IR, and their error
// cases. ONNX's own node tests for both ops run in the onnx.conformance ctest.
#include <cctype>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/printer.h"
#include "support/onnx_one_node_model.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;
using ::hetpass::testing::OneNodeModel;
using ::testing::Not;

OneNodeModel ConvT(int64_t opset = 11) { return OneNodeModel(opset, "ConvTranspose", {"x", "w"}); }

// ---- ConvTranspose ---------------------------------------------------------------------------

// Tests that the mask head's 2x2 stride-2 ConvTranspose with a bias imports as
// nn.conv2d_transpose + nn.bias_add on the channel axis, keeping the roi count symbolic.
TEST(OnnxConvTranspose, MaskHeadWithBias) {
  OneNodeModel m(11, "ConvTranspose", {"x", "w", "b"});
  m.Input("x", {"rois", "32", "14", "14"}).Init("w", {32, 4, 2, 2}).Init("b", {4});
  m.Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2}).Ints("pads", {0, 0, 0, 0});
  const std::string ir = m.Import();
  EXPECT_THAT(ir, HasSubstr("nn.conv2d_transpose(%x, %w) {padding = [0, 0, 0, 0], strides = "
                            "[2, 2]} : f32[rois, 4, 28, 28] loc(\"node_7\")"));
  EXPECT_THAT(ir, HasSubstr("nn.bias_add(%0, %b) : f32[rois, 4, 28, 28]"));
}

// Tests that SAME_UPPER needs no input size: its total padding (k - stride here: 1) puts the
// odd unit at the end, and the output stays input * stride for a dynamic image.
TEST(OnnxConvTranspose, SameUpperKeepsDynamicSizes) {
  auto m = ConvT();
  m.Input("x", {"1", "1", "h", "w"}).Init("w", {1, 2, 3, 3});
  m.Str("auto_pad", "SAME_UPPER").Ints("strides", {2, 2});
  EXPECT_THAT(m.Import(),
              HasSubstr("{padding = [0, 0, 1, 1], strides = [2, 2]} : f32[1, 2, h*2, w*2]"));
  auto lower = ConvT();
  lower.Input("x", {"1", "1", "h", "w"}).Init("w", {1, 2, 3, 3});
  lower.Str("auto_pad", "SAME_LOWER").Ints("strides", {2, 2});
  EXPECT_THAT(lower.Import(),
              HasSubstr("{padding = [1, 1, 0, 0], strides = [2, 2]} : f32[1, 2, h*2, w*2]"));
}

// Tests output_shape: it overrides pads; a size longer than the kernels reach becomes
// output_padding (a zero far end, as ONNX's test_convtranspose_output_shape expects), a
// shorter one padding split with the odd unit at the start (NOTSET).
TEST(OnnxConvTranspose, OutputShape) {
  auto longer = ConvT();
  longer.Input("x", {"1", "1", "3", "3"}).Init("w", {1, 2, 3, 3});
  longer.Ints("strides", {3, 2}).Ints("output_shape", {10, 8}).Ints("pads", {5, 5, 5, 5});
  EXPECT_THAT(longer.Import(), HasSubstr("{output_padding = [1, 1], padding = [0, 0, 0, 0], "
                                         "strides = [3, 2]} : f32[1, 2, 10, 8]"));
  auto shorter = ConvT();
  shorter.Input("x", {"1", "1", "3", "3"}).Init("w", {1, 2, 3, 3});
  // The kernels reach 5 x 5; asked 3 x 4: total 2 -> (1 begin, 1 end), total 1 -> (1, 0).
  shorter.Ints("output_shape", {1, 2, 3, 4});  // a full [N, C, H, W] shape is accepted too
  EXPECT_THAT(shorter.Import(), HasSubstr("{padding = [1, 1, 1, 0]} : f32[1, 2, 3, 4]"));
}

// Tests that 1-D runs as 2-D with a unit height (expand_dims / squeeze around the op).
TEST(OnnxConvTranspose, OneDimensional) {
  auto m = ConvT();
  m.Input("x", {"n", "1", "3"}).Init("w", {1, 2, 3});
  m.Ints("strides", {2}).Ints("pads", {1, 0});
  const std::string ir = m.Import();
  EXPECT_THAT(ir, HasSubstr("expand_dims(%x) {axis = 2} : f32[n, 1, 1, 3]"));
  EXPECT_THAT(ir, HasSubstr("nn.conv2d_transpose(%0, %1) {padding = [0, 1, 0, 0], strides = "
                            "[1, 2]} : f32[n, 2, 1, 6]"));
  EXPECT_THAT(ir, HasSubstr("squeeze(%2) {axis = [2]} : f32[n, 2, 6]"));
}

// Tests that 3-D is a clear Unimplemented naming the node, and that malformed nodes are
// InvalidArgument errors naming the node (and the registry op for shape errors).
TEST(OnnxConvTranspose, Errors) {
  auto three_d = ConvT();
  three_d.Input("x", {"1", "1", "3", "4", "5"}).Init("w", {1, 2, 3, 3, 3});
  EXPECT_THAT(three_d.Import(),
              HasSubstr("ConvTranspose 'node_7' (opset 11): 3-D transposed convolution (only "
                        "1-D and 2-D are supported)"));
  EXPECT_THAT(three_d.Import(), HasSubstr("error UNIMPLEMENTED"));

  auto channels = ConvT();
  channels.Input("x", {"1", "3", "4", "4"}).Init("w", {2, 2, 3, 3});
  EXPECT_THAT(channels.Import(),
              HasSubstr("error INVALID_ARGUMENT: model.onnx: ConvTranspose 'node_7' (opset 11): op "
                        "'nn.conv2d_transpose': data has 3 channels"));

  auto kernel = ConvT();
  kernel.Input("x", {"1", "1", "4", "4"}).Init("w", {1, 2, 3, 3}).Ints("kernel_shape", {2, 2});
  EXPECT_THAT(kernel.Import(), HasSubstr("kernel_shape 2x2 does not match W's spatial dims"));

  auto strides = ConvT();
  strides.Input("x", {"1", "1", "4", "4"}).Init("w", {1, 2, 3, 3}).Ints("strides", {2, 2, 2});
  EXPECT_THAT(strides.Import(), HasSubstr("strides must have 2 values for 2-D input, got 3"));

  auto auto_pad = ConvT();
  auto_pad.Input("x", {"1", "1", "4", "4"}).Init("w", {1, 2, 3, 3}).Str("auto_pad", "SAME");
  EXPECT_THAT(auto_pad.Import(), HasSubstr("unknown auto_pad 'SAME'"));

  auto rank = ConvT();
  rank.Input("x", {"1", "1", "4", "4"}).Init("w", {1, 2, 3});
  EXPECT_THAT(rank.Import(), HasSubstr("W must have the rank of X (4), got 3"));

  // output_shape needs the input size to compute pads; a dynamic one is refused clearly.
  auto dynamic = ConvT();
  dynamic.Input("x", {"1", "1", "h", "4"}).Init("w", {1, 2, 3, 3}).Ints("output_shape", {9, 9});
  EXPECT_THAT(dynamic.Import(), HasSubstr("error UNIMPLEMENTED"));
  EXPECT_THAT(dynamic.Import(), HasSubstr("output_shape with a dynamic input size"));
}

// ---- RoiAlign --------------------------------------------------------------------------------

OneNodeModel Roi(int64_t opset) {
  OneNodeModel m(opset, "RoiAlign", {"x", "rois", "idx"});
  m.Input("x", {"1", "32", "h", "w"}).Input("rois", {"r", "4"});
  m.Input("idx", {"r"}, onnx::TensorProto::INT64);
  m.Int("output_height", 14).Int("output_width", 14).Int("sampling_ratio", 2);
  return m;
}

// Tests that RoiAlign-10 (opsets 10-15, no attribute) is output_half_pixel and keeps the roi
// count symbolic, as the opset-11 maskrcnn_tiny export needs.
TEST(OnnxRoiAlign, Opset11IsOutputHalfPixel) {
  EXPECT_THAT(Roi(11).Import(),
              HasSubstr("image.roi_align(%x, %rois, %idx) {coordinate_transformation_mode = "
                        "\"output_half_pixel\", output_height = 14, output_width = 14, "
                        "sampling_ratio = 2} : f32[r, 32, 14, 14]"));
}

// Tests that RoiAlign-16 defaults to half_pixel and honours the attribute.
TEST(OnnxRoiAlign, Opset16DefaultsToHalfPixel) {
  const std::string ir = Roi(16).Import();
  EXPECT_THAT(ir, HasSubstr("image.roi_align(%x, %rois, %idx) {output_height"));
  EXPECT_THAT(ir, Not(HasSubstr("coordinate_transformation_mode")));  // the registry default
  auto m = Roi(16);
  m.Str("coordinate_transformation_mode", "output_half_pixel").Str("mode", "max");
  EXPECT_THAT(m.Import(), HasSubstr("{coordinate_transformation_mode = \"output_half_pixel\", "
                                    "mode = \"max\""));
}

// Tests that attributes the opset lacks, bad values and bad inputs are errors naming the node.
TEST(OnnxRoiAlign, Errors) {
  auto early = Roi(11);
  early.Str("coordinate_transformation_mode", "half_pixel");
  EXPECT_THAT(early.Import(),
              HasSubstr("RoiAlign 'node_7' (opset 11): coordinate_transformation_mode is an "
                        "attribute of RoiAlign-16"));
  auto mode = Roi(16);
  mode.Str("mode", "sum");
  EXPECT_THAT(mode.Import(), HasSubstr("op 'image.roi_align': unsupported mode 'sum'"));
  OneNodeModel rank(16, "RoiAlign", {"x", "rois", "idx"});
  rank.Input("x", {"32", "8", "8"}).Input("rois", {"r", "4"});
  rank.Input("idx", {"r"}, onnx::TensorProto::INT64);
  EXPECT_THAT(rank.Import(), HasSubstr("data must have rank 4, got rank 3"));
  OneNodeModel missing(16, "RoiAlign", {"x", "rois"});
  missing.Input("x", {"1", "32", "8", "8"}).Input("rois", {"r", "4"});
  EXPECT_THAT(missing.Import(), HasSubstr("input 2 is required"));
}

}  // namespace
}  // namespace hetpass
