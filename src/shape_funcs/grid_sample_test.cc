// Tests of image.grid_sample: type inference on symbolic dims, its errors, and the reference
// kernel against values computed by hand from ONNX's GridSample definition (denormalize,
// nearest half to even, border / reflection padding, Keys' bicubic with A = -0.75).
#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Attrs GridAttrs(std::string mode, std::string padding, bool align_corners) {
  return {{"mode", std::move(mode)},
          {"padding_mode", std::move(padding)},
          {"align_corners", align_corners}};
}

// One row of samples at normalized x positions `xs` (y = 0) of a 1 x 1 x 1 x W image `row`.
std::vector<double> SampleRow(const std::vector<double>& row, const std::vector<double>& xs,
                              const Attrs& attrs) {
  std::vector<double> grid;
  for (double x : xs) {
    grid.push_back(x);
    grid.push_back(0);
  }
  const int64_t w = static_cast<int64_t>(row.size()), n = static_cast<int64_t>(xs.size());
  auto out = RunRef("image.grid_sample", attrs, {FT({1, 1, 1, w}, row), FT({1, 1, n, 2}, grid)});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Doubles((*out)[0]) : std::vector<double>{};
}

TEST(GridSampleTest, Masks) {
  // The grid is data only the kernel reads: a grid computed on the device never crosses.
  EXPECT_EQ(Op("image.grid_sample")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("image.grid_sample")->dep(1), InputDep::kShape);
  EXPECT_FALSE(Op("image.grid_sample")->needs_values());
}

// Tests that every dim of the result is a dim of an input, symbolic ones included.
TEST(GridSampleTest, InferenceKeepsSymbols) {
  EXPECT_EQ(
      InferStr("image.grid_sample", {},
               {In(F32({S("n"), 3, S("h"), S("w")})), In(F32({S("n"), S("ho"), S("wo"), 2}))}),
      "f32[n, 3, ho, wo]");
  EXPECT_EQ(InferStr("image.grid_sample", {},
                     {In(T(DType::kF64, {2, 1, 4, 4})), In(F32({2, 6, 5, S("k")}))}),
            "f64[2, 1, 6, 5]");
}

TEST(GridSampleTest, InferenceErrors) {
  const ShapeInput x = In(F32({1, 1, 4, 4}));
  EXPECT_THAT(InferStr("image.grid_sample", {}, {x, In(F32({1, 2, 2, 3}))}),
              HasSubstr("grid must be [N, H_out, W_out, 2], got [1, 2, 2, 3]"));
  EXPECT_THAT(InferStr("image.grid_sample", {}, {x, In(F32({2, 2, 2, 2}))}),
              HasSubstr("data has batch 1 but grid has 2"));
  EXPECT_THAT(InferStr("image.grid_sample", {}, {In(F32({1, 4, 4})), In(F32({1, 2, 2, 2}))}),
              HasSubstr("data must have rank 4, got rank 3"));
  EXPECT_THAT(InferStr("image.grid_sample", {}, {x, In(F32({1, 2, 2}))}),
              HasSubstr("grid must have rank 4, got rank 3"));
  EXPECT_THAT(
      InferStr("image.grid_sample", {}, {In(T(DType::kI32, {1, 1, 4, 4})), In(F32({1, 2, 2, 2}))}),
      HasSubstr("data must be f32 or f64, got i32"));
  EXPECT_THAT(
      InferStr("image.grid_sample", {{"mode", std::string("linear")}}, {x, In(F32({1, 2, 2, 2}))}),
      HasSubstr("unsupported mode 'linear'"));
  EXPECT_THAT(InferStr("image.grid_sample", {{"padding_mode", std::string("wrap")}},
                       {x, In(F32({1, 2, 2, 2}))}),
              HasSubstr("unsupported padding_mode 'wrap'"));
}

// Tests that the identity grid of align_corners (-1 and 1 on the corner pixels' centres)
// reproduces the image in every mode: bicubic's weights at a pixel centre are 0, 1, 0, 0.
TEST(GridSampleTest, IdentityGridReproducesImage) {
  constexpr int64_t kH = 3, kW = 4;
  std::vector<double> image, grid;
  for (int64_t i = 0; i < kH * kW; ++i) image.push_back(i * 1.5 - 4);
  for (int64_t y = 0; y < kH; ++y) {
    for (int64_t x = 0; x < kW; ++x) {
      grid.push_back(-1 + 2.0 * x / (kW - 1));
      grid.push_back(-1 + 2.0 * y / (kH - 1));
    }
  }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      auto out = RunRef("image.grid_sample", GridAttrs(mode, padding, true),
                        {FT({1, 1, kH, kW}, image), FT({1, kH, kW, 2}, grid)});
      ASSERT_TRUE(out.ok()) << out.status();
      std::vector<::testing::Matcher<double>> want;
      for (double v : image) want.push_back(DoubleNear(v, 1e-6));
      EXPECT_THAT(Doubles((*out)[0]), ElementsAreArray(want)) << mode << " " << padding;
    }
  }
}

// Tests bilinear sampling between pixels: without align_corners x = ((v + 1) * W - 1) / 2.
TEST(GridSampleTest, BilinearBetweenPixels) {
  // v = -0.5 -> x = 0.5 (half way between 10 and 20); v = 0.25 -> x = 2 (pixel 30);
  // v = -1 -> x = -0.5: half of pixel 0, half of a zero.
  EXPECT_THAT(SampleRow({10, 20, 30, 40}, {-0.5, 0.25, -1}, GridAttrs("bilinear", "zeros", false)),
              ElementsAre(15, 30, 5));
  // align_corners: x = (v + 1) / 2 * (W - 1); v = 0 -> 1.5.
  EXPECT_THAT(SampleRow({10, 20, 30, 40}, {0}, GridAttrs("bilinear", "zeros", true)),
              ElementsAre(25));
}

// Tests the three paddings at x = 4.5 (v = 1.5, past the right border -0.5 .. 3.5 of W = 4):
// zeros reads nothing, border clamps to the last pixel, reflection folds 4.5 to 2.5.
TEST(GridSampleTest, PaddingPastTheBorder) {
  const std::vector<double> row = {10, 20, 30, 40};
  EXPECT_THAT(SampleRow(row, {1.5}, GridAttrs("bilinear", "zeros", false)), ElementsAre(0));
  EXPECT_THAT(SampleRow(row, {1.5}, GridAttrs("bilinear", "border", false)), ElementsAre(40));
  EXPECT_THAT(SampleRow(row, {1.5}, GridAttrs("bilinear", "reflection", false)), ElementsAre(35));
  // align_corners reflects at the pixel centres 0 and 3: v = -1.5 -> x = -0.75 -> 0.75.
  EXPECT_THAT(SampleRow(row, {-1.5}, GridAttrs("bilinear", "reflection", true)), ElementsAre(17.5));
  // Several widths away: x = 14.5 past 3.5 is 11 = 2 * 4 + 3, an even number of crossings:
  // 3.5 - 3 = 0.5, half way between pixels 0 and 1.
  EXPECT_THAT(SampleRow(row, {6.5}, GridAttrs("bilinear", "reflection", false)), ElementsAre(15));
}

// Tests that nearest rounds halves to even (PyTorch's nearbyint), not away from zero.
TEST(GridSampleTest, NearestRoundsHalfToEven) {
  // v = -0.5 -> x = 0.5 -> 0; v = 0.5 -> x = 2.5 -> 2; v = 0 -> x = 1.5 -> 2.
  EXPECT_THAT(SampleRow({10, 20, 30, 40}, {-0.5, 0.5, 0}, GridAttrs("nearest", "zeros", false)),
              ElementsAre(10, 30, 30));
}

// Tests bicubic against Keys' weights at t = 0.5 with A = -0.75: -0.09375, 0.59375, 0.59375,
// -0.09375 on pixels 0..3 around x = 1.5 (v = 0).
TEST(GridSampleTest, BicubicWeights) {
  EXPECT_THAT(SampleRow({1, 2, 4, 8}, {0}, GridAttrs("bicubic", "zeros", false)),
              ElementsAre(DoubleNear(-0.09375 + 2 * 0.59375 + 4 * 0.59375 - 8 * 0.09375, 1e-6)));
  // Near the border the taps outside are padded: x = 0.5 (v = -0.5) reads taps -1..2; zeros
  // drops tap -1, border reads pixel 0 there.
  EXPECT_THAT(SampleRow({1, 2, 4, 8}, {-0.5}, GridAttrs("bicubic", "zeros", false)),
              ElementsAre(DoubleNear(0.59375 + 2 * 0.59375 - 4 * 0.09375, 1e-6)));
  EXPECT_THAT(SampleRow({1, 2, 4, 8}, {-0.5}, GridAttrs("bicubic", "border", false)),
              ElementsAre(DoubleNear(-0.09375 + 0.59375 + 2 * 0.59375 - 4 * 0.09375, 1e-6)));
}

// Tests that batches and channels each read their own image and share the grid's positions.
TEST(GridSampleTest, BatchesAndChannels) {
  // 2 images x 2 channels of 1 x 2 pixels: value 100 b + 10 c + x.
  std::vector<double> image;
  for (int b = 0; b < 2; ++b) {
    for (int c = 0; c < 2; ++c) {
      for (int x = 0; x < 2; ++x) image.push_back(100 * b + 10 * c + x);
    }
  }
  // Batch 0 samples pixel 1, batch 1 pixel 0 (align_corners: v = 1 and -1).
  auto out = RunRef("image.grid_sample", GridAttrs("nearest", "zeros", true),
                    {FT({2, 2, 1, 2}, image), FT({2, 1, 1, 2}, {1, 0, -1, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 2, 1, 1}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 11, 100, 110));
}

// Tests hostile grids: huge coordinates never overflow an index, NaN gives NaN, and infinity
// gives NaN unless border padding clamps it.
TEST(GridSampleTest, HostileCoordinates) {
  const std::vector<double> row = {10, 20, 30, 40};
  EXPECT_THAT(SampleRow(row, {1e30, -1e30}, GridAttrs("bilinear", "zeros", false)),
              ElementsAre(0, 0));
  EXPECT_THAT(SampleRow(row, {1e30, -1e30}, GridAttrs("bicubic", "border", false)),
              ElementsAre(40, 10));
  for (double v : SampleRow(row, {1e30, -3e29}, GridAttrs("nearest", "reflection", true))) {
    EXPECT_TRUE(v == 10 || v == 20 || v == 30 || v == 40) << v;
  }
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> nan =
      SampleRow(row, {std::nan(""), inf}, GridAttrs("bilinear", "zeros", false));
  ASSERT_EQ(nan.size(), 2u);
  EXPECT_TRUE(std::isnan(nan[0]));
  EXPECT_TRUE(std::isnan(nan[1]));
  EXPECT_THAT(SampleRow(row, {inf}, GridAttrs("bilinear", "border", false)), ElementsAre(40));
}

// Tests the checks only the kernel can make when symbolic dims skip the shape function, and the
// empty image.
TEST(GridSampleTest, KernelChecksRuntimeShapes) {
  const OpDef* op = Op("image.grid_sample");
  auto attrs = op->CheckAttrs({});
  ASSERT_TRUE(attrs.ok());
  const Type out = F32({1, 1, 1, 1});
  auto bad_batch = op->reference()({FT({1, 1, 2, 2}, {1, 2, 3, 4}), FT({2, 1, 1, 2}, {0, 0, 0, 0})},
                                   *attrs, {out});
  ASSERT_FALSE(bad_batch.ok());
  EXPECT_THAT(
      bad_batch.status().message(),
      HasSubstr("op 'image.grid_sample': grid [2, 1, 1, 2] does not fit data [1, 1, 2, 2]"));
  auto bad_last =
      op->reference()({FT({1, 1, 2, 2}, {1, 2, 3, 4}), FT({1, 1, 1, 3}, {0, 0, 0})}, *attrs, {out});
  EXPECT_FALSE(bad_last.ok());
  auto empty = RunRef("image.grid_sample", GridAttrs("bilinear", "border", false),
                      {FT({1, 1, 0, 3}, {}), FT({1, 1, 2, 2}, {0, 0, 0.5, 0.5})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(Doubles((*empty)[0]), ElementsAre(0, 0));
}

}  // namespace
}  // namespace hetpass::testing
