// Tests of the nn family: masks, symbolic and static inference, shape functions, errors and
// reference kernels with hand-checked numbers.
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- nn.dense ------------------------------------------------------------------------------

TEST(DenseTest, MaskAndPattern) {
  const OpDef* def = Op("nn.dense");
  EXPECT_EQ(def->dep(0), InputDep::kShape);
  EXPECT_EQ(def->dep(1), InputDep::kShape);
  EXPECT_EQ(def->pattern(), FusionPattern::kOutElementwiseFusable);
}

TEST(DenseTest, SymbolicBatchStaysSymbolic) {
  EXPECT_EQ(InferStr("nn.dense", {}, {In(F32({S("n"), 1024})), In(F32({512, 1024}))}),
            "f32[n, 512]");
  EXPECT_EQ(InferStr("nn.dense", {}, {In(F32({S("b"), S("s"), 64})), In(F32({S("k"), 64}))}),
            "f32[b, s, k]");
}

TEST(DenseTest, StaticAndConcrete) {
  EXPECT_EQ(InferStr("nn.dense", {{"units", int64_t{3}}}, {In(F32({2, 4})), In(F32({3, 4}))}),
            "f32[2, 3]");
}

TEST(DenseTest, Errors) {
  EXPECT_THAT(InferStr("nn.dense", {}, {In(F32({8, 1024})), In(F32({512, 1000}))}),
              HasSubstr("nn.dense': reduction dims differ: 1024 vs 1000"));
  EXPECT_THAT(InferStr("nn.dense", {}, {In(F32({8, 4})), In(F32({2, 2, 4}))}),
              HasSubstr("weight must have rank 2, got rank 3"));
  EXPECT_THAT(InferStr("nn.dense", {}, {In(F32({8, 4})), In(T(DType::kF16, {2, 4}))}),
              HasSubstr("dtypes differ: f32 vs f16"));
  EXPECT_THAT(InferStr("nn.dense", {{"units", int64_t{5}}}, {In(F32({8, 4})), In(F32({2, 4}))}),
              HasSubstr("units = 5 but the weight has 2 rows"));
  // A symbolic K is not provably wrong.
  EXPECT_EQ(InferStr("nn.dense", {}, {In(F32({8, S("k")})), In(F32({2, 4}))}), "f32[8, 2]");
}

TEST(DenseTest, Reference) {
  auto out =
      RunRef("nn.dense", {}, {FT({2, 3}, {1, 2, 3, 4, 5, 6}), FT({2, 3}, {1, 0, 1, 0, 1, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(4, 2, 10, 5));
}

// ---- nn.bias_add ---------------------------------------------------------------------------

TEST(BiasAddTest, Mask) {
  EXPECT_EQ(Op("nn.bias_add")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("nn.bias_add")->dep(1), InputDep::kShape);
  EXPECT_EQ(Op("nn.bias_add")->pattern(), FusionPattern::kBroadcast);
}

TEST(BiasAddTest, Inference) {
  EXPECT_EQ(InferStr("nn.bias_add", {}, {In(F32({S("n"), 16, 8, 8})), In(F32({16}))}),
            "f32[n, 16, 8, 8]");
  EXPECT_EQ(InferStr("nn.bias_add", {{"axis", int64_t{-1}}}, {In(F32({2, 3})), In(F32({3}))}),
            "f32[2, 3]");
  EXPECT_THAT(InferStr("nn.bias_add", {}, {In(F32({2, 3})), In(F32({4}))}),
              HasSubstr("bias has 4 elements but data axis 1 has 3"));
  EXPECT_THAT(InferStr("nn.bias_add", {{"axis", int64_t{2}}}, {In(F32({2, 3})), In(F32({3}))}),
              HasSubstr("axis 2 is out of range for rank 2"));
}

TEST(BiasAddTest, Reference) {
  auto out = RunRef("nn.bias_add", {}, {FT({2, 2, 1}, {1, 2, 3, 4}), FT({2}, {10, 20})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(11, 22, 13, 24));
}

// ---- nn.conv2d -----------------------------------------------------------------------------

TEST(Conv2dTest, Mask) {
  EXPECT_EQ(Op("nn.conv2d")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("nn.conv2d")->dep(1), InputDep::kShape);
  EXPECT_EQ(Op("nn.conv2d")->pattern(), FusionPattern::kOutElementwiseFusable);
}

TEST(Conv2dTest, SymbolicBatchStaticSpatial) {
  const Attrs a = {{"padding", std::vector<int64_t>{1}}};
  EXPECT_EQ(InferStr("nn.conv2d", a, {In(F32({S("n"), 3, 224, 224})), In(F32({64, 3, 3, 3}))}),
            "f32[n, 64, 224, 224]");
}

TEST(Conv2dTest, SymbolicSpatialIsFloorDiv) {
  const Attrs a = {{"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1}}};
  EXPECT_EQ(InferStr("nn.conv2d", a, {In(F32({1, 3, S("h"), S("w")})), In(F32({8, 3, 3, 3}))}),
            "f32[1, 8, (h + 1)//2, (w + 1)//2]");
}

TEST(Conv2dTest, StaticStridesDilationGroupsPadding4) {
  const Attrs a = {{"strides", std::vector<int64_t>{2, 1}},
                   {"padding", std::vector<int64_t>{1, 0, 0, 2}},
                   {"dilation", std::vector<int64_t>{1, 2}},
                   {"groups", int64_t{2}}};
  // H: (9 + 1 + 0 - 2 - 1)//2 + 1 = 4; W: (7 + 0 + 2 - 4 - 1)//1 + 1 = 5.
  EXPECT_EQ(InferStr("nn.conv2d", a, {In(F32({1, 4, 9, 7})), In(F32({6, 2, 3, 3}))}),
            "f32[1, 6, 4, 5]");
}

TEST(Conv2dTest, Errors) {
  EXPECT_THAT(InferStr("nn.conv2d", {}, {In(F32({1, 3, 8, 8})), In(F32({4, 2, 3, 3}))}),
              HasSubstr("data has 3 channels but weight expects 2"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"strides", std::vector<int64_t>{0, 1}}},
                       {In(F32({1, 3, 8, 8})), In(F32({4, 3, 3, 3}))}),
              HasSubstr("strides must be positive, got 0"));
  EXPECT_THAT(InferStr("nn.conv2d", {}, {In(F32({1, 3, 2, 8})), In(F32({4, 3, 3, 3}))}),
              HasSubstr("output height would be 0"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"padding", std::vector<int64_t>{1, 2, 3}}},
                       {In(F32({1, 3, 8, 8})), In(F32({4, 3, 3, 3}))}),
              HasSubstr("padding must have 1, 2 or 4 values, got 3"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"data_layout", std::string("NHWC")}},
                       {In(F32({1, 8, 8, 3})), In(F32({4, 3, 3, 3}))}),
              HasSubstr("data_layout and out_layout must be NCHW or NCHW<b>c"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"groups", int64_t{2}}},
                       {In(F32({1, 6, 8, 8})), In(F32({3, 3, 3, 3}))}),
              HasSubstr("3 output channels are not divisible by 2 groups"));
}

TEST(Conv2dTest, Reference) {
  // 1x1x3x3 input 1..9, 2x2 kernel of ones, stride 1, no padding: window sums.
  auto out =
      RunRef("nn.conv2d", {},
             {FT({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), FT({1, 1, 2, 2}, {1, 1, 1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(12, 16, 24, 28));
  // Padding 1, stride 2, 3x3 identity-centre kernel: picks x[0,0], x[0,2], x[2,0], x[2,2].
  auto padded = RunRef("nn.conv2d",
                       {{"padding", std::vector<int64_t>{1}}, {"strides", std::vector<int64_t>{2}}},
                       {FT({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                        FT({1, 1, 3, 3}, {0, 0, 0, 0, 1, 0, 0, 0, 0})});
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(Doubles((*padded)[0]), ElementsAre(1, 3, 7, 9));
}

TEST(Conv2dTest, ReferenceGroups) {
  // Depthwise: 2 channels, 1x1 kernels scaling by 2 and 3.
  auto out = RunRef("nn.conv2d", {{"groups", int64_t{2}}},
                    {FT({1, 2, 1, 2}, {1, 2, 3, 4}), FT({2, 1, 1, 1}, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(2, 4, 9, 12));
}

// Tests blocked channel layouts: the data [N, C/b, H, W, b] holds the same logical elements,
// out_layout (empty: the data's) decides the result's; the channels must split into blocks.
TEST(Conv2dTest, BlockedLayoutTypes) {
  const Attrs blocked = {{"data_layout", std::string("NCHW16c")},
                         {"padding", std::vector<int64_t>{1}}};
  EXPECT_EQ(
      InferStr("nn.conv2d", blocked, {In(F32({S("n"), 2, 8, 8, 16})), In(F32({64, 32, 3, 3}))}),
      "f32[n, 4, 8, 8, 16]");
  EXPECT_EQ(InferStr("nn.conv2d", {{"out_layout", std::string("NCHW8c")}},
                     {In(F32({1, 3, 8, 8})), In(F32({16, 3, 3, 3}))}),
            "f32[1, 2, 6, 6, 8]");
  EXPECT_EQ(InferStr("nn.conv2d",
                     {{"data_layout", std::string("NCHW8c")}, {"out_layout", std::string("NCHW")}},
                     {In(F32({1, 2, 5, 5, 8})), In(F32({3, 16, 1, 1}))}),
            "f32[1, 3, 5, 5]");
  EXPECT_THAT(InferStr("nn.conv2d", {{"out_layout", std::string("NCHW16c")}},
                       {In(F32({1, 3, 8, 8})), In(F32({24, 3, 3, 3}))}),
              HasSubstr("24 output channels do not split into blocks of 16"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"data_layout", std::string("NCHW16c")}},
                       {In(F32({1, 2, 8, 8, 8})), In(F32({16, 32, 3, 3}))}),
              HasSubstr("is not in NCHW16c"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"data_layout", std::string("NCHW16c")}},
                       {In(F32({1, 32, 8, 8})), In(F32({16, 32, 3, 3}))}),
              HasSubstr("data must have rank 5"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"data_layout", std::string("NCHW0c")}},
                       {In(F32({1, 32, 8, 8})), In(F32({16, 32, 3, 3}))}),
              HasSubstr("got NCHW0c"));
}

// Tests that the blocked reference computes the NCHW convolution, elements moved: data
// channels 0..3 in NCHW2c, a 1x1 kernel summing channel pairs, result in NCHW2c and NCHW.
TEST(Conv2dTest, ReferenceBlockedEqualsNchw) {
  // Logical x[0][c][0][w] = 10c + w (4 channels, 1x2 pixels); NCHW2c stores [1, 2, 1, 2, 2].
  const Tensor x = FT({1, 2, 1, 2, 2}, {0, 10, 1, 11, 20, 30, 21, 31});
  const Tensor w = FT({2, 4, 1, 1}, {1, 1, 0, 0, 0, 0, 1, 1});  // c0+c1, c2+c3
  auto blocked = RunRef("nn.conv2d", {{"data_layout", std::string("NCHW2c")}}, {x, w});
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_EQ((*blocked)[0].shape(), (std::vector<int64_t>{1, 1, 1, 2, 2}));
  EXPECT_THAT(Doubles((*blocked)[0]), ElementsAre(10, 50, 12, 52));
  auto plain =
      RunRef("nn.conv2d",
             {{"data_layout", std::string("NCHW2c")}, {"out_layout", std::string("NCHW")}}, {x, w});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(Doubles((*plain)[0]), ElementsAre(10, 12, 50, 52));
}

// ---- nn.conv2d_transpose -------------------------------------------------------------------

// Tests that both operands are shape-only: the output follows from shapes and attributes.
TEST(Conv2dTransposeTest, Mask) {
  EXPECT_EQ(Op("nn.conv2d_transpose")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("nn.conv2d_transpose")->dep(1), InputDep::kShape);
  EXPECT_EQ(Op("nn.conv2d_transpose")->pattern(), FusionPattern::kOutElementwiseFusable);
}

// Tests that symbolic spatial dims stay symbolic: the mask head's 2x2 stride-2 upsampling
// doubles them, and the roi count stays a symbol.
TEST(Conv2dTransposeTest, SymbolicDims) {
  const Attrs a = {{"strides", std::vector<int64_t>{2, 2}}};
  EXPECT_EQ(
      InferStr("nn.conv2d_transpose", a, {In(F32({S("r"), 32, 14, 14})), In(F32({32, 8, 2, 2}))}),
      "f32[r, 8, 28, 28]");
  EXPECT_EQ(InferStr("nn.conv2d_transpose", a,
                     {In(F32({1, 32, S("h"), S("w")})), In(F32({32, 8, 2, 2}))}),
            "f32[1, 8, h*2, w*2]");
}

// Tests the output size stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pads,
// with groups multiplying the weight's per-group output channels.
TEST(Conv2dTransposeTest, StaticStridesDilationGroupsPaddings) {
  const Attrs a = {{"strides", std::vector<int64_t>{3, 2}},
                   {"padding", std::vector<int64_t>{1, 0, 0, 2}},
                   {"output_padding", std::vector<int64_t>{1, 0}},
                   {"dilation", std::vector<int64_t>{1, 2}},
                   {"groups", int64_t{2}}};
  // H: 3 * 3 + 1 + 2 + 1 - 1 = 12; W: 2 * 4 + 0 + 4 + 1 - 2 = 11; C: 3 x 2 groups.
  EXPECT_EQ(InferStr("nn.conv2d_transpose", a, {In(F32({2, 4, 4, 5})), In(F32({4, 3, 3, 3}))}),
            "f32[2, 6, 12, 11]");
}

// Tests that bad ranks, channels, attributes and over-cropping are errors naming the op.
TEST(Conv2dTransposeTest, Errors) {
  const auto infer = [](const Attrs& a, Type x, Type w) {
    return InferStr("nn.conv2d_transpose", a, {In(std::move(x)), In(std::move(w))});
  };
  EXPECT_THAT(infer({}, F32({1, 3, 8}), F32({3, 2, 3, 3})),
              HasSubstr("op 'nn.conv2d_transpose': data must have rank 4, got rank 3"));
  EXPECT_THAT(infer({}, F32({1, 3, 8, 8}), F32({3, 2, 3})),
              HasSubstr("weight must have rank 4, got rank 3"));
  EXPECT_THAT(infer({}, F32({1, 3, 8, 8}), F32({4, 2, 3, 3})),
              HasSubstr("data has 3 channels but the weight [Cin, Cout/groups, kh, kw] has 4"));
  EXPECT_THAT(infer({{"groups", int64_t{2}}}, F32({1, 3, 8, 8}), F32({3, 2, 3, 3})),
              HasSubstr("3 input channels are not divisible by 2 groups"));
  EXPECT_THAT(infer({{"groups", int64_t{0}}}, F32({1, 3, 8, 8}), F32({3, 2, 3, 3})),
              HasSubstr("groups must be positive, got 0"));
  EXPECT_THAT(
      infer({{"strides", std::vector<int64_t>{0, 1}}}, F32({1, 3, 8, 8}), F32({3, 2, 3, 3})),
      HasSubstr("strides must be positive, got 0"));
  EXPECT_THAT(
      infer({{"output_padding", std::vector<int64_t>{-1}}}, F32({1, 3, 8, 8}), F32({3, 2, 3, 3})),
      HasSubstr("output_padding must be >= 0, got -1"));
  EXPECT_THAT(infer({{"output_padding", std::vector<int64_t>{0, 0, 0}}}, F32({1, 3, 8, 8}),
                    F32({3, 2, 3, 3})),
              HasSubstr("output_padding must have 1 or 2 values, got 3"));
  EXPECT_THAT(
      infer({{"padding", std::vector<int64_t>{1, 2, 3}}}, F32({1, 3, 8, 8}), F32({3, 2, 3, 3})),
      HasSubstr("padding must have 1, 2 or 4 values, got 3"));
  // A 1x1 input through a 1x1 kernel is one pixel; cropping one row from each side leaves -1.
  EXPECT_THAT(
      infer({{"padding", std::vector<int64_t>{1, 0}}}, F32({1, 3, 1, 1}), F32({3, 2, 1, 1})),
      HasSubstr("output height would be -1"));
  EXPECT_THAT(InferStr("nn.conv2d_transpose", {},
                       {In(F32({1, 3, 8, 8})), In(T(DType::kI64, {3, 2, 3, 3}))}),
              HasSubstr("data and weight dtypes differ"));
}

// Tests ONNX's test_convtranspose numbers: a 3x3 ramp through a 3x3 kernel of ones into two
// output channels gives overlapping window sums, 5x5 per channel.
TEST(Conv2dTransposeTest, Reference) {
  std::vector<double> ones(18, 1.0);
  auto out = RunRef("nn.conv2d_transpose", {},
                    {FT({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}), FT({1, 2, 3, 3}, ones)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 5, 5}));
  const std::vector<double> channel = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                       27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<double> want = channel;
  want.insert(want.end(), channel.begin(), channel.end());
  EXPECT_EQ(Doubles((*out)[0]), want);
}

// Tests that a 2x2 stride-2 kernel (the mask head) tiles each input pixel times the kernel,
// and that padding crops the tiled output while output_padding adds a zero row at the end.
TEST(Conv2dTransposeTest, ReferenceStridePaddingOutputPadding) {
  const Tensor x = FT({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = FT({1, 1, 2, 2}, {1, 10, 100, 1000});
  const std::vector<int64_t> two = {2, 2};
  auto tiled = RunRef("nn.conv2d_transpose", {{"strides", two}}, {x, w});
  ASSERT_TRUE(tiled.ok()) << tiled.status();
  EXPECT_THAT(Doubles((*tiled)[0]), ElementsAre(1, 10, 2, 20,          //
                                                100, 1000, 200, 2000,  //
                                                3, 30, 4, 40,          //
                                                300, 3000, 400, 4000));
  // Crop one row at the top and one column at the right; one extra row at the bottom.
  auto cropped = RunRef("nn.conv2d_transpose",
                        {{"strides", two},
                         {"padding", std::vector<int64_t>{1, 0, 0, 1}},
                         {"output_padding", std::vector<int64_t>{1, 0}}},
                        {x, w});
  ASSERT_TRUE(cropped.ok()) << cropped.status();
  EXPECT_EQ((*cropped)[0].shape(), (std::vector<int64_t>{1, 1, 4, 3}));
  EXPECT_THAT(Doubles((*cropped)[0]), ElementsAre(100, 1000, 200,  //
                                                  3, 30, 4,        //
                                                  300, 3000, 400,  //
                                                  0, 0, 0));
}

// Tests that groups keep channels apart: each input channel feeds only its group's outputs.
TEST(Conv2dTransposeTest, ReferenceGroupsAndDilation) {
  // Two groups of one input channel, each with one output channel; 1x2 kernel dilated by 2.
  auto out = RunRef("nn.conv2d_transpose",
                    {{"groups", int64_t{2}}, {"dilation", std::vector<int64_t>{1, 2}}},
                    {FT({1, 2, 1, 2}, {1, 2, 3, 4}), FT({2, 1, 1, 2}, {1, 10, 2, 20})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Width 1 * (2 - 1) + 2 * (2 - 1) + 1 = 4: out[w] += x[i] * k[j] at w = i + 2 j.
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 1, 4}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 2, 10, 20, 6, 8, 60, 80));
}

// ---- nn.max_pool2d -------------------------------------------------------------------------

TEST(MaxPool2dTest, MaskAndInference) {
  EXPECT_EQ(Op("nn.max_pool2d")->dep(0), InputDep::kShape);
  const Attrs a = {{"pool_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2}}};
  EXPECT_EQ(InferStr("nn.max_pool2d", a, {In(F32({S("n"), 8, 7, 7}))}), "f32[n, 8, 3, 3]");
  Attrs ceil = a;
  ceil.Set("ceil_mode", true);
  EXPECT_EQ(InferStr("nn.max_pool2d", ceil, {In(F32({S("n"), 8, 7, 7}))}), "f32[n, 8, 4, 4]");
  EXPECT_EQ(InferStr("nn.max_pool2d", a, {In(F32({1, 1, S("h"), 4}))}), "f32[1, 1, h//2, 2]");
}

TEST(MaxPool2dTest, Errors) {
  EXPECT_THAT(InferStr("nn.max_pool2d", {}, {In(F32({1, 1, 4, 4}))}),
              HasSubstr("needs attribute 'pool_size'"));
  EXPECT_THAT(
      InferStr("nn.max_pool2d", {{"pool_size", std::vector<int64_t>{3}}}, {In(F32({1, 4, 4}))}),
      HasSubstr("data must have rank 4, got rank 3"));
  EXPECT_THAT(
      InferStr("nn.max_pool2d", {{"pool_size", std::vector<int64_t>{5}}}, {In(F32({1, 1, 4, 4}))}),
      HasSubstr("output height would be 0"));
}

// Tests that pads whose sum overflows int64 are an error naming them, in every windowed rule
// (fuzzer findings: MaxPool and Conv with pads [INT64_MAX x4]).
TEST(WindowTest, PadSumOverflowIsAnError) {
  const std::vector<int64_t> huge = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
  EXPECT_THAT(InferStr("nn.max_pool2d", {{"pool_size", std::vector<int64_t>{2}}, {"padding", huge}},
                       {In(F32({1, 1, 4, 4}))}),
              HasSubstr("op 'nn.max_pool2d': height padding 9223372036854775807 + "
                        "9223372036854775807 overflows int64"));
  EXPECT_THAT(InferStr("nn.conv2d", {{"padding", std::vector<int64_t>{0, INT64_MAX, 0, 1}}},
                       {In(F32({1, 3, 8, 8})), In(F32({4, 3, 3, 3}))}),
              HasSubstr("op 'nn.conv2d': width padding 9223372036854775807 + 1 overflows int64"));
  EXPECT_THAT(InferStr("nn.conv2d_transpose", {{"padding", huge}},
                       {In(F32({1, 3, 8, 8})), In(F32({3, 2, 3, 3}))}),
              HasSubstr("op 'nn.conv2d_transpose': height padding 9223372036854775807 + "
                        "9223372036854775807 overflows int64"));
}

// Tests nn.avg_pool2d's divisor: the positions inside the input (default), inside the padded
// input (count_include_pad), never the part of a ceil_mode window beyond the padding; and that
// its shape is max pooling's.
TEST(AvgPool2dTest, DivisorsAndShape) {
  EXPECT_EQ(Op("nn.avg_pool2d")->dep(0), InputDep::kShape);
  const Tensor x = FT({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Attrs a = {{"pool_size", std::vector<int64_t>{2}},
             {"strides", std::vector<int64_t>{2}},
             {"padding", std::vector<int64_t>{1, 1, 0, 0}}};
  EXPECT_EQ(InferStr("nn.avg_pool2d", a, {In(F32({S("n"), 1, 3, 3}))}), "f32[n, 1, 2, 2]");
  auto exclude = RunRef("nn.avg_pool2d", a, {x});
  ASSERT_TRUE(exclude.ok()) << exclude.status();
  EXPECT_THAT(Doubles((*exclude)[0]), ElementsAre(1, 2.5, 5.5, 7));  // (2+3)/2, (4+7)/2, (5+6+8+9)/4
  a.Set("count_include_pad", true);
  auto include = RunRef("nn.avg_pool2d", a, {x});
  ASSERT_TRUE(include.ok()) << include.status();
  EXPECT_THAT(Doubles((*include)[0]), ElementsAre(0.25, 1.25, 2.75, 7));
  // ceil_mode: the last window [2, 4) reaches one column past the 3 columns (no padding there):
  // it averages the one column that exists in both modes.
  Attrs c = {{"pool_size", std::vector<int64_t>{1, 2}},
             {"strides", std::vector<int64_t>{1, 2}},
             {"ceil_mode", true},
             {"count_include_pad", true}};
  auto ceil = RunRef("nn.avg_pool2d", c, {x});
  ASSERT_TRUE(ceil.ok()) << ceil.status();
  EXPECT_THAT(Doubles((*ceil)[0]), ElementsAre(1.5, 3, 4.5, 6, 7.5, 9));
}

TEST(MaxPool2dTest, Reference) {
  auto out = RunRef("nn.max_pool2d",
                    {{"pool_size", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}},
                    {FT({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(6, 8, 14, 16));
  // Padding never wins even when every real value is negative.
  auto padded = RunRef("nn.max_pool2d",
                       {{"pool_size", std::vector<int64_t>{2}},
                        {"padding", std::vector<int64_t>{1}},
                        {"strides", std::vector<int64_t>{2}}},
                       {FT({1, 1, 2, 2}, {-1, -2, -3, -4})});
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(Doubles((*padded)[0]), ElementsAre(-1, -2, -3, -4));
}

// Tests pooling in a blocked channel layout (block-conv-layout's): the result keeps the layout,
// a data whose last dim is not the block or whose rank is not 5 is an error naming it, the
// indices op stays NCHW-only, and each reference pool computes the NCHW one's elements, moved.
TEST(MaxPool2dTest, BlockedLayout) {
  const Attrs a = {{"pool_size", std::vector<int64_t>{3}},
                   {"strides", std::vector<int64_t>{2}},
                   {"padding", std::vector<int64_t>{1}},
                   {"layout", std::string("NCHW4c")}};
  EXPECT_EQ(InferStr("nn.max_pool2d", a, {In(F32({S("n"), 2, S("h"), 8, 4}))}),
            "f32[n, 2, (h + 1)//2, 4, 4]");
  EXPECT_EQ(InferStr("nn.avg_pool2d", a, {In(F32({1, 2, 7, 7, 4}))}), "f32[1, 2, 4, 4, 4]");
  EXPECT_THAT(InferStr("nn.max_pool2d", a, {In(F32({1, 2, 7, 7, 8}))}),
              HasSubstr("is not in NCHW4c: its last dim is not 4"));
  EXPECT_THAT(InferStr("nn.max_pool2d", a, {In(F32({1, 8, 7, 7}))}),
              HasSubstr("data must have rank 5, got rank 4"));
  Attrs bad = a;
  bad.Set("layout", std::string("NHWC"));
  EXPECT_THAT(InferStr("nn.max_pool2d", bad, {In(F32({1, 8, 7, 7}))}),
              HasSubstr("layout must be NCHW or NCHW<b>c, got NHWC"));
  EXPECT_THAT(InferStr("nn.max_pool2d_with_indices", a, {In(F32({1, 2, 7, 7, 4}))}),
              HasSubstr("only NCHW layout is supported"));

  // x: 8 channels of 5x5, logical value 100c + 10h + w - 60 (negative and positive values).
  std::vector<double> nchw(8 * 25), blocked(8 * 25);
  for (int c = 0; c < 8; ++c) {
    for (int hw = 0; hw < 25; ++hw) {
      const double v = 100 * c + 10 * (hw / 5) + hw % 5 - 60 - (c % 3 == 1 ? 1000 : 0);
      nchw[c * 25 + hw] = v;
      blocked[((c / 4) * 25 + hw) * 4 + c % 4] = v;
    }
  }
  for (const char* op : {"nn.max_pool2d", "nn.avg_pool2d"}) {
    for (bool include : {false, true}) {
      SCOPED_TRACE(absl::StrCat(op, include ? " count_include_pad" : ""));
      Attrs plain = a;
      plain.Set("layout", std::string("NCHW"));
      Attrs block = a;
      if (std::string(op) == "nn.avg_pool2d") {
        plain.Set("count_include_pad", include);
        block.Set("count_include_pad", include);
      }
      auto want = RunRef(op, plain, {FT({1, 8, 5, 5}, nchw)});
      auto got = RunRef(op, block, {FT({1, 2, 5, 5, 4}, blocked)});
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ((*got)[0].shape(), (std::vector<int64_t>{1, 2, 3, 3, 4}));
      const std::vector<double> w = Doubles((*want)[0]), g = Doubles((*got)[0]);
      for (int c = 0; c < 8; ++c) {
        for (int hw = 0; hw < 9; ++hw) {
          EXPECT_EQ(g[((c / 4) * 9 + hw) * 4 + c % 4], w[c * 9 + hw]) << "c " << c << " hw " << hw;
        }
      }
    }
  }
}

// ---- nn.softmax ----------------------------------------------------------------------------

TEST(SoftmaxTest, MaskInferenceErrors) {
  EXPECT_EQ(Op("nn.softmax")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("nn.softmax")->pattern(), FusionPattern::kOpaque);
  EXPECT_EQ(InferStr("nn.softmax", {}, {In(F32({S("n"), 10}))}), "f32[n, 10]");
  EXPECT_EQ(InferStr("nn.softmax", {{"axis", int64_t{0}}}, {In(F32({3, 10}))}), "f32[3, 10]");
  EXPECT_THAT(InferStr("nn.softmax", {{"axis", int64_t{2}}}, {In(F32({3, 10}))}),
              HasSubstr("axis 2 is out of range"));
  EXPECT_THAT(InferStr("nn.softmax", {}, {In(T(DType::kI32, {3}))}),
              HasSubstr("data must be floating point"));
}

TEST(SoftmaxTest, Reference) {
  auto out = RunRef("nn.softmax", {}, {FT({2, 2}, {0, 0, 1000, 1000 + std::log(3.0)})});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> v = Doubles((*out)[0]);
  EXPECT_NEAR(v[0], 0.5, 1e-6);
  EXPECT_NEAR(v[1], 0.5, 1e-6);
  EXPECT_NEAR(v[2], 0.25, 1e-4);  // stable for large inputs
  EXPECT_NEAR(v[3], 0.75, 1e-4);
  auto col = RunRef("nn.softmax", {{"axis", int64_t{0}}}, {FT({2, 1}, {0, 0})});
  ASSERT_TRUE(col.ok());
  EXPECT_THAT(Doubles((*col)[0]), ElementsAre(0.5, 0.5));
}

// ---- nn.pad / dyn.nn.pad -------------------------------------------------------------------

TEST(PadTest, MaskAndInference) {
  EXPECT_EQ(Op("nn.pad")->dep(0), InputDep::kShape);
  const Attrs a = {{"pad_width", std::vector<int64_t>{0, 0, 1, 2}}};
  EXPECT_EQ(InferStr("nn.pad", a, {In(F32({S("n"), 3}))}), "f32[n, 6]");
  EXPECT_EQ(InferStr("nn.pad", {{"pad_width", std::vector<int64_t>{1, 1, -1, 0}}},
                     {In(F32({S("n"), 3}))}),
            "f32[n + 2, 2]");
}

TEST(PadTest, Errors) {
  EXPECT_THAT(InferStr("nn.pad", {{"pad_width", std::vector<int64_t>{1, 1}}}, {In(F32({2, 3}))}),
              HasSubstr("pad_width needs 4 values"));
  EXPECT_THAT(
      InferStr("nn.pad", {{"pad_width", std::vector<int64_t>{0, 0, -2, -2}}}, {In(F32({2, 3}))}),
      HasSubstr("axis 1 would have negative size -1"));
  EXPECT_THAT(InferStr("nn.pad",
                       {{"pad_width", std::vector<int64_t>{0, 0, 3, 0}},
                        {"pad_mode", std::string("reflect")}},
                       {In(F32({2, 3}))}),
              HasSubstr("reflect padding of axis 1 must be smaller than its size 3"));
  EXPECT_THAT(InferStr("nn.pad",
                       {{"pad_width", std::vector<int64_t>{0, 0}}, {"pad_mode", std::string("x")}},
                       {In(F32({2}))}),
              HasSubstr("pad_mode must be constant, edge or reflect"));
}

TEST(PadTest, ReferenceModes) {
  const Tensor x = FT({3}, {1, 2, 3});
  auto c = RunRef("nn.pad", {{"pad_width", std::vector<int64_t>{2, 1}}, {"pad_value", 9.0}}, {x});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(Doubles((*c)[0]), ElementsAre(9, 9, 1, 2, 3, 9));
  auto e =
      RunRef("nn.pad",
             {{"pad_width", std::vector<int64_t>{2, 1}}, {"pad_mode", std::string("edge")}}, {x});
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(Doubles((*e)[0]), ElementsAre(1, 1, 1, 2, 3, 3));
  auto r = RunRef("nn.pad",
                  {{"pad_width", std::vector<int64_t>{2, 1}}, {"pad_mode", std::string("reflect")}},
                  {x});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Doubles((*r)[0]), ElementsAre(3, 2, 1, 2, 3, 2));
  auto crop = RunRef("nn.pad", {{"pad_width", std::vector<int64_t>{-1, 0}}}, {x});
  ASSERT_TRUE(crop.ok());
  EXPECT_THAT(Doubles((*crop)[0]), ElementsAre(2, 3));
}

// Tests that edge padding of an empty axis is an error, from the shape rule and from the
// kernel called without it, not a read past the data (found by the primitive-mask property
// test: a slice emptied an axis, a dyn.nn.pad in edge mode then extended it).
TEST(PadTest, EdgePaddingOfAnEmptyAxis) {
  const Attrs edge = {{"pad_width", std::vector<int64_t>{1, 1}}, {"pad_mode", std::string("edge")}};
  EXPECT_THAT(InferStr("nn.pad", edge, {In(F32({0}))}),
              HasSubstr("edge padding cannot extend axis 0 of size 0"));
  EXPECT_EQ(InferStr("nn.pad", {{"pad_width", std::vector<int64_t>{1, 1}}}, {In(F32({0}))}),
            "f32[2]");  // constant mode fills
  const Tensor pads = I64s({0, 0, 2, 0});
  EXPECT_THAT(InferStr("dyn.nn.pad", {{"pad_mode", std::string("edge")}},
                       {In(F32({2, 0})), InV(pads), In(F32({}))}),
              HasSubstr("edge padding cannot extend axis 1 of size 0"));
  auto checked = Op("nn.pad")->CheckAttrs(edge);
  ASSERT_TRUE(checked.ok());
  auto out = Op("nn.pad")->reference()({FT({0}, {})}, *checked, {F32({2})});
  EXPECT_FALSE(out.ok());
}

TEST(DynPadTest, MaskFillValueIsNone) {
  const OpDef* def = Op("dyn.nn.pad");
  EXPECT_EQ(def->dep(0), InputDep::kShape);
  EXPECT_EQ(def->dep(1), InputDep::kValue);
  EXPECT_EQ(def->dep(2), InputDep::kNone);
}

TEST(DynPadTest, SymbolicUnknownAndKnownPads) {
  const Tensor fill = FT({}, {0});
  EXPECT_EQ(
      InferStr("dyn.nn.pad", {}, {In(F32({S("n"), 3})), In(T(DType::kI64, {2, 2})), In(F32({}))}),
      "f32[?, ?]");
  const std::vector<DimExpr> pads = {0, S("p"), 1, 1};
  EXPECT_EQ(InferStr("dyn.nn.pad", {}, {In(F32({S("n"), 3})), InSym(pads), In(F32({}))}),
            "f32[n + p, 5]");
}

TEST(DynPadTest, ShapeFunctionAndErrors) {
  const Tensor pads = IT({2, 2}, {1, 0, 0, 2});
  EXPECT_EQ(InferStr("dyn.nn.pad", {}, {In(F32({4, 3})), InV(pads), In(F32({}))}), "f32[5, 5]");
  const Tensor short_pads = I64s({1, 1});
  EXPECT_THAT(InferStr("dyn.nn.pad", {}, {In(F32({4, 3})), InV(short_pads), In(F32({}))}),
              HasSubstr("pad_width needs 4 values"));
  EXPECT_THAT(InferStr("dyn.nn.pad", {}, {In(F32({4, 3})), InV(pads), In(F32({1}))}),
              HasSubstr("pad_value must be a scalar"));
  const Tensor float_pads = FT({4}, {1, 0, 0, 2});
  EXPECT_THAT(InferStr("dyn.nn.pad", {}, {In(F32({4, 3})), InV(float_pads), In(F32({}))}),
              HasSubstr("pad_width must be an integer tensor"));
}

TEST(DynPadTest, Reference) {
  auto out = RunRef("dyn.nn.pad", {}, {FT({2}, {5, 6}), I64s({1, 2}), FT({}, {-1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(-1, 5, 6, -1, -1));
}

}  // namespace
}  // namespace hetpass::testing
