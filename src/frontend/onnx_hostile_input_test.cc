// Tests of the ONNX importer on hostile inputs the fuzzers found (test/fuzz/regressions): values
// that would overflow int64, NaN or out-of-range float-to-int casts, steps whose negation does
// not fit. Each must be an InvalidArgument status naming the op and the value, never UB or a
// crash. Small ModelProtos built in code, as in onnx_conv_transpose_roi_align_test.cc; the saved
// reproducers themselves are replayed at the end (and, under the sanitizers, in the fuzz build).
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
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
using ::testing::Not;
using ::hetpass::testing::OneNodeModel;
using ::testing::StartsWith;

OneNodeModel ResizeWithScales(float sh, float sw, std::string h = "8") {
  OneNodeModel m(11, "Resize", {"x", "roi", "scales"});
  m.Input("x", {"1", "1", h, "8"}).Floats("roi", {0}, {}).Floats("scales", {4}, {1, 1, sh, sw});
  return m;
}

// ---- Resize ----------------------------------------------------------------------------------

// Tests that ordinary scales still give floor(dim * scale).
TEST(OnnxHostileInput, ResizeScalesStillWork) {
  EXPECT_THAT(ResizeWithScales(2, 0.5).Import(), HasSubstr("f32[1, 1, 16, 4]"));
}

// Tests that a dim * scale outside int64 (a huge scale, or a huge dim times a small one) is an
// error naming the scale, not an out-of-range cast.
TEST(OnnxHostileInput, ResizeOutputSizeOutOfRange) {
  const std::string huge = ResizeWithScales(1, 3e38f).Import();
  EXPECT_THAT(huge, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(huge, HasSubstr("scales[3] = 3e+38 on dim 8 gives output size 2.4e+39, which is "
                              "not in [1, 2^63)"));
  const std::string big_dim = ResizeWithScales(4, 1, "4611686018427387904").Import();
  EXPECT_THAT(big_dim, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(big_dim, HasSubstr("scales[2] = 4 on dim 4611686018427387904"));
  EXPECT_THAT(ResizeWithScales(-2, 1).Import(), HasSubstr("scales[2] = -2 is not a positive number"));
}

// Tests that a huge integral scale of a symbolic dim (a fuzzer finding: 3e38 cast to int64)
// goes to the scaled op, whose rule checks floor(h * scale) once h is known.
TEST(OnnxHostileInput, ResizeHugeIntegralScaleOnSymbolicDim) {
  const std::string r = ResizeWithScales(3e38f, 1, "h").Import();
  EXPECT_THAT(r, HasSubstr("dyn.image.resize2d_scaled(%x"));
}

// Tests that a NaN scale is an error, not a cast of NaN to int64.
TEST(OnnxHostileInput, ResizeNaNScale) {
  const std::string r = ResizeWithScales(std::numeric_limits<float>::quiet_NaN(), 1).Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("scales[2] = nan is not a positive number"));
}

// ---- attributes that would overflow in the converters added for the full op set ---------------

// Tests that a DepthToSpace blocksize whose square overflows int64 is an error naming the range.
TEST(OnnxHostileInput, DepthToSpaceHugeBlocksize) {
  OneNodeModel m(13, "DepthToSpace", {"x"});
  m.Input("x", {"1", "4", "2", "2"}).Int("blocksize", INT64_MAX);
  const std::string r = m.Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("blocksize must be in [1, 1048576], got 9223372036854775807"));
}

// Tests that SAME padding with hostile strides and kernel is an error, not a signed overflow.
TEST(OnnxHostileInput, SamePaddingOverflow) {
  OneNodeModel m(11, "MaxPool", {"x"});
  m.Input("x", {"1", "1", "8", "8"})
      .Ints("kernel_shape", {INT64_MAX, 2})
      .Ints("strides", {INT64_MAX, 1})
      .Str("auto_pad", "SAME_UPPER");
  const std::string r = m.Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("needs more padding than fits"));
}

// Tests that an LRN window far wider than the channels imports as the channels' sum (the
// window is clamped, not INT64_MAX slices).
TEST(OnnxHostileInput, LrnHugeWindowIsClamped) {
  OneNodeModel m(13, "LRN", {"x"});
  m.Input("x", {"1", "3", "2", "2"}).Int("size", INT64_MAX);
  EXPECT_THAT(m.Import(), Not(StartsWith("error")));
}

// ---- Split -----------------------------------------------------------------------------------

// Tests that split sizes whose running sum overflows int64 are an error listing them.
TEST(OnnxHostileInput, SplitSizesOverflow) {
  OneNodeModel m(11, "Split", {"x"}, {"a", "b"});
  m.Input("x", {"n", "4"}).Ints("split", {INT64_MAX, INT64_MAX});
  const std::string r = m.Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("split sizes [9223372036854775807, 9223372036854775807] overflow "
                           "int64 when summed"));
}

// Tests that a negative split size is an error naming it.
TEST(OnnxHostileInput, SplitSizeNegative) {
  OneNodeModel m(13, "Split", {"x", "split"}, {"a", "b"});
  m.Input("x", {"n", "4"}).Int64s("split", {-1, 5});
  EXPECT_THAT(m.Import(), HasSubstr("split size -1 is negative"));
}

// ---- Slice / Range ---------------------------------------------------------------------------

// Tests that a Slice step of INT64_MIN is an error, not a negation overflow.
TEST(OnnxHostileInput, SliceStepInt64Min) {
  OneNodeModel m(13, "Slice", {"x", "starts", "ends", "axes", "steps"});
  m.Input("x", {"n", "4"})
      .Int64s("starts", {-1})
      .Int64s("ends", {INT64_MIN})
      .Int64s("axes", {0})
      .Int64s("steps", {INT64_MIN});
  const std::string r = m.Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("stride -9223372036854775808 is not supported"));
}

// ---- Reshape ---------------------------------------------------------------------------------

// Tests that inferring Reshape's -1 against a newshape whose product overflows is an error.
TEST(OnnxHostileInput, ReshapeMinusOneOverflow) {
  OneNodeModel m(13, "Reshape", {"x", "shape"});
  m.Input("x", {"4", "5"}).Int64s("shape", {-1, 0, INT64_MAX});
  const std::string r = m.Import();
  EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
  EXPECT_THAT(r, HasSubstr("cannot infer -1"));
  EXPECT_THAT(r, HasSubstr("overflows int64"));
}

// ---- the saved reproducers -------------------------------------------------------------------

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Tests that every saved fuzzer reproducer is turned away with InvalidArgument (a user error
// with a message), not an internal error; the fuzz build replays them under ASan + UBSan.
TEST(OnnxHostileInput, SavedReproducersAreInvalidArgument) {
  const std::filesystem::path dir =
      std::filesystem::path(HETPASS_TEST_DATA_DIR) / "fuzz" / "regressions";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  int replayed = 0;
  // regressions/onnx_import/*.onnx and regressions/onnx_tensor/*.pb (one folder per fuzzer).
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::filesystem::path& p = entry.path();
    const std::string bytes = ReadFile(p);
    absl::Status status;
    if (p.extension() == ".onnx") {
      status = ImportOnnx(bytes).status();
    } else if (p.extension() == ".pb") {
      status = ParseOnnxTensor(bytes).status();
    } else {
      continue;
    }
    ++replayed;
    SCOPED_TRACE(p.filename().string());
    // A reproducer whose bug only mattered while printing (dim_to_string_int64_min) may now
    // import; everything else is rejected as the user's error.
    if (!status.ok()) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_FALSE(status.message().empty());
    }
  }
  EXPECT_GT(replayed, 0);
}

}  // namespace
}  // namespace hetpass
