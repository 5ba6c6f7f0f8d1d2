// Tests of the GridSample, Det and MaxUnpool converters (and MaxPool's Indices output, which
// MaxUnpool consumes) on one-node models built in code: the
// registry op each emits (symbolic dims kept), and the attribute and shape errors that name the
// node instead of crashing or reaching a kernel.
#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/onnx_one_node_model.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

OneNodeModel GridSample(int64_t opset = 16) {
  OneNodeModel m(opset, "GridSample", {"x", "grid"});
  m.Input("x", {"n", "3", "h", "w"}).Input("grid", {"n", "ho", "wo", "2"});
  return m;
}

// ---- GridSample ------------------------------------------------------------------------------

// Tests that the output keeps the symbolic batch and output size and the attributes map over.
TEST(OnnxGridSample, SymbolicDimsAndAttributes) {
  OneNodeModel m = GridSample();
  m.Str("mode", "bicubic").Str("padding_mode", "reflection").Int("align_corners", 1);
  const std::string r = m.Import();
  EXPECT_THAT(r, HasSubstr("image.grid_sample(%x, %grid) {align_corners = true, mode = "
                           "\"bicubic\", padding_mode = \"reflection\"}"));
  EXPECT_THAT(r, HasSubstr("f32[n, 3, ho, wo]"));
}

TEST(OnnxGridSample, AttributeErrors) {
  OneNodeModel linear = GridSample();
  linear.Str("mode", "linear");  // GridSample-20's name, not opset 16's
  EXPECT_THAT(linear.Import(),
              AllOf(StartsWith("error INVALID_ARGUMENT"),
                    HasSubstr("mode must be bilinear, nearest or bicubic, got 'linear'")));
  OneNodeModel padding = GridSample();
  padding.Str("padding_mode", "wrap");
  EXPECT_THAT(padding.Import(),
              HasSubstr("padding_mode must be zeros, border or reflection, got 'wrap'"));
  OneNodeModel align = GridSample();
  align.Int("align_corners", 2);
  EXPECT_THAT(align.Import(), HasSubstr("align_corners must be 0 or 1, got 2"));
  EXPECT_THAT(GridSample(13).Import(), HasSubstr("GridSample is defined from opset 16"));
}

TEST(OnnxGridSample, ShapeAndTypeErrors) {
  OneNodeModel volumetric(16, "GridSample", {"x", "grid"});
  volumetric.Input("x", {"1", "1", "2", "2", "2"}).Input("grid", {"1", "2", "2", "2", "3"});
  EXPECT_THAT(volumetric.Import(), HasSubstr("X must be 4-D [N, C, H, W], got rank 5"));
  OneNodeModel ints(16, "GridSample", {"x", "grid"});
  ints.Input("x", {"1", "1", "2", "2"}, onnx::TensorProto::INT32)
      .Input("grid", {"1", "2", "2", "2"});
  EXPECT_THAT(ints.Import(),
              AllOf(StartsWith("error UNIMPLEMENTED"),
                    HasSubstr("X of dtype i32 (image.grid_sample samples f32 and f64)")));
  OneNodeModel last(16, "GridSample", {"x", "grid"});
  last.Input("x", {"1", "1", "2", "2"}).Input("grid", {"1", "2", "2", "3"});
  EXPECT_THAT(last.Import(), HasSubstr("grid must be [N, H_out, W_out, 2], got [1, 2, 2, 3]"));
}

// ---- Det ------------------------------------------------------------------------------------

TEST(OnnxDet, BatchDimsStaySymbolic) {
  OneNodeModel m(11, "Det", {"x"});
  m.Input("x", {"b", "m", "m"});
  const std::string r = m.Import();
  EXPECT_THAT(r, HasSubstr("linalg.det(%x)"));
  EXPECT_THAT(r, HasSubstr("f32[b]"));
}

TEST(OnnxDet, Errors) {
  OneNodeModel vector(11, "Det", {"x"});
  vector.Input("x", {"3"});
  EXPECT_THAT(vector.Import(), HasSubstr("X must have rank >= 2 ([*, M, M]), got 1"));
  OneNodeModel rect(11, "Det", {"x"});
  rect.Input("x", {"2", "3"});
  EXPECT_THAT(rect.Import(), HasSubstr("matrices must be square, got 2 x 3"));
  OneNodeModel ints(11, "Det", {"x"});
  ints.Input("x", {"2", "2"}, onnx::TensorProto::INT64);
  EXPECT_THAT(ints.Import(), StartsWith("error UNIMPLEMENTED"));
}

// ---- MaxUnpool ------------------------------------------------------------------------------

OneNodeModel Unpool(std::vector<std::string> inputs = {"x", "i"}) {
  OneNodeModel m(11, "MaxUnpool", std::move(inputs));
  m.Input("x", {"1", "1", "2", "2"})
      .Input("i", {"1", "1", "2", "2"}, onnx::TensorProto::INT64)
      .Ints("kernel_shape", {2, 2})
      .Ints("strides", {2, 2});
  return m;
}

// Tests the three forms: the unpooled shape, a constant output_shape (an attribute of the static
// op) and a computed one (dyn.nn.max_unpool2d, whose output_shape alone crosses to the host).
TEST(OnnxMaxUnpool, OutputShapeForms) {
  EXPECT_THAT(Unpool().Import(),
              AllOf(HasSubstr("nn.max_unpool2d(%x, %i)"), HasSubstr("f32[1, 1, 4, 4]")));
  OneNodeModel constant = Unpool({"x", "i", "s"});
  constant.Int64s("s", {1, 1, 5, 5});
  EXPECT_THAT(constant.Import(),
              AllOf(HasSubstr("output_shape = [1, 1, 5, 5]"), HasSubstr("f32[1, 1, 5, 5]")));
  OneNodeModel computed = Unpool({"x", "i", "s"});
  computed.Input("s", {"4"}, onnx::TensorProto::INT64);
  EXPECT_THAT(computed.Import(), HasSubstr("dyn.nn.max_unpool2d(%x, %i, %s)"));
}

TEST(OnnxMaxUnpool, Errors) {
  OneNodeModel no_kernel(11, "MaxUnpool", {"x", "i"});
  no_kernel.Input("x", {"1", "1", "2", "2"})
      .Input("i", {"1", "1", "2", "2"}, onnx::TensorProto::INT64);
  EXPECT_THAT(no_kernel.Import(), HasSubstr("kernel_shape must have 2 values"));
  OneNodeModel pads = Unpool();
  pads.Ints("pads", {0, -1, 0, 0});
  EXPECT_THAT(pads.Import(), HasSubstr("pads must be non-negative, got 0,-1,0,0"));
  OneNodeModel overflow(11, "MaxUnpool", {"x", "i"});
  overflow.Input("x", {"1", "1", "2", "2"})
      .Input("i", {"1", "1", "2", "2"}, onnx::TensorProto::INT64)
      .Ints("kernel_shape", {2, 2})
      .Ints("strides", {INT64_MAX, 1});
  EXPECT_THAT(overflow.Import(), AllOf(StartsWith("error INVALID_ARGUMENT"),
                                       HasSubstr("unpools to more than int64 holds")));
  OneNodeModel float_indices(11, "MaxUnpool", {"x", "i"});
  float_indices.Input("x", {"1", "1", "2", "2"})
      .Input("i", {"1", "1", "2", "2"})
      .Ints("kernel_shape", {2, 2});
  EXPECT_THAT(float_indices.Import(), HasSubstr("I must be int64, got f32"));
  OneNodeModel small = Unpool({"x", "i", "s"});
  small.Int64s("s", {1, 1, 3, 3});
  EXPECT_THAT(small.Import(), HasSubstr("output_shape [1, 1, 3, 3] is smaller than the unpooled "
                                        "shape [1, 1, 4, 4] in dim 2"));
  OneNodeModel volumetric(11, "MaxUnpool", {"x", "i"});
  volumetric.Input("x", {"1", "1", "2", "2", "2"})
      .Input("i", {"1", "1", "2", "2", "2"}, onnx::TensorProto::INT64)
      .Ints("kernel_shape", {2, 2, 2});
  EXPECT_THAT(volumetric.Import(), StartsWith("error UNIMPLEMENTED"));
}

// Tests that MaxPool's Indices output imports (with storage_order), also for 1-D pooling, where
// both results lose the unit height again.
TEST(OnnxMaxUnpool, MaxPoolIndicesOutput) {
  OneNodeModel m(11, "MaxPool", {"x"}, {"y", "i"});
  m.Input("x", {"n", "2", "4", "4"}).Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2});
  m.Int("storage_order", 1);
  const std::string r = m.Import();
  EXPECT_THAT(r, HasSubstr("nn.max_pool2d_with_indices(%x)"));
  EXPECT_THAT(r, HasSubstr("storage_order = 1"));
  EXPECT_THAT(r, HasSubstr(": f32[n, 2, 2, 2], i64[n, 2, 2, 2]"));
  OneNodeModel one_d(11, "MaxPool", {"x"}, {"y", "i"});
  one_d.Input("x", {"1", "2", "6"}).Ints("kernel_shape", {3}).Ints("strides", {3});
  EXPECT_THAT(one_d.Import(), HasSubstr("-> f32[1, 2, 2], i64[1, 2, 2]"));
  OneNodeModel bad(11, "MaxPool", {"x"}, {"y", "i"});
  bad.Input("x", {"1", "2", "4", "4"}).Ints("kernel_shape", {2, 2}).Int("storage_order", 2);
  EXPECT_THAT(bad.Import(), HasSubstr("storage_order must be 0 or 1, got 2"));
}

}  // namespace
}  // namespace hetpass
