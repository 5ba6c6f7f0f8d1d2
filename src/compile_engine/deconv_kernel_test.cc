// Tests of the transposed-convolution kernel (nn.conv2d_transpose [+ bias_add] [+ relu] on
// oneDNN) against an interpreter of the same primitive function built from the registry's
// reference kernels: strides, 1/2/4-value padding, output_padding, dilation, groups, symbolic
// N/H/W with several batch sizes in one instance, constant (prepacked) and run-time weights,
// Mask R-CNN's mask-head upsampling, and the error paths: the kernel must never abort.
#include "compile_engine/deconv_kernel.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/support/status_macros.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::testing::HasSubstr;

Tensor Random(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0) {
  return ::hetpass::testing::RandomF32(std::move(shape), seed, scale);
}

// Runs `instance` on `params` into a fresh NaN-filled output of `out_shape` (so an element the
// kernel forgets to write shows).
absl::StatusOr<Tensor> RunKernel(KernelInstance& instance, const std::vector<Tensor>& params,
                                 std::vector<int64_t> out_shape) {
  Tensor out = Tensor::Zeros(DType::kF32, out_shape);
  float* o = out.mutable_data_as<float>();
  for (int64_t i = 0; i < out.num_elements(); ++i) o[i] = std::nanf("");
  std::vector<TensorArg> args;
  for (const Tensor& p : params) args.push_back(Arg(p));
  args.push_back(TensorArg{o, DType::kF32, absl::MakeConstSpan(out.shape())});
  RETURN_IF_ERROR(instance.Run(args));
  return out;
}

// Max |got - want| / (1 + |want|); NaN counts as a huge error.
double MaxError(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e30;
  double err = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double e =
        std::abs(got.GetDouble(i) - want.GetDouble(i)) / (1 + std::abs(want.GetDouble(i)));
    err = std::max(err, std::isnan(e) ? 1e30 : e);
  }
  return err;
}

constexpr double kTolerance = 1e-5;

// One transposed-convolution problem: c input channels, oc output channels in total; attributes
// in the text form the registry takes.
struct DeconvCase {
  int64_t c, oc, kh, kw, h, w;
  std::string strides = "[1, 1]";
  std::string padding = "[0, 0]";
  std::string output_padding = "[0, 0]";
  std::string dilation = "[1, 1]";
  int64_t groups = 1;
  bool symbolic_hw = false;  // data declared f32[n, C, h, w] rather than f32[n, C, H, W]
};

std::string CaseName(const DeconvCase& k) {
  return absl::StrCat(k.c, "->", k.oc, " ", k.kh, "x", k.kw, " on ", k.h, "x", k.w,
                      " strides=", k.strides, " padding=", k.padding,
                      " output_padding=", k.output_padding, " dilation=", k.dilation,
                      " groups=", k.groups, k.symbolic_hw ? " (h, w symbolic)" : "");
}

std::vector<int64_t> WeightShape(const DeconvCase& k) { return {k.c, k.oc / k.groups, k.kh, k.kw}; }

// A deconv group for `k`: parameters %x, %w and (with bias) %b; no declared result types.
std::string DeconvFunction(const DeconvCase& k, bool bias, bool relu) {
  const std::string hw = k.symbolic_hw ? "h, w" : absl::StrCat(k.h, ", ", k.w);
  std::string params = absl::StrCat("%x: f32[n, ", k.c, ", ", hw, "], %w: f32[", k.c, ", ",
                                    k.oc / k.groups, ", ", k.kh, ", ", k.kw, "]");
  std::string body =
      absl::StrCat("  %h = nn.conv2d_transpose(%x, %w) {strides = ", k.strides,
                   ", padding = ", k.padding, ", output_padding = ", k.output_padding,
                   ", dilation = ", k.dilation, ", groups = ", k.groups, "}\n");
  std::string last = "%h";
  if (bias) {
    absl::StrAppend(&params, ", %b: f32[", k.oc, "]");
    absl::StrAppend(&body, "  %hb = nn.bias_add(%h, %b) {axis = 1}\n");
    last = "%hb";
  }
  if (relu) {
    absl::StrAppend(&body, "  %a = nn.relu(", last, ")\n");
    last = "%a";
  }
  return absl::StrCat("def @f(", params, ") attributes {primitive = true} {\n", body, "  return ",
                      last, "\n}\n");
}

struct Group {
  std::unique_ptr<Module> module;
  const Function* f = nullptr;
  std::unique_ptr<CompiledKernel> kernel;
};

Group Compile(const std::string& text) {
  Group g;
  g.module = testing::Parse(text);
  if (g.module == nullptr) return g;
  g.f = g.module->FindFunction("f");
  EXPECT_NE(g.f, nullptr);
  if (g.f == nullptr) return g;
  EXPECT_TRUE(IsDeconvGroup(*g.f)) << text;
  auto kernel = CompileDeconvGroup(*g.f);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (kernel.ok()) g.kernel = *std::move(kernel);
  return g;
}

std::vector<const Tensor*> Constants(const std::vector<Tensor>& params, std::vector<bool> which) {
  std::vector<const Tensor*> c;
  for (size_t i = 0; i < params.size(); ++i) c.push_back(which[i] ? &params[i] : nullptr);
  return c;
}

// Checks one instance of `k` against the reference for every batch size in `batches`, with
// constant (weights and bias bound at Instantiate) or run-time weights (new ones each call).
void CheckCase(const DeconvCase& k, bool bias, bool relu, bool constant,
               const std::vector<int64_t>& batches) {
  SCOPED_TRACE(absl::StrCat(CaseName(k), bias ? " +bias" : "", relu ? " +relu" : "",
                            constant ? " constant" : " run-time"));
  Group g = Compile(DeconvFunction(k, bias, relu));
  ASSERT_NE(g.kernel, nullptr);
  const double scale = 1.0 / std::sqrt(static_cast<double>(k.c / k.groups * k.kh * k.kw));
  Tensor w = Random(WeightShape(k), 1, scale);
  Tensor b = Random({k.oc}, 2, 0.5);
  std::vector<Tensor> load = {Tensor(), w};
  if (bias) load.push_back(b);
  std::vector<bool> which = {false, constant};
  if (bias) which.push_back(constant);
  auto instance = g.kernel->Instantiate(Constants(load, which));
  ASSERT_TRUE(instance.ok()) << instance.status();
  uint64_t seed = 10;
  for (int64_t n : batches) {
    SCOPED_TRACE(absl::StrCat("N = ", n));
    if (!constant) {
      w = Random(WeightShape(k), ++seed, scale);
      b = Random({k.oc}, ++seed, 0.5);
    }
    std::vector<Tensor> params = {Random({n, k.c, k.h, k.w}, ++seed), w};
    if (bias) params.push_back(b);
    auto want = Interpret(*g.f, params);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = RunKernel(**instance, params, want->shape());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LE(MaxError(*got, *want), kTolerance);
  }
}

// ---- correctness ---------------------------------------------------------------------------

// Tests Mask R-CNN's mask-head upsampling (2x2, stride 2, [R, 32, 14, 14] -> [R, 4, 28, 28],
// bias and ReLU fused) with constant weights for R = 1, 3, 16 in turn and again 1 (cached).
TEST(DeconvKernelTest, MaskHeadMatchesReferenceForDynamicRoiCount) {
  const DeconvCase k{32, 4, 2, 2, 14, 14, "[2, 2]"};
  Group g = Compile(DeconvFunction(k, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  EXPECT_EQ(g.kernel->Describe(), "onednn conv2d_transpose[bias,relu]");
  CheckCase(k, /*bias=*/true, /*relu=*/true, /*constant=*/true, {1, 3, 16, 1});
}

// Tests that run-time weights are read on every call: new weights and bias each call.
TEST(DeconvKernelTest, RunTimeWeightsMatchReference) {
  CheckCase({8, 6, 3, 3, 9, 7, "[2, 2]", "[1, 1]"}, /*bias=*/true, /*relu=*/false,
            /*constant=*/false, {1, 3, 1});
}

// Tests that constant weights are used from load: the weight and bias arguments at run time
// hold zeros, the result is still that of the constants.
TEST(DeconvKernelTest, ConstantWeightsAreBoundAtLoad) {
  const DeconvCase k{8, 16, 3, 3, 6, 6, "[2, 2]", "[1, 1]"};
  Group g = Compile(DeconvFunction(k, /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({8, 16, 3, 3}, 3, 0.1), b = Random({16}, 4);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = Random({2, 8, 6, 6}, 5);
  auto want = Interpret(*g.f, {x, w, b});
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = RunKernel(
      **instance, {x, Tensor::Zeros(DType::kF32, {8, 16, 3, 3}), Tensor::Zeros(DType::kF32, {16})},
      want->shape());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LE(MaxError(*got, *want), kTolerance);
}

// Tests strides, 1/2/4-value (asymmetric) padding, output_padding below the stride, dilation
// and groups, with symbolic and static H, W, every optional part, constant and run-time
// weights, two batch sizes per instance.
TEST(DeconvKernelTest, AttributeSweepMatchesReference) {
  const std::vector<DeconvCase> cases = {
      {1, 2, 3, 3, 3, 3},                                          // ONNX's test_convtranspose
      {1, 2, 3, 3, 3, 3, "[3, 2]", "[0, 0]", "[1, 1]"},            // test_convtranspose_pad
      {1, 2, 3, 3, 3, 3, "[3, 2]", "[1, 2, 1, 2]"},                // test_convtranspose_pads
      {1, 1, 2, 2, 3, 3, "[1, 1]", "[0, 0]", "[0, 0]", "[2, 2]"},  // test_convtranspose_dilations
      {16, 8, 3, 3, 7, 6, "[2, 2]", "[1]", "[1, 1]", "[1, 1]", 1, /*symbolic_hw=*/true},
      {5, 7, 3, 2, 6, 5, "[2, 3]", "[1, 0, 2, 1]", "[1, 2]", "[1, 1]", 1, true},
      {4, 6, 3, 3, 5, 4, "[1]", "[2]", "[0]", "[2, 3]"},
      {6, 9, 3, 3, 5, 6, "[1, 2]", "[0, 1]", "[0, 1]", "[1, 1]", 3},        // 3 groups
      {8, 8, 3, 3, 6, 6, "[2, 2]", "[1, 1]", "[1, 1]", "[1, 1]", 8, true},  // depthwise
      {4, 4, 1, 1, 5, 5, "[2, 2]"},                                         // 1x1, stride 2
  };
  for (const DeconvCase& k : cases) {
    for (bool constant : {true, false}) {
      for (int parts = 0; parts < 4; ++parts) {
        CheckCase(k, /*bias=*/(parts & 1) != 0, /*relu=*/(parts & 2) != 0, constant, {1, 3});
      }
    }
  }
}

// ---- errors --------------------------------------------------------------------------------

// Tests that mismatched arguments and constants are InvalidArgument errors naming the function
// and the argument.
TEST(DeconvKernelTest, BadArgumentsAreInvalidArgument) {
  const DeconvCase k{3, 4, 3, 3, 6, 6, "[1, 1]", "[0, 0]", "[0, 0]", "[1, 1]", 1, true};
  Group g = Compile(DeconvFunction(k, /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = Random({2, 3, 6, 6}, 1), w = Random({3, 4, 3, 3}, 2), b = Random({4}, 3);
  auto expect_error = [&](absl::StatusOr<Tensor> got, const std::string& what) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr("@f: "));
    EXPECT_THAT(got.status().message(), HasSubstr(what));
  };
  expect_error(
      RunKernel(**instance, {Tensor::Zeros(DType::kF16, {2, 3, 6, 6}), w, b}, {2, 4, 8, 8}),
      "data (%x) must be an f32 tensor of rank 4, got f16[2, 3, 6, 6]");
  expect_error(RunKernel(**instance, {x.Reshaped({6, 6, 6}), w, b}, {2, 4, 8, 8}),
               "data (%x) must be an f32 tensor of rank 4, got f32[6, 6, 6]");
  expect_error(RunKernel(**instance, {x, Random({2, 4, 3, 3}, 4), b}, {2, 4, 8, 8}),
               "data (%x) has 3 channels but weight (%w) [C, OC/groups, KH, KW] has 2");
  expect_error(RunKernel(**instance, {x, w, Random({5}, 4)}, {2, 4, 8, 8}),
               "bias (%b) has 5 elements but weight (%w) has 4 output channels");
  expect_error(RunKernel(**instance, {x, w, b}, {2, 4, 6, 6}),
               "result is [2, 4, 6, 6], expected [2, 4, 8, 8]");
  expect_error(RunKernel(**instance, {x, w}, {2, 4, 8, 8}), "expected 4 arguments");

  const Tensor bad_w = Random({3, 2, 3, 3}, 6);
  std::vector<Tensor> load = {Tensor(), bad_w, b};
  auto bad = g.kernel->Instantiate(Constants(load, {false, true, false}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("@f: constant weight (%w) is f32[3, 2, 3, 3] but the parameter is "
                        "declared"));
  auto wrong_count = g.kernel->Instantiate({nullptr});
  EXPECT_EQ(wrong_count.status().code(), absl::StatusCode::kInvalidArgument);

  // With constant weights, a run-time weight argument of another shape is an error too.
  std::vector<Tensor> good = {Tensor(), w, b};
  auto packed = g.kernel->Instantiate(Constants(good, {false, true, false}));
  ASSERT_TRUE(packed.ok()) << packed.status();
  expect_error(RunKernel(**packed, {x, Random({3, 4, 1, 1}, 7), b}, {2, 4, 6, 6}),
               "weight (%w) is [3, 4, 1, 1] but the constant bound at load is [3, 4, 3, 3]");
}

// ---- matching ------------------------------------------------------------------------------

// Tests that IsDeconvGroup rejects every other body, including output_padding that reaches
// the stride (left to the reference kernel), and that CompileDeconvGroup says so.
TEST(DeconvKernelTest, IsDeconvGroupRejectsOtherBodies) {
  const std::string kHeader =
      "def @f(%x: f32[n, 3, 8, 8], %w: f32[3, 4, 3, 3], %b: f32[4]) "
      "attributes {primitive = true} {\n";
  const std::string kDeconv = "  %h = nn.conv2d_transpose(%x, %w)\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not primitive",
       "def @f(%x: f32[n, 3, 8, 8], %w: f32[3, 4, 3, 3]) {\n" + kDeconv + "  return %h\n}\n"},
      {"conv2d",
       "def @f(%x: f32[n, 3, 8, 8], %w: f32[4, 3, 3, 3]) attributes {primitive = true} {\n"
       "  %h = nn.conv2d(%x, %w)\n  return %h\n}\n"},
      {"output_padding = stride",
       kHeader + "  %h = nn.conv2d_transpose(%x, %w) {output_padding = [1, 1]}\n  return %h\n}\n"},
      {"output_padding from dilation",
       kHeader + "  %h = nn.conv2d_transpose(%x, %w) {strides = [1, 1], dilation = [2, 2], "
                 "output_padding = [1, 0]}\n  return %h\n}\n"},
      {"bias on axis 2",
       kHeader + kDeconv + "  %hb = nn.bias_add(%h, %b) {axis = 2}\n  return %hb\n}\n"},
      {"relu before bias_add", kHeader + kDeconv +
                                   "  %a = nn.relu(%h)\n"
                                   "  %hb = nn.bias_add(%a, %b)\n  return %hb\n}\n"},
      {"then sigmoid", kHeader + kDeconv + "  %s = sigmoid(%h)\n  return %s\n}\n"},
      {"data is not a parameter",
       "def @f(%x: f32[n, 3, 8, 8], %w: f32[3, 4, 3, 3]) attributes {primitive = true} {\n"
       "  %e = exp(%x)\n  %h = nn.conv2d_transpose(%e, %w)\n  return %h\n}\n"},
  };
  for (const auto& [what, text] : cases) {
    SCOPED_TRACE(what);
    auto module = ParseModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    const Function* f = (*module)->FindFunction("f");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(IsDeconvGroup(*f));
    auto kernel = CompileDeconvGroup(*f);
    EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(kernel.status().message(), HasSubstr("@f: not a deconv group"));
  }
}

}  // namespace
}  // namespace hetpass
