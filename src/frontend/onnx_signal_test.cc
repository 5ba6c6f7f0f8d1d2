// Tests of the signal converters (onnx_convert_signal.cc) on what ONNX's node tests leave out:
// DFTs whose dft_length truncates or zero-pads the signal, onesided outputs, the inverse along
// a negative axis that is not the last signal dim, an STFT whose signal is shorter than one
// frame, and the errors for unusable axes, lengths and windows. Values are checked against
// the transform written out in double here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/onnx_one_node_model.h"
#include "support/onnx_one_node_run.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::hetpass::testing::OneNodeOutput;
using ::hetpass::testing::RunOneNode;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// x [d0, d1, parts] with values that differ everywhere (so a wrong index shows).
std::vector<double> Ramp(int64_t count) {
  std::vector<double> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(std::sin(0.7 * i) + 0.1 * i);
  return v;
}

// The DFT of x [d0, d1, parts] along `axis` (0 or 1) by its definition: length `len` (samples
// past it dropped, missing ones zero), `k_count` outputs, the inverse scaled by 1 / len. The
// result is [K, d1, 2] or [d0, K, 2].
std::vector<double> NaiveDft(const std::vector<double>& x, int64_t d0, int64_t d1, int64_t parts,
                             int axis, int64_t len, int64_t k_count, bool inverse) {
  const int64_t n_in = axis == 0 ? d0 : d1, others = axis == 0 ? d1 : d0;
  const int64_t o0 = axis == 0 ? k_count : d0, o1 = axis == 0 ? d1 : k_count;
  std::vector<double> out(o0 * o1 * 2);
  const double sign = inverse ? 1 : -1;
  for (int64_t o = 0; o < others; ++o) {
    for (int64_t k = 0; k < k_count; ++k) {
      double re = 0, im = 0;
      for (int64_t n = 0; n < std::min(n_in, len); ++n) {
        const int64_t at = (axis == 0 ? n * d1 + o : o * d1 + n) * parts;
        const double xr = x[at], xi = parts == 2 ? x[at + 1] : 0;
        const double t = sign * 2 * std::numbers::pi * static_cast<double>(k * n) / len;
        re += xr * std::cos(t) - xi * std::sin(t);
        im += xr * std::sin(t) + xi * std::cos(t);
      }
      if (inverse) re /= len, im /= len;
      const int64_t at = axis == 0 ? k * o1 + o : o * o1 + k;
      out[at * 2] = re;
      out[at * 2 + 1] = im;
    }
  }
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

// A DFT-17 node on x [d0, d1, parts] with a constant dft_length (or none when len < 0).
OneNodeModel DftModel(int64_t d0, int64_t d1, int64_t parts, int64_t axis, int64_t len,
                      bool onesided, bool inverse) {
  OneNodeModel m(17, "DFT", len < 0 ? std::vector<std::string>{"x"}
                                    : std::vector<std::string>{"x", "len"});
  m.Input("x", {std::to_string(d0), std::to_string(d1), std::to_string(parts)});
  if (len >= 0) m.Int64("len", len);
  m.Int("axis", axis).Int("onesided", onesided).Int("inverse", inverse);
  return m;
}

// Tests that a dft_length shorter than the signal drops the samples past it (complex input).
TEST(OnnxSignal, DftLengthTruncates) {
  const std::vector<double> x = Ramp(1 * 6 * 2);
  const Tensor xt = Tensor::FromDoubles(DType::kF32, {1, 6, 2}, x);
  ExpectNear(OneNodeOutput(DftModel(1, 6, 2, 1, 4, false, false), {xt}, DType::kF32),
             NaiveDft(x, 1, 6, 2, 1, 4, 4, false));
}

// Tests that a dft_length longer than the signal zero-pads it, with the onesided L / 2 + 1
// outputs of a real input.
TEST(OnnxSignal, DftLengthPadsOnesided) {
  const std::vector<double> x = Ramp(2 * 5);
  const Tensor xt = Tensor::FromDoubles(DType::kF32, {2, 5, 1}, x);
  ExpectNear(OneNodeOutput(DftModel(2, 5, 1, 1, 9, true, false), {xt}, DType::kF32),
             NaiveDft(x, 2, 5, 1, 1, 9, 5, false));
}

// Tests the inverse along axis -3 (dim 0 of [4, 3, 2]): the transformed axis moves last and
// back, and the result is scaled by 1 / L.
TEST(OnnxSignal, InverseAlongNegativeLeadingAxis) {
  const std::vector<double> x = Ramp(4 * 3 * 2);
  const Tensor xt = Tensor::FromDoubles(DType::kF32, {4, 3, 2}, x);
  ExpectNear(OneNodeOutput(DftModel(4, 3, 2, -3, -1, false, true), {xt}, DType::kF32),
             NaiveDft(x, 4, 3, 2, 0, 4, 4, true));
}

// Tests a dft_length that is a graph input: the output length and the truncation mask follow
// its run-time value, shorter and longer than the signal.
TEST(OnnxSignal, DftLengthFromAnInput) {
  OneNodeModel m(17, "DFT", {"x", "len"});
  m.Input("x", {"1", "6", "2"}).Input("len", {}, onnx::TensorProto::INT64).Int("axis", 1);
  const std::vector<double> x = Ramp(1 * 6 * 2);
  const Tensor xt = Tensor::FromDoubles(DType::kF32, {1, 6, 2}, x);
  for (int64_t len : {4, 9}) {
    SCOPED_TRACE(len);
    ExpectNear(OneNodeOutput(m, {xt, Tensor::Scalar(DType::kI64, len)}, DType::kF32),
               NaiveDft(x, 1, 6, 2, 1, len, len, false));
  }
}

// Tests that an STFT of a signal shorter than one frame has no frames (and runs).
TEST(OnnxSignal, StftOfShortSignalHasNoFrames) {
  OneNodeModel m(17, "STFT", {"signal", "step", "", "len"});
  m.Input("signal", {"1", "10", "1"}).Int64("step", 4).Int64("len", 16);
  for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
    auto got = RunOneNode(m, target, {Tensor::FromDoubles(DType::kF32, {1, 10, 1}, Ramp(10))});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].shape(), (std::vector<int64_t>{1, 0, 9, 2}));
  }
}

// ---- errors ---------------------------------------------------------------------------------

// Tests that the DFT refuses an axis on the complex dim, a last dim other than 1 or 2, a
// dft_length out of range and a matrix above its size limit, naming each.
TEST(OnnxSignal, DftErrors) {
  EXPECT_THAT(DftModel(1, 4, 2, 2, -1, false, false).Import(),
              HasSubstr("axis 2 is out of range for rank 3"));
  EXPECT_THAT(DftModel(1, 4, 3, 1, -1, false, false).Import(),
              HasSubstr("the last dim of the input must be 1 (real) or 2 (complex), got f32[1, 4, 3]"));
  const std::string zero = DftModel(1, 4, 2, 1, 0, false, false).Import();
  EXPECT_THAT(zero, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(zero, HasSubstr("DFT 'node_7' (opset 17): dft_length must be in [1, 2^24), got 0"));
  const std::string huge = DftModel(1, 64, 1, 1, int64_t{1} << 20, false, false).Import();
  EXPECT_THAT(huge, StartsWith("error UNIMPLEMENTED"));
  EXPECT_THAT(huge, HasSubstr("above the 2^24 elements"));
  EXPECT_THAT(DftModel(1, 4, 2, 1, int64_t{1} << 40, false, false).Import(),
              HasSubstr("dft_length must be in [1, 2^24), got 1099511627776"));
}

// Tests that a window size must be a non-negative integer scalar.
TEST(OnnxSignal, WindowSizeErrors) {
  OneNodeModel negative(17, "HannWindow", {"size"});
  negative.Int64("size", -1);
  EXPECT_THAT(negative.Import(), HasSubstr("size must be in [0, 2^24), got -1"));
  OneNodeModel real(17, "BlackmanWindow", {"size"});
  real.Input("size", {});
  EXPECT_THAT(real.Import(), HasSubstr("size must be an integer scalar, got f32[]"));
  OneNodeModel huge(17, "HannWindow", {"size"});
  huge.Int64("size", int64_t{1} << 24);
  EXPECT_THAT(huge.Import(), HasSubstr("size must be in [0, 2^24), got 16777216"));
  OneNodeModel flag(17, "HammingWindow", {"size"});
  flag.Int64("size", 8).Int("periodic", 2);
  EXPECT_THAT(flag.Import(), HasSubstr("periodic must be 0 or 1, got 2"));
}

// Tests that MelWeightMatrix refuses constant sizes whose matrix is above the limit, and a
// bin count below 1.
TEST(OnnxSignal, MelWeightMatrixSizeErrors) {
  auto mel = [](int64_t bins, int64_t len) {
    OneNodeModel m(17, "MelWeightMatrix", {"bins", "len", "rate", "lo", "hi"});
    m.Int64("bins", bins).Int64("len", len).Int64("rate", 16000);
    m.Floats("lo", {}, {0}).Floats("hi", {}, {8000});
    return m.Import();
  };
  EXPECT_THAT(mel(8, 16), HasSubstr("f32[9, 8]"));
  EXPECT_THAT(mel(16777215, 16777215),
              HasSubstr("a 8388608 x 16777215 weight matrix (dft_length 16777215, num_mel_bins "
                        "16777215) is above the 2^24 elements accepted"));
  EXPECT_THAT(mel(0, 16), HasSubstr("num_mel_bins must be in [1, 2^24), got 0"));
}

// Tests that an STFT needs a frame length from somewhere, one that agrees with the window,
// and a [batch, length, parts] signal.
TEST(OnnxSignal, StftErrors) {
  OneNodeModel none(17, "STFT", {"signal", "step"});
  none.Input("signal", {"1", "32", "1"}).Int64("step", 4);
  EXPECT_THAT(none.Import(), HasSubstr("needs a window or a frame_length"));
  OneNodeModel differ(17, "STFT", {"signal", "step", "window", "len"});
  differ.Input("signal", {"1", "32", "1"}).Int64("step", 4).Input("window", {"16"});
  differ.Int64("len", 8);
  EXPECT_THAT(differ.Import(), HasSubstr("frame_length 8 differs from the window's length 16"));
  OneNodeModel rank(17, "STFT", {"signal", "step", "", "len"});
  rank.Input("signal", {"32", "1"}).Int64("step", 4).Int64("len", 8);
  EXPECT_THAT(rank.Import(), HasSubstr("signal must be [batch, length, 1 or 2], got rank 2"));
}

}  // namespace
}  // namespace hetpass
