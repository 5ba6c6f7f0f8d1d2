// Tests of the conv2d kernel (nn.conv2d [+ bias_add] [+ relu] on oneDNN) against an interpreter
// of the same primitive function built from the registry's reference kernels: strides,
// 1/2/4-value padding, dilation, groups (plain, grouped, depthwise), symbolic N/H/W with several
// batch sizes in one instance, constant (prepacked) and run-time weights, the convolutions of
// shared/models/resnet_tiny_dynamic_batch, and every error path: the kernel must never abort.
#include "compile_engine/conv_kernel.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/shape_funcs/op_registry.h"
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

// ---- helpers -------------------------------------------------------------------------------




// Runs `instance` on `params` into a fresh NaN-filled output of `out_shape`.
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

// One convolution problem; attributes in the text form the registry takes.
struct ConvCase {
  int64_t c, oc, kh, kw, h, w;
  std::string strides = "[1, 1]";
  std::string padding = "[0, 0]";
  std::string dilation = "[1, 1]";
  int64_t groups = 1;
  bool symbolic_hw = false;  // data declared f32[n, C, h, w] rather than f32[n, C, H, W]
};

std::string CaseName(const ConvCase& k) {
  return absl::StrCat(k.c, "->", k.oc, " ", k.kh, "x", k.kw, " on ", k.h, "x", k.w,
                      " strides=", k.strides, " padding=", k.padding, " dilation=", k.dilation,
                      " groups=", k.groups, k.symbolic_hw ? " (h, w symbolic)" : "");
}

// A conv group for `k`: parameters %x, %w and (with bias) %b; no declared result types.
std::string ConvFunction(const ConvCase& k, bool bias, bool relu) {
  const std::string hw = k.symbolic_hw ? "h, w" : absl::StrCat(k.h, ", ", k.w);
  std::string params = absl::StrCat("%x: f32[n, ", k.c, ", ", hw, "], %w: f32[", k.oc, ", ",
                                    k.c / k.groups, ", ", k.kh, ", ", k.kw, "]");
  std::string body =
      absl::StrCat("  %h = nn.conv2d(%x, %w) {strides = ", k.strides, ", padding = ", k.padding,
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

// `infer`: run infer-types first (the residual matcher compares the running value's type,
// which the pipeline has inferred by the time the engine sees a group).
Group Compile(const std::string& text, bool infer = false) {
  Group g;
  g.module = testing::Parse(text);
  if (g.module == nullptr) return g;
  if (infer) {
    auto typed = testing::RunPipeline(*g.module, "infer-types");
    EXPECT_TRUE(typed.ok()) << typed.status();
  }
  g.f = g.module->FindFunction("f");
  EXPECT_NE(g.f, nullptr);
  if (g.f == nullptr) return g;
  EXPECT_TRUE(IsConvGroup(*g.f)) << text;
  auto kernel = CompileConvGroup(*g.f);
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
void CheckCase(const ConvCase& k, bool bias, bool relu, bool constant,
               const std::vector<int64_t>& batches) {
  SCOPED_TRACE(absl::StrCat(CaseName(k), bias ? " +bias" : "", relu ? " +relu" : "",
                            constant ? " constant" : " run-time"));
  Group g = Compile(ConvFunction(k, bias, relu));
  ASSERT_NE(g.kernel, nullptr);
  const double scale = 1.0 / std::sqrt(static_cast<double>(k.c / k.groups * k.kh * k.kw));
  Tensor w = Random({k.oc, k.c / k.groups, k.kh, k.kw}, 1, scale);
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
      w = Random({k.oc, k.c / k.groups, k.kh, k.kw}, ++seed, scale);
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

// Tests that one instance with constant (prepacked) weights and bias matches the reference for
// N = 1, 3, 4 in turn and again for N = 1 (a cached primitive).
TEST(ConvKernelTest, ConstantWeightsMatchReferenceForDynamicBatch) {
  const ConvCase k{3, 16, 3, 3, 32, 32, "[1, 1]", "[1, 1]"};
  Group g = Compile(ConvFunction(k, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  EXPECT_EQ(g.kernel->Describe(), "onednn conv2d[bias,relu] packed");
  CheckCase(k, /*bias=*/true, /*relu=*/true, /*constant=*/true, {1, 3, 4, 1});
}

// Tests that run-time weights are read on every call: new weights and bias each call.
TEST(ConvKernelTest, RunTimeWeightsMatchReferenceForDynamicBatch) {
  CheckCase({16, 32, 3, 3, 32, 32, "[2, 2]", "[1, 1]"}, /*bias=*/true, /*relu=*/true,
            /*constant=*/false, {1, 3, 4, 1});
}

// Tests that constant weights are packed at load and used from there: the weight and bias
// arguments at run time hold zeros, the result is still that of the constants.
TEST(ConvKernelTest, ConstantWeightsArePackedAtLoad) {
  const ConvCase k{8, 16, 3, 3, 10, 10, "[1, 1]", "[1, 1]"};
  Group g = Compile(ConvFunction(k, /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({16, 8, 3, 3}, 3, 0.1), b = Random({16}, 4);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = Random({2, 8, 10, 10}, 5);
  auto got = RunKernel(
      **instance, {x, Tensor::Zeros(DType::kF32, {16, 8, 3, 3}), Tensor::Zeros(DType::kF32, {16})},
      {2, 16, 10, 10});
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = Interpret(*g.f, {x, w, b});
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxError(*got, *want), kTolerance);
}

// Tests strides, 1/2/4-value padding (asymmetric, and padding the floor division drops),
// dilation, grouped and depthwise convolutions, with symbolic and static H, W, every optional
// part, constant and run-time weights, two batch sizes per instance.
TEST(ConvKernelTest, AttributeSweepMatchesReference) {
  const std::vector<ConvCase> cases = {
      {3, 16, 3, 3, 32, 32, "[1, 1]", "[1, 1]"},
      {16, 32, 3, 3, 17, 16, "[2, 2]", "[1, 1]", "[1, 1]", 1, /*symbolic_hw=*/true},
      {16, 32, 1, 1, 32, 32, "[2, 2]", "[0, 0]"},
      {5, 7, 3, 2, 11, 9, "[2, 3]", "[1, 0, 2, 1]", "[1, 1]", 1, true},
      {4, 6, 3, 3, 13, 12, "[1]", "[2]", "[2, 3]"},
      {3, 4, 3, 3, 8, 9, "[3, 3]", "[0, 0, 2, 2]", "[2, 2]", 1, true},
      {4, 4, 5, 5, 5, 5},                                          // a 1x1 output
      {8, 8, 3, 3, 10, 10, "[1, 1]", "[1, 1]", "[1, 1]", 8},       // depthwise
      {8, 16, 3, 3, 9, 9, "[2, 2]", "[1, 1]", "[1, 1]", 8, true},  // depthwise, multiplier 2
      {6, 9, 3, 3, 7, 8, "[1, 2]", "[0, 1]", "[1, 1]", 3},         // 3 groups
      {12, 8, 1, 3, 6, 7, "[1, 1]", "[0, 1, 0, 0]", "[1, 2]", 4, true},
  };
  for (const ConvCase& k : cases) {
    for (bool constant : {true, false}) {
      for (int parts = 0; parts < 4; ++parts) {
        CheckCase(k, /*bias=*/(parts & 1) != 0, /*relu=*/(parts & 2) != 0, constant, {1, 3});
      }
    }
  }
}

// Tests every convolution shape of shared/models/resnet_tiny_dynamic_batch (stem 3->16, three
// stages of two BasicBlocks at 16/32/64 channels with 3x3 convs, stride-2 3x3 and 1x1
// downsampling convs; BatchNorm folded into a bias; ReLU after all but the second conv of a
// block) at the model's two batch sizes (1 and 4) in one instance.
TEST(ConvKernelTest, ResnetTinyConvolutionsMatchReference) {
  struct ResnetConv {
    ConvCase k;
    bool relu;
  };
  const std::vector<ResnetConv> convs = {
      {{3, 16, 3, 3, 32, 32, "[1, 1]", "[1, 1]"}, true},    // stem
      {{16, 16, 3, 3, 32, 32, "[1, 1]", "[1, 1]"}, true},   // stage 1, conv1
      {{16, 16, 3, 3, 32, 32, "[1, 1]", "[1, 1]"}, false},  // stage 1, conv2 (add, relu follow)
      {{16, 32, 3, 3, 32, 32, "[2, 2]", "[1, 1]"}, true},   // stage 2, block 1 conv1
      {{16, 32, 1, 1, 32, 32, "[2, 2]", "[0, 0]"}, false},  // stage 2 downsample
      {{32, 32, 3, 3, 16, 16, "[1, 1]", "[1, 1]"}, true},
      {{32, 32, 3, 3, 16, 16, "[1, 1]", "[1, 1]"}, false},
      {{32, 64, 3, 3, 16, 16, "[2, 2]", "[1, 1]"}, true},   // stage 3, block 1 conv1
      {{32, 64, 1, 1, 16, 16, "[2, 2]", "[0, 0]"}, false},  // stage 3 downsample
      {{64, 64, 3, 3, 8, 8, "[1, 1]", "[1, 1]"}, true},
      {{64, 64, 3, 3, 8, 8, "[1, 1]", "[1, 1]"}, false},
  };
  for (const ResnetConv& c : convs) {
    CheckCase(c.k, /*bias=*/true, c.relu, /*constant=*/true, {1, 4});
  }
}

// ---- blocked channel layouts (block-conv-layout's convolutions) ---------------------------

// One conv group with data in NCHW<in_block>c and the result in NCHW<out_block>c (0 = NCHW),
// stride 1 unless given, padding [p, p]; the bias in block-conv-layout's form, an add of
// [OC/b, 1, 1, b] (or nn.bias_add for an NCHW result).
struct BlockedCase {
  int64_t c, oc, k, h, in_block, out_block;
  int64_t stride = 1, pad = 1;
  bool bias = true, relu = true;
  int64_t groups = 1;
};

std::vector<int64_t> DataShape(int64_t n, int64_t c, int64_t h, int64_t block) {
  if (block == 0) return {n, c, h, h};
  return {n, c / block, h, h, block};
}

std::string Layout(int64_t block) { return block == 0 ? "NCHW" : absl::StrCat("NCHW", block, "c"); }

std::string BlockedFunction(const BlockedCase& k) {
  const std::vector<int64_t> x = DataShape(1, k.c, k.h, k.in_block);
  std::string xs = "n";
  for (size_t i = 1; i < x.size(); ++i) absl::StrAppend(&xs, ", ", x[i]);
  std::string params = absl::StrCat("%x: f32[", xs, "], %w: f32[", k.oc, ", ", k.c / k.groups, ", ",
                                    k.k, ", ", k.k, "]");
  std::string body = absl::StrCat("  %h = nn.conv2d(%x, %w) {strides = [", k.stride, ", ", k.stride,
                                  "], padding = [", k.pad, ", ", k.pad, "], groups = ", k.groups,
                                  ", data_layout = \"", Layout(k.in_block), "\", out_layout = \"",
                                  Layout(k.out_block), "\"}\n");
  std::string last = "%h";
  if (k.bias && k.out_block > 0) {
    absl::StrAppend(&params, ", %b: f32[", k.oc / k.out_block, ", 1, 1, ", k.out_block, "]");
    absl::StrAppend(&body, "  %hb = add(%h, %b)\n");
    last = "%hb";
  } else if (k.bias) {
    absl::StrAppend(&params, ", %b: f32[", k.oc, "]");
    absl::StrAppend(&body, "  %hb = nn.bias_add(%h, %b)\n");
    last = "%hb";
  }
  if (k.relu) {
    absl::StrAppend(&body, "  %a = nn.relu(", last, ")\n");
    last = "%a";
  }
  return absl::StrCat("def @f(", params, ") attributes {primitive = true} {\n", body, "  return ",
                      last, "\n}\n");
}

// Runs `k` at N = 1 and 2 in one instance (constant weights and bias) against the reference,
// which computes the layouts on logical elements (nn.cc).
void CheckBlocked(const BlockedCase& k, const std::string& describe = "") {
  const std::string text = BlockedFunction(k);
  SCOPED_TRACE(text);
  Group g = Compile(text);
  ASSERT_NE(g.kernel, nullptr);
  if (!describe.empty()) EXPECT_EQ(g.kernel->Describe(), describe);
  const Tensor w = Random({k.oc, k.c / k.groups, k.k, k.k}, 1,
                          1.0 / std::sqrt(double(k.c / k.groups * k.k * k.k)));
  const Tensor b = k.out_block > 0 ? Random({k.oc / k.out_block, 1, 1, k.out_block}, 2, 0.5)
                                   : Random({k.oc}, 2, 0.5);
  std::vector<Tensor> load = {Tensor(), w};
  if (k.bias) load.push_back(b);
  std::vector<bool> which = {false, true};
  if (k.bias) which.push_back(true);
  auto instance = g.kernel->Instantiate(Constants(load, which));
  ASSERT_TRUE(instance.ok()) << instance.status();
  for (int64_t n : {1, 2}) {
    std::vector<Tensor> params = {Random(DataShape(n, k.c, k.h, k.in_block), 10 + n), w};
    if (k.bias) params.push_back(b);
    auto want = Interpret(*g.f, params);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = RunKernel(**instance, params, want->shape());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LE(MaxError(*got, *want), kTolerance) << "N = " << n;
  }
}

// Tests resnet_tiny's convolutions as block-conv-layout writes them: the stem from NCHW into
// NCHW16c, chains in NCHW16c (direct at 16 channels, Winograd at 32 and 64), strided and 1x1
// downsampling, and a result back in NCHW; a bias-free one; blocks of 8 and 4.
TEST(ConvKernelTest, BlockedLayoutsMatchReference) {
  CheckBlocked({3, 16, 3, 32, 0, 16}, "onednn conv2d[bias,relu] NCHW->NCHW16c packed");
  CheckBlocked({16, 16, 3, 32, 16, 16}, "onednn conv2d[bias,relu] NCHW16c->NCHW16c packed");
  CheckBlocked({32, 32, 3, 16, 16, 16},
               PreferredConvBlock(DeviceKind::kCpu) == 16  // AVX-512
                   ? "onednn conv2d[bias,relu] NCHW16c->NCHW16c winograd from run 2 packed"
                   : "onednn conv2d[bias,relu] NCHW16c->NCHW16c packed");
  CheckBlocked({64, 64, 3, 8, 16, 16});
  CheckBlocked({16, 32, 3, 32, 16, 16, /*stride=*/2});
  CheckBlocked({32, 64, 1, 16, 16, 16, /*stride=*/2, /*pad=*/0, /*bias=*/true, /*relu=*/false});
  CheckBlocked({64, 32, 1, 8, 16, 0, 1, 0}, "onednn conv2d[bias,relu] NCHW16c->NCHW packed");
  CheckBlocked({32, 48, 3, 9, 16, 16, 1, 1, /*bias=*/false, /*relu=*/false});
  CheckBlocked({8, 16, 3, 10, 8, 8});
  CheckBlocked({4, 8, 3, 7, 4, 4, 2});
  CheckBlocked({16, 8, 3, 7, 8, 4});
}

// A blocked conv group whose epilogue is bias, a residual add (the skip connection, operand
// order `residual_first`) and relu, as fuse-ops groups a ResNet block's last convolution.
std::string ResidualFunction(int64_t c, int64_t oc, int64_t k, int64_t h, bool residual_first,
                             bool bias = true) {
  const std::string y = absl::StrCat("f32[n, ", oc / 16, ", ", h, ", ", h, ", 16]");
  std::string params = absl::StrCat("%x: f32[n, ", c / 16, ", ", h, ", ", h, ", 16], %w: f32[", oc,
                                    ", ", c, ", ", k, ", ", k, "]");
  std::string body = absl::StrCat("  %h = nn.conv2d(%x, %w) {padding = [", k / 2, ", ", k / 2,
                                  "], data_layout = \"NCHW16c\", out_layout = \"NCHW16c\"}\n");
  std::string last = "%h";
  if (bias) {
    absl::StrAppend(&params, ", %b: f32[", oc / 16, ", 1, 1, 16]");
    absl::StrAppend(&body, "  %hb = add(%h, %b)\n");
    last = "%hb";
  }
  absl::StrAppend(&params, ", %r: ", y);
  absl::StrAppend(&body, "  %s = add(", residual_first ? "%r, " : "", last,
                  residual_first ? "" : ", %r", ")\n  %a = nn.relu(%s)\n");
  return absl::StrCat("def @f(", params, ") attributes {primitive = true} {\n", body,
                      "  return %a\n}\n");
}

// Tests the residual add fused as oneDNN's sum post-op: a 1x1 expansion (ResNet-50's
// bottleneck), a 3x3 (a basic block's, Winograd from the second run on AVX-512), either
// operand order, without a bias; each run at N = 1 and 2 and three times in one instance
// (the result buffer is refilled with the residual every call); the residual's shape is
// checked; and groups the kernel does not fuse (a broadcast add, a residual on an NCHW
// result) are not taken whole.
TEST(ConvKernelTest, ResidualAddIsFusedAsSumPostOp) {
  struct Case {
    int64_t c, oc, k, h;
    bool residual_first, bias;
    std::string describe;
  };
  const bool wino = PreferredConvBlock(DeviceKind::kCpu) == 16;
  const Case cases[] = {
      {64, 256, 1, 7, false, true, "onednn conv2d[bias,residual,relu] NCHW16c->NCHW16c packed"},
      {32, 32, 3, 8, true, true,
       wino ? "onednn conv2d[bias,residual,relu] NCHW16c->NCHW16c winograd from run 2 packed"
            : "onednn conv2d[bias,residual,relu] NCHW16c->NCHW16c packed"},
      {16, 32, 3, 5, false, false, "onednn conv2d[residual,relu] NCHW16c->NCHW16c packed"},
  };
  for (const Case& k : cases) {
    const std::string text = ResidualFunction(k.c, k.oc, k.k, k.h, k.residual_first, k.bias);
    SCOPED_TRACE(text);
    Group g = Compile(text, /*infer=*/true);
    ASSERT_NE(g.kernel, nullptr);
    EXPECT_EQ(g.kernel->Describe(), k.describe);
    const Tensor w = Random({k.oc, k.c, k.k, k.k}, 1, 1.0 / std::sqrt(double(k.c * k.k * k.k)));
    const Tensor b = Random({k.oc / 16, 1, 1, 16}, 2, 0.5);
    std::vector<Tensor> load = {Tensor(), w};
    std::vector<bool> which = {false, true};
    if (k.bias) {
      load.push_back(b);
      which.push_back(true);
    }
    load.push_back(Tensor());
    which.push_back(false);
    auto instance = g.kernel->Instantiate(Constants(load, which));
    ASSERT_TRUE(instance.ok()) << instance.status();
    for (int64_t n : {1, 2}) {
      std::vector<Tensor> params = {Random({n, k.c / 16, k.h, k.h, 16}, 10 + n), w};
      if (k.bias) params.push_back(b);
      params.push_back(Random({n, k.oc / 16, k.h, k.h, 16}, 20 + n));
      auto want = Interpret(*g.f, params);
      ASSERT_TRUE(want.ok()) << want.status();
      for (int run = 0; run < 3; ++run) {
        auto got = RunKernel(**instance, params, want->shape());
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_LE(MaxError(*got, *want), kTolerance) << "N = " << n << ", run " << run + 1;
      }
    }
    // A residual of another shape is an error naming it.
    std::vector<Tensor> bad = {Random({1, k.c / 16, k.h, k.h, 16}, 3), w};
    if (k.bias) bad.push_back(b);
    bad.push_back(Random({2, k.oc / 16, k.h, k.h, 16}, 4));
    auto got = RunKernel(**instance, bad, {1, k.oc / 16, k.h, k.h, 16});
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(), HasSubstr("residual (%r)"));
  }
  // Not taken whole: an add that broadcasts ([1, 2, 1, 1, 16] is not the result's type), and
  // a residual on an NCHW result.
  const std::string broadcast =
      "def @f(%x: f32[1, 1, 4, 4, 16], %w: f32[32, 16, 1, 1], %r: f32[1, 2, 1, 1, 16]) attributes "
      "{primitive = true} {\n  %h = nn.conv2d(%x, %w) {data_layout = \"NCHW16c\", out_layout = "
      "\"NCHW16c\"}\n  %s = add(%h, %r)\n  return %s\n}\n";
  const std::string nchw =
      "def @f(%x: f32[1, 16, 4, 4], %w: f32[32, 16, 1, 1], %r: f32[1, 32, 4, 4]) attributes "
      "{primitive = true} {\n  %h = nn.conv2d(%x, %w)\n  %s = add(%h, %r)\n  return %s\n}\n";
  for (const std::string& text : {broadcast, nchw}) {
    SCOPED_TRACE(text);
    auto m = testing::Parse(text);
    ASSERT_NE(m, nullptr);
    ASSERT_TRUE(testing::RunPipeline(*m, "infer-types").ok());
    EXPECT_FALSE(IsConvGroup(*m->FindFunction("f")));
  }
}

// Tests the Winograd tiering: one shape run four times in one instance (direct first, Winograd
// from run kWinogradAfterRuns on), every run against the reference, while another thread runs
// the same instance.
TEST(ConvKernelTest, WinogradTierUpKeepsResults) {
  const BlockedCase k{64, 64, 3, 8, 16, 16};
  Group g = Compile(BlockedFunction(k));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({64, 64, 3, 3}, 1, 1.0 / 24), b = Random({4, 1, 1, 16}, 2, 0.5);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  const std::vector<Tensor> params = {Random({2, 4, 8, 8, 16}, 3), w, b};
  auto want = Interpret(*g.f, params);
  ASSERT_TRUE(want.ok()) << want.status();
  double other = 0;
  std::thread t([&] {
    for (int i = 0; i < 4; ++i) {
      auto got = RunKernel(**instance, params, want->shape());
      other = std::max(other, got.ok() ? MaxError(*got, *want) : 1e30);
    }
  });
  for (int i = 0; i < 4; ++i) {
    auto got = RunKernel(**instance, params, want->shape());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LE(MaxError(*got, *want), kTolerance) << "run " << i + 1;
  }
  t.join();
  EXPECT_LE(other, kTolerance);
}

// Tests that an instance holds its constant weights once (onednn_common.h, PackedWeight): it
// keeps no share of the bytes as stored after the pack at load, reports them Absorbed (not the
// bias), and runs from its packs with a weight argument that has no data, through the
// Winograd tier-up, whose layout is reordered from the first pack.
TEST(ConvKernelTest, PackedWeightsAreHeldOnceThroughTheWinogradTier) {
  const BlockedCase k{64, 64, 3, 8, 16, 16};
  Group g = Compile(BlockedFunction(k));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({64, 64, 3, 3}, 11, 1.0 / 24), b = Random({4, 1, 1, 16}, 12, 0.5);
  // The weights again (same seed), in bytes of their own that only `load` holds.
  std::vector<Tensor> load = {Tensor(), Random({64, 64, 3, 3}, 11, 1.0 / 24), b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_FALSE((*instance)->Absorbed(0));
  EXPECT_TRUE((*instance)->Absorbed(1));
  EXPECT_FALSE((*instance)->Absorbed(2));
  ASSERT_TRUE(load[1].ReleaseIfUnshared());  // no share left in the instance
  const Tensor x = Random({2, 4, 8, 8, 16}, 13);
  auto want = Interpret(*g.f, {x, w, b});
  ASSERT_TRUE(want.ok()) << want.status();
  for (int i = 0; i < conv_kernel_internal::kWinogradAfterRuns + 2; ++i) {
    auto got = RunKernel(**instance, {x, load[1], b}, want->shape());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LE(MaxError(*got, *want), kTolerance) << "run " << i + 1;
  }
}

// Tests grouped convolutions in NCHW16c as block-conv-layout writes them: depthwise (with and
// without a channel multiplier, strided) and groups of whole blocks.
TEST(ConvKernelTest, BlockedGroupedAndDepthwiseMatchReference) {
  CheckBlocked({32, 32, 3, 10, 16, 16, 1, 1, true, true, /*groups=*/32});
  CheckBlocked({32, 32, 3, 10, 16, 16, /*stride=*/2, 1, true, false, /*groups=*/32});
  CheckBlocked({16, 32, 3, 9, 16, 16, 1, 1, true, true, /*groups=*/16});
  CheckBlocked({64, 64, 1, 6, 16, 16, 1, 0, true, true, /*groups=*/2});
  CheckBlocked({32, 64, 3, 6, 16, 16, 1, 1, false, false, /*groups=*/2});
}

// Tests a layout pair with no optimised oneDNN kernel (24 NCHW channels into NCHW16c: oneDNN
// offers only its reference implementation, ~100x slower): the kernel falls back to its own
// choice with reorders, and the result is still right.
TEST(ConvKernelTest, BlockedLayoutWithoutAFastKernelReorders) {
  CheckBlocked({24, 32, 3, 12, 0, 16});
}

// Tests that a data argument not in the declared block is refused with its shape.
TEST(ConvKernelTest, BlockedDataOfAnotherBlockIsAnError) {
  Group g = Compile(BlockedFunction({16, 16, 3, 8, 16, 16}));
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  auto got = RunKernel(
      **instance, {Random({1, 2, 8, 8, 8}, 1), Random({16, 16, 3, 3}, 2), Random({1, 1, 1, 16}, 3)},
      {1, 1, 8, 8, 16});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("not in NCHW16c"));
}

// Tests that parameters may come in any order (the bias first, the weights last).
TEST(ConvKernelTest, ParameterOrderIsFree) {
  Group g = Compile(
      "def @f(%b: f32[4], %x: f32[n, 3, 6, 6], %w: f32[4, 3, 3, 3]) "
      "attributes {primitive = true} {\n"
      "  %h = nn.conv2d(%x, %w) {padding = [1, 1]}\n"
      "  %hb = nn.bias_add(%h, %b)\n"
      "  %a = nn.relu(%hb)\n  return %a\n}\n");
  ASSERT_NE(g.kernel, nullptr);
  const std::vector<Tensor> params = {Random({4}, 1), Random({2, 3, 6, 6}, 2),
                                      Random({4, 3, 3, 3}, 3, 0.2)};
  auto instance = g.kernel->Instantiate(Constants(params, {true, false, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  auto got = RunKernel(**instance, params, {2, 4, 6, 6});
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = Interpret(*g.f, params);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxError(*got, *want), kTolerance);
}

// Tests that several threads can run one instance at once, over several batch sizes.
TEST(ConvKernelTest, ConcurrentRunsShareOneInstance) {
  const ConvCase k{4, 8, 3, 3, 8, 8, "[1, 1]", "[1, 1]"};
  Group g = Compile(ConvFunction(k, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({8, 4, 3, 3}, 1, 0.2), b = Random({8}, 2);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  std::vector<std::vector<Tensor>> params;
  std::vector<Tensor> want;
  for (int64_t n = 1; n <= 3; ++n) {
    params.push_back({Random({n, 4, 8, 8}, 10 + n), w, b});
    auto r = Interpret(*g.f, params.back());
    ASSERT_TRUE(r.ok()) << r.status();
    want.push_back(*r);
  }
  std::vector<double> errors(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int j = (t + i) % 3;
        auto got = RunKernel(**instance, params[j], want[j].shape());
        errors[t] = std::max(errors[t], got.ok() ? MaxError(*got, want[j]) : 1e30);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (double e : errors) EXPECT_LE(e, kTolerance);
}

// Tests empty dims: N = 0 writes nothing; C = 0 (an empty sum) gives the ReLU'd bias.
TEST(ConvKernelTest, EmptyDims) {
  Group g = Compile(ConvFunction({0, 4, 3, 3, 5, 5, "[1, 1]", "[1, 1]", "[1, 1]", 1, true},
                                 /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  const std::vector<Tensor> params = {Random({2, 0, 5, 5}, 1), Random({4, 0, 3, 3}, 2),
                                      Random({4}, 3)};
  auto got = RunKernel(**instance, params, {2, 4, 5, 5});
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = Interpret(*g.f, params);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxError(*got, *want), kTolerance);

  const std::vector<Tensor> empty_batch = {Random({0, 0, 5, 5}, 4), params[1], params[2]};
  auto none = RunKernel(**instance, empty_batch, {0, 4, 5, 5});
  EXPECT_TRUE(none.ok()) << none.status();
}

// ---- errors --------------------------------------------------------------------------------

// Tests that data whose channels do not match the weights (times the groups) is an
// InvalidArgument naming both, at run time and, for constant weights, at load.
TEST(ConvKernelTest, ChannelMismatchIsInvalidArgument) {
  Group g = Compile(
      "def @f(%x: f32[n, c, h, w], %w: f32[o, i, 3, 3]) attributes {primitive = true} {\n"
      "  %h = nn.conv2d(%x, %w) {padding = [1, 1], groups = 2}\n  return %h\n}\n");
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  auto got =
      RunKernel(**instance, {Random({1, 5, 6, 6}, 1), Random({4, 3, 3, 3}, 2)}, {1, 4, 6, 6});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
  EXPECT_THAT(got.status().message(),
              HasSubstr("@f: nn.conv2d channels differ: data (%x) has 5 channels but weight (%w) "
                        "expects 6 (3 x 2 groups)"));
  // Output channels not divisible by the groups.
  auto odd =
      RunKernel(**instance, {Random({1, 6, 6, 6}, 1), Random({5, 3, 3, 3}, 2)}, {1, 5, 6, 6});
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument) << odd.status();
  EXPECT_THAT(odd.status().message(),
              HasSubstr("weight (%w) has 5 output channels, not divisible by 2 groups"));
  // The correct shapes run.
  const std::vector<Tensor> good = {Random({1, 6, 6, 6}, 3), Random({4, 3, 3, 3}, 4, 0.2)};
  auto ok = RunKernel(**instance, good, {1, 4, 6, 6});
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto want = Interpret(*g.f, good);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxError(*ok, *want), kTolerance);

  // Static channels against constant weights: rejected at load.
  Group s = Compile(
      "def @f(%x: f32[n, 5, h, w], %w: f32[o, i, 3, 3]) attributes {primitive = true} {\n"
      "  %h = nn.conv2d(%x, %w) {padding = [1, 1]}\n  return %h\n}\n");
  ASSERT_NE(s.kernel, nullptr);
  const Tensor w4 = Random({8, 4, 3, 3}, 5);
  auto bad = s.kernel->Instantiate({nullptr, &w4});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_THAT(bad.status().message(),
              HasSubstr("@f: data (%x) is declared f32[n, 5, h, w] but constant weight (%w) "
                        "[8, 4, 3, 3] expects 4 channels"));
}

// Tests the other argument errors: dtype, count, rank, bias size, result shape, a window
// larger than the padded input, constants that contradict the declared types.
TEST(ConvKernelTest, BadArgumentsAreInvalidArgument) {
  Group g = Compile(ConvFunction({3, 4, 3, 3, 6, 6, "[1, 1]", "[0, 0]", "[1, 1]", 1, true},
                                 /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = Random({2, 3, 6, 6}, 1), w = Random({4, 3, 3, 3}, 2), b = Random({4}, 3);
  auto expect_error = [&](absl::StatusOr<Tensor> got, const std::string& what) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr("@f: "));
    EXPECT_THAT(got.status().message(), HasSubstr(what));
  };
  expect_error(
      RunKernel(**instance, {Tensor::Zeros(DType::kF16, {2, 3, 6, 6}), w, b}, {2, 4, 4, 4}),
      "data (%x) must be an f32 tensor of rank 4, got f16[2, 3, 6, 6]");
  expect_error(RunKernel(**instance, {x.Reshaped({6, 6, 6}), w, b}, {2, 4, 4, 4}),
               "data (%x) must be an f32 tensor of rank 4, got f32[6, 6, 6]");
  expect_error(RunKernel(**instance, {x, w, Random({5}, 4)}, {2, 4, 4, 4}),
               "bias (%b) has 5 elements but weight (%w) has 4 output channels");
  expect_error(RunKernel(**instance, {x, w, b}, {2, 4, 6, 6}),
               "result is [2, 4, 6, 6], expected [2, 4, 4, 4]");
  expect_error(RunKernel(**instance, {x, w}, {2, 4, 4, 4}), "expected 4 arguments");
  expect_error(RunKernel(**instance, {Random({1, 3, 2, 6}, 5), w, b}, {1, 4, 1, 4}),
               "nn.conv2d window [3, 3] (dilation [1, 1]) is larger than data (%x) padded by "
               "[0, 0, 0, 0]");

  const Tensor bad_w = Random({4, 2, 3, 3}, 6);
  std::vector<Tensor> load = {Tensor(), bad_w, b};
  auto bad = g.kernel->Instantiate(Constants(load, {false, true, false}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("@f: constant weight (%w) is f32[4, 2, 3, 3] but the parameter is "
                        "declared"));
  auto wrong_count = g.kernel->Instantiate({nullptr});
  EXPECT_EQ(wrong_count.status().code(), absl::StatusCode::kInvalidArgument);

  // With constant weights, a run-time weight argument of another shape is an error too.
  std::vector<Tensor> good = {Tensor(), w, b};
  auto packed = g.kernel->Instantiate(Constants(good, {false, true, false}));
  ASSERT_TRUE(packed.ok()) << packed.status();
  expect_error(RunKernel(**packed, {x, Random({4, 3, 1, 1}, 7), b}, {2, 4, 6, 6}),
               "weight (%w) is [4, 3, 1, 1] but the constant bound at load is [4, 3, 3, 3]");
}

// ---- matching ------------------------------------------------------------------------------

// Tests that IsConvGroup rejects every body other than conv2d [-> bias_add(axis 1)] [-> relu]
// over f32 NCHW/OIHW parameters, and that CompileConvGroup says so naming the function.
TEST(ConvKernelTest, IsConvGroupRejectsOtherBodies) {
  const std::string kHeader =
      "def @f(%x: f32[n, 3, 8, 8], %w: f32[4, 3, 3, 3], %b: f32[4]) "
      "attributes {primitive = true} {\n";
  const std::string kConv = "  %h = nn.conv2d(%x, %w)\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not primitive",
       "def @f(%x: f32[n, 3, 8, 8], %w: f32[4, 3, 3, 3]) {\n" + kConv + "  return %h\n}\n"},
      {"dense",
       "def @f(%x: f32[m, 8], %w: f32[4, 8]) attributes {primitive = true} {\n"
       "  %h = nn.dense(%x, %w)\n  return %h\n}\n"},
      {"NHWC", kHeader + "  %h = nn.conv2d(%x, %w) {data_layout = \"NHWC\"}\n  return %h\n}\n"},
      {"bias on axis 2",
       kHeader + kConv + "  %hb = nn.bias_add(%h, %b) {axis = 2}\n  return %hb\n}\n"},
      {"relu before bias_add", kHeader + kConv +
                                   "  %a = nn.relu(%h)\n"
                                   "  %hb = nn.bias_add(%a, %b)\n  return %hb\n}\n"},
      {"conv then add", kHeader + kConv + "  %s = add(%h, %b)\n  return %s\n}\n"},
      {"conv then sigmoid", kHeader + kConv + "  %s = sigmoid(%h)\n  return %s\n}\n"},
      {"f16", "def @f(%x: f16[n, 3, 8, 8], %w: f16[4, 3, 3, 3]) attributes {primitive = true} {\n" +
                  kConv + "  return %h\n}\n"},
      {"data is not a parameter",
       "def @f(%x: f32[n, 3, 8, 8], %w: f32[4, 3, 3, 3]) attributes {primitive = true} {\n"
       "  %e = exp(%x)\n  %h = nn.conv2d(%e, %w)\n  return %h\n}\n"},
  };
  for (const auto& [what, text] : cases) {
    SCOPED_TRACE(what);
    auto module = ParseModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    const Function* f = (*module)->FindFunction("f");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(IsConvGroup(*f));
    auto kernel = CompileConvGroup(*f);
    EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(kernel.status().message(), HasSubstr("@f: not a conv group"));
  }
}

}  // namespace
}  // namespace hetpass
