// Tests of the quantization converters (onnx_convert_quant.cc) on what ONNX's node tests leave
// out: ties rounded to even, saturation at both ends of uint8 and int8 (infinities included),
// per-axis parameters on negative axes, per-row / per-column zero points of MatMulInteger, a
// dequantized difference that does not fit the input dtype, and the errors for parameters
// that do not fit x. Each model is one node (test/support/onnx_one_node_model.h), imported,
// compiled and run on cpu and sim.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/onnx_one_node_model.h"
#include "support/onnx_one_node_run.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::hetpass::testing::OneNodeOutput;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kU8 = onnx::TensorProto::UINT8;
constexpr int kI8 = onnx::TensorProto::INT8;
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor Vec(DType dt, std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromDoubles(dt, {n}, std::move(v));
}

// QuantizeLinear of x [6] by a scalar scale and zero point of element type `zp_type`.
OneNodeModel Quantize6(int zp_type) {
  OneNodeModel m(13, "QuantizeLinear", {"x", "s", "zp"});
  m.Input("x", {"6"}).Input("s", {}).Input("zp", {}, zp_type);
  return m;
}

// Tests that exact halves round to the even neighbour, on both signs, before the (odd) zero
// point is added: 2.5 with zero point 11 is 2 + 11 = 13, where rounding 13.5 would give 14.
TEST(OnnxQuant, QuantizeRoundsHalvesToEven) {
  const Tensor x = Vec(DType::kF32, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5});
  EXPECT_THAT(OneNodeOutput(Quantize6(kI8), {x, Tensor::Scalar(DType::kF32, 1), Tensor::Scalar(DType::kI8, 0)},
                     DType::kI8),
              ElementsAreArray({0, 2, 2, 0, -2, -2}));
  // x / 2 gives 2.5 and 3.5 from 5 and 7.
  const Tensor y = Vec(DType::kF32, {5, 7, 1, 3, 9, 11});
  EXPECT_THAT(OneNodeOutput(Quantize6(kU8), {y, Tensor::Scalar(DType::kF32, 2), Tensor::Scalar(DType::kU8, 11)},
                     DType::kU8),
              ElementsAreArray({13, 15, 11, 13, 15, 17}));
}

// Tests saturation at both ends of uint8 (with a zero point of 128) and int8, infinities
// included: one step past each end is clamped, the ends themselves are kept.
TEST(OnnxQuant, QuantizeSaturatesAtBothEnds) {
  const Tensor x = Vec(DType::kF32, {-kInf, -129, -128, 127, 128, kInf});
  EXPECT_THAT(OneNodeOutput(Quantize6(kU8), {x, Tensor::Scalar(DType::kF32, 1), Tensor::Scalar(DType::kU8, 128)},
                     DType::kU8),
              ElementsAreArray({0, 0, 0, 255, 255, 255}));
  const Tensor big = Vec(DType::kF32, {-1e30, -129, -128, 127, 128, 1e30});
  EXPECT_THAT(OneNodeOutput(Quantize6(kI8), {big, Tensor::Scalar(DType::kF32, 1), Tensor::Scalar(DType::kI8, 0)},
                     DType::kI8),
              ElementsAreArray({-128, -128, -128, 127, 127, 127}));
}

// Tests that without a zero point the output is uint8 with zero point 0.
TEST(OnnxQuant, QuantizeWithoutZeroPointIsUint8) {
  OneNodeModel m(13, "QuantizeLinear", {"x", "s"});
  m.Input("x", {"3"}).Input("s", {});
  EXPECT_THAT(OneNodeOutput(m, {Vec(DType::kF32, {-3, 7, 1000}), Tensor::Scalar(DType::kF32, 0.5)},
                     DType::kU8),
              ElementsAreArray({0, 14, 255}));
}

// Tests per-axis scales and zero points on a negative axis: axis -1 of [2, 3] lays a [3]
// parameter along the columns, axis -2 a [2] one along the rows.
TEST(OnnxQuant, QuantizePerAxisNegativeAxis) {
  OneNodeModel cols(13, "QuantizeLinear", {"x", "s", "zp"});
  cols.Input("x", {"2", "3"}).Input("s", {"3"}).Input("zp", {"3"}, kU8).Int("axis", -1);
  const Tensor x = Tensor::FromDoubles(DType::kF32, {2, 3}, {8, 8, 8, -4, 4, 40});
  EXPECT_THAT(OneNodeOutput(cols, {x, Vec(DType::kF32, {1, 2, 4}), Vec(DType::kU8, {0, 10, 20})},
                     DType::kU8),
              ElementsAreArray({8, 14, 22, 0, 12, 30}));
  OneNodeModel rows(13, "QuantizeLinear", {"x", "s", "zp"});
  rows.Input("x", {"2", "3"}).Input("s", {"2"}).Input("zp", {"2"}, kI8).Int("axis", -2);
  EXPECT_THAT(OneNodeOutput(rows, {x, Vec(DType::kF32, {1, 4}), Vec(DType::kI8, {-1, 100})}, DType::kI8),
              ElementsAreArray({7, 7, 7, 99, 101, 110}));
}

// Tests that the dequantized difference is formed wider than int8: -128 - 1 is -129, which
// int8 arithmetic would wrap to 127.
TEST(OnnxQuant, DequantizePerAxisSubtractsWide) {
  OneNodeModel m(13, "DequantizeLinear", {"x", "s", "zp"});
  m.Input("x", {"2", "2"}, kI8).Input("s", {"2"}).Input("zp", {"2"}, kI8).Int("axis", 0);
  const Tensor x = Tensor::FromDoubles(DType::kI8, {2, 2}, {-128, 127, 0, 5});
  EXPECT_THAT(OneNodeOutput(m, {x, Vec(DType::kF32, {0.5, 2}), Vec(DType::kI8, {1, -3})}, DType::kF32),
              ElementsAreArray(std::vector<double>{-64.5, 63, 6, 16}));
}

// Tests MatMulInteger with a per-row zero point of a ([M]) and a per-column one of b ([N]),
// against the sum written out; uint8 extremes so each product is 255 * 255.
TEST(OnnxQuant, MatMulIntegerPerRowAndColumnZeroPoints) {
  OneNodeModel m(10, "MatMulInteger", {"a", "b", "azp", "bzp"});
  m.Input("a", {"2", "3"}, kU8).Input("b", {"3", "2"}, kU8);
  m.Input("azp", {"2"}, kU8).Input("bzp", {"2"}, kU8);
  const std::vector<double> a = {255, 0, 7, 1, 2, 3}, b = {255, 0, 0, 255, 9, 4};
  const std::vector<double> azp = {0, 255}, bzp = {0, 255};
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += (a[i * 3 + k] - azp[i]) * (b[k * 2 + j] - bzp[j]);
      want.push_back(acc);
    }
  }
  EXPECT_THAT(OneNodeOutput(m,
                     {Tensor::FromDoubles(DType::kU8, {2, 3}, a),
                      Tensor::FromDoubles(DType::kU8, {3, 2}, b), Vec(DType::kU8, azp),
                      Vec(DType::kU8, bzp)},
                     DType::kI32),
              ElementsAreArray(want));
}

// Tests QLinearConv with a per-output-channel w scale and zero point: channel m of the output
// (dim 1, not the last dim) is scaled by w_scale[m], and the requantized ties round to even
// (10.5 -> 10, 11.5 -> 12).
TEST(OnnxQuant, QLinearConvPerChannelScale) {
  OneNodeModel m(10, "QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp"});
  m.Input("x", {"1", "1", "2", "2"}, kU8).Input("xs", {}).Input("xzp", {}, kU8);
  m.Input("w", {"2", "1", "1", "1"}, kU8).Input("ws", {"2"}).Input("wzp", {"2"}, kU8);
  m.Input("ys", {}).Input("yzp", {}, kU8);
  const std::vector<Tensor> in = {
      Tensor::FromDoubles(DType::kU8, {1, 1, 2, 2}, {1, 2, 3, 4}), Tensor::Scalar(DType::kF32, 1),
      Tensor::Scalar(DType::kU8, 0), Tensor::FromDoubles(DType::kU8, {2, 1, 1, 1}, {2, 3}),
      Vec(DType::kF32, {0.5, 2}), Vec(DType::kU8, {1, 0}), Tensor::Scalar(DType::kF32, 1),
      Tensor::Scalar(DType::kU8, 10)};
  // Channel 0: x * (2 - 1) * 0.5 + 10; channel 1: x * 3 * 2 + 10.
  EXPECT_THAT(OneNodeOutput(m, in, DType::kU8), ElementsAreArray({10, 11, 12, 12, 16, 22, 28, 34}));
}

// ---- errors ---------------------------------------------------------------------------------

// Tests that a per-axis scale whose length is not the axis's is an error naming both.
TEST(OnnxQuant, ScaleOfWrongLengthIsAnError) {
  OneNodeModel m(13, "QuantizeLinear", {"x", "s", "zp"});
  m.Input("x", {"2", "3"}).Input("s", {"4"}).Input("zp", {"4"}, kU8);
  const std::string r = m.Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("QuantizeLinear 'node_7'"));
  EXPECT_THAT(r, HasSubstr("y_scale has 4 elements but axis 1 of x has 3"));
  OneNodeModel d(13, "DequantizeLinear", {"x", "s"});
  d.Input("x", {"2", "3"}, kU8).Input("s", {"2"}).Int("axis", -1);
  EXPECT_THAT(d.Import(), HasSubstr("x_scale has 2 elements but axis -1 of x has 3"));
}

// Tests that an axis outside x's rank is an error, for either sign.
TEST(OnnxQuant, AxisOutOfRangeIsAnError) {
  for (int64_t axis : {int64_t{2}, int64_t{-3}, INT64_MIN}) {
    OneNodeModel m(13, "QuantizeLinear", {"x", "s"});
    m.Input("x", {"2", "3"}).Input("s", {"3"}).Int("axis", axis);
    const std::string r = m.Import();
    EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
    EXPECT_THAT(r, HasSubstr(absl::StrCat("axis ", axis, " is out of range for x of rank 2")));
  }
}

// Tests that scale and zero point of different shapes, a quantized dtype other than 8-bit and
// a blocked (rank-2) scale are refused, each naming what is wrong.
TEST(OnnxQuant, UnusableParametersAreRefused) {
  OneNodeModel shapes(13, "QuantizeLinear", {"x", "s", "zp"});
  shapes.Input("x", {"2", "3"}).Input("s", {"3"}).Input("zp", {}, kU8);
  EXPECT_THAT(shapes.Import(), HasSubstr("y scale f32[3] and zero point u8[] must have the same shape"));
  OneNodeModel dtype(13, "QuantizeLinear", {"x", "s", "zp"});
  dtype.Input("x", {"3"}).Input("s", {}).Input("zp", {}, onnx::TensorProto::INT32);
  EXPECT_THAT(dtype.Import(), StartsWith("error UNIMPLEMENTED"));
  EXPECT_THAT(dtype.Import(), HasSubstr("the quantized dtype must be uint8 or int8, got i32"));
  OneNodeModel blocked(13, "DequantizeLinear", {"x", "s"});
  blocked.Input("x", {"2", "4"}, kU8).Input("s", {"2", "2"});
  EXPECT_THAT(blocked.Import(), HasSubstr("blocked quantization is not supported"));
}

// Tests that ConvInteger / QLinearConv refuse a w parameter that is not one per output
// channel, and a per-channel x zero point.
TEST(OnnxQuant, ConvParametersMustMatchOutputChannels) {
  OneNodeModel w(10, "ConvInteger", {"x", "w", "xzp", "wzp"});
  w.Input("x", {"1", "1", "3", "3"}, kU8).Input("w", {"2", "1", "2", "2"}, kU8);
  w.Input("xzp", {}, kU8).Input("wzp", {"3"}, kU8);
  EXPECT_THAT(w.Import(), HasSubstr("w_zero_point has 3 elements but w has 2 output channels"));
  OneNodeModel x(10, "ConvInteger", {"x", "w", "xzp"});
  x.Input("x", {"1", "2", "3", "3"}, kU8).Input("w", {"2", "2", "2", "2"}, kU8);
  x.Input("xzp", {"2"}, kU8);
  EXPECT_THAT(x.Import(), HasSubstr("x_zero_point must be per-tensor"));
}

// Tests that the QLinear ops refuse a scale whose shape differs from its zero point's, a w
// scale that is not one per output channel, and scales that are not float32.
TEST(OnnxQuant, QLinearParametersAreChecked) {
  OneNodeModel mm(10, "QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"});
  mm.Input("a", {"2", "3"}, kU8).Input("as", {"2"}).Input("azp", {"3"}, kU8);
  mm.Input("b", {"3", "2"}, kU8).Input("bs", {}).Input("bzp", {}, kU8);
  mm.Input("ys", {}).Input("yzp", {}, kU8);
  EXPECT_THAT(mm.Import(), HasSubstr("a scale f32[2] and zero point u8[3] must have the same shape"));
  OneNodeModel conv(10, "QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp"});
  conv.Input("x", {"1", "1", "3", "3"}, kU8).Input("xs", {}).Input("xzp", {}, kU8);
  conv.Input("w", {"2", "1", "2", "2"}, kU8).Input("ws", {"4"}).Input("wzp", {"4"}, kU8);
  conv.Input("ys", {}).Input("yzp", {}, kU8);
  EXPECT_THAT(conv.Import(), HasSubstr("w_scale has 4 elements but w has 2 output channels"));
  OneNodeModel f64(10, "QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"});
  f64.Input("a", {"2", "3"}, kU8).Input("as", {}, onnx::TensorProto::DOUBLE).Input("azp", {}, kU8);
  f64.Input("b", {"3", "2"}, kU8).Input("bs", {}).Input("bzp", {}, kU8);
  f64.Input("ys", {}).Input("yzp", {}, kU8);
  EXPECT_THAT(f64.Import(), HasSubstr("scales must be float32, got f64"));
}

}  // namespace
}  // namespace hetpass
