// Tests of the cuda device's cuDNN conv2d / conv2d_transpose kernels (docs/cuda.md): the groups
// they take, cuDNN's descriptors and sizes for grouped, strided, dilated and transposed problems
// and the argument errors (need cuDNN, not a GPU; the shared models' convolutions are checked in
// test/unit/cuda_models_ptx_test.cc), and on a GPU the results against the host's oneDNN
// kernels, with one plan per distinct shape.
#include "compile_engine/cuda/cudnn_conv.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compile_engine/conv_kernel.h"
#include "compile_engine/deconv_kernel.h"
#include "compile_engine/split_kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"
#include "support/runtime_test_util.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cudnn.h"
#endif

namespace hetpass {
namespace {

using ::testing::HasSubstr;

// One conv or deconv group: data [n, c, h, w]; weight [oc, c/groups, k, k] (conv) or
// [c, oc/groups, k, k] (transposed).
struct Case {
  bool transposed = false;
  int64_t c = 8, h = 9, w = 9, oc = 16, k = 3, groups = 1;
  std::string strides = "[1, 1]", padding = "[1, 1]", dilation = "[1, 1]", output_padding = "[0, 0]";
  bool bias = true, relu = true;

  std::vector<int64_t> WeightShape() const {
    return transposed ? std::vector<int64_t>{c, oc / groups, k, k} : std::vector<int64_t>{oc, c / groups, k, k};
  }
  std::string Text() const {
    const std::vector<int64_t> ws = WeightShape();
    std::string params = absl::StrCat("%x: f32[n, ", c, ", ", h, ", ", w, "], %w: f32[", ws[0], ", ", ws[1], ", ",
                                      k, ", ", k, "]");
    std::string body = absl::StrCat("  %h = ", transposed ? "nn.conv2d_transpose" : "nn.conv2d",
                                    "(%x, %w) {strides = ", strides, ", padding = ", padding,
                                    ", dilation = ", dilation, ", groups = ", groups,
                                    transposed ? absl::StrCat(", output_padding = ", output_padding) : "", "}\n");
    std::string last = "%h";
    if (bias) {
      absl::StrAppend(&params, ", %b: f32[", oc, "]");
      absl::StrAppend(&body, "  %hb = nn.bias_add(%h, %b) {axis = 1}\n");
      last = "%hb";
    }
    if (relu) {
      absl::StrAppend(&body, "  %a = nn.relu(", last, ")\n");
      last = "%a";
    }
    return absl::StrCat("def @f(", params, ") attributes {primitive = true} {\n", body, "  return ", last, "\n}\n");
  }
  std::vector<Tensor> Inputs(int64_t n) const {
    std::vector<Tensor> in = {testing::RandomTensor(DType::kF32, {n, c, h, w}, 1),
                              testing::RandomTensor(DType::kF32, WeightShape(), 2)};
    if (bias) in.push_back(testing::RandomTensor(DType::kF32, {oc}, 3));
    return in;
  }
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back(Case{});  // 3x3 pad 1, bias + relu (the fused bias-activation path)
  Case bias_only;
  bias_only.relu = false;
  cases.push_back(bias_only);
  Case relu_only;
  relu_only.bias = false;
  cases.push_back(relu_only);
  Case grouped;
  grouped.groups = 2, grouped.oc = 12;
  cases.push_back(grouped);
  Case depthwise;
  depthwise.groups = 8, depthwise.oc = 8, depthwise.bias = false;
  cases.push_back(depthwise);
  Case window;
  window.c = 4, window.oc = 6, window.h = 13, window.w = 11, window.strides = "[2, 1]", window.padding = "[1, 2]",
  window.dilation = "[2, 1]", window.relu = false;
  cases.push_back(window);
  Case deconv;  // Mask R-CNN's mask head: 2x2 stride 2
  deconv.transposed = true, deconv.k = 2, deconv.strides = "[2, 2]", deconv.padding = "[0, 0]";
  cases.push_back(deconv);
  Case deconv_grouped;
  deconv_grouped.transposed = true, deconv_grouped.groups = 2, deconv_grouped.oc = 6, deconv_grouped.h = 7,
  deconv_grouped.w = 5, deconv_grouped.strides = "[2, 2]", deconv_grouped.padding = "[1, 1]",
  deconv_grouped.output_padding = "[1, 1]";
  cases.push_back(deconv_grouped);
  Case deconv_dilated;
  deconv_dilated.transposed = true, deconv_dilated.bias = false, deconv_dilated.dilation = "[2, 2]",
  deconv_dilated.strides = "[3, 2]", deconv_dilated.output_padding = "[2, 0]", deconv_dilated.padding = "[2, 1]";
  cases.push_back(deconv_dilated);
  return cases;
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileCuda(const Case& k, const Function& f) {
  return k.transposed ? cuda::CompileCudnnDeconv(f) : cuda::CompileCudnnConv(f);
}

// The host's oneDNN kernel on `in`, into a result of `shape`.
absl::StatusOr<Tensor> RunOnHost(const Case& k, const Function& f, const std::vector<Tensor>& in,
                                 const std::vector<int64_t>& shape) {
  ASSIGN_OR_RETURN(auto kernel, k.transposed ? CompileDeconvGroup(f) : CompileConvGroup(f));
  ASSIGN_OR_RETURN(auto instance, kernel->Instantiate(std::vector<const Tensor*>(in.size(), nullptr)));
  Tensor out = Tensor::Zeros(DType::kF32, shape);
  std::vector<TensorArg> args;
  for (const Tensor& t : in) args.push_back(testing::Arg(t));
  args.push_back(TensorArg{out.mutable_data(), out.dtype(), absl::MakeConstSpan(out.shape())});
  RETURN_IF_ERROR(instance->Run(args));
  return out;
}

// Tests that the providers take conv / deconv groups with symmetric padding only, and that
// compiling needs no GPU.
TEST(CudnnConv, TakesConvGroupsWithSymmetricPadding) {
  for (const Case& k : Cases()) {
    auto m = testing::Parse(k.Text());
    ASSERT_NE(m, nullptr) << k.Text();
    auto kernel = CompileCuda(k, *m->functions().front());
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_THAT((*kernel)->Describe(), HasSubstr(k.transposed ? "cudnn conv2d_transpose" : "cudnn conv2d"));
  }
  Case fused;
  auto m = testing::Parse(fused.Text());
  EXPECT_EQ((*cuda::CompileCudnnConv(*m->functions().front()))->Describe(), "cudnn conv2d[bias,relu]");
  EXPECT_EQ(cuda::CompileCudnnDeconv(*m->functions().front()).status().code(), absl::StatusCode::kUnimplemented);
  Case asymmetric;
  asymmetric.padding = "[0, 0, 1, 1]";
  auto a = testing::Parse(asymmetric.Text());
  ASSERT_NE(a, nullptr);
  const absl::Status refused = cuda::CompileCudnnConv(*a->functions().front()).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented) << refused;
  EXPECT_TRUE(CompileConvGroup(*a->functions().front()).ok()) << "the host still takes it";
}

#ifdef HETPASS_HAS_CUDA
// Tests that cuDNN loads here (fails, not skips, when it is missing) and accepts the descriptors
// of every case at two batch sizes, sizing the output as we do.
TEST(CudnnConv, DescriptorsWithoutAGpu) {
  absl::StatusOr<std::string> lib = runtime::cuda_api::CudnnLibrary();
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::printf("cuDNN: %s\n", lib->c_str());
  for (const Case& k : Cases()) {
    SCOPED_TRACE(k.Text());
    auto m = testing::Parse(k.Text());
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    for (int64_t n : {1, 5}) {
      const std::vector<Tensor> in = k.Inputs(n);
      absl::StatusOr<Tensor> want = testing::Interpret(f, in);
      ASSERT_TRUE(want.ok()) << want.status();
      std::vector<TensorArg> args;
      for (const Tensor& t : in) args.push_back(testing::Arg(t));
      args.push_back(testing::Arg(*want));
      const absl::Status ok = cuda::CheckCudnnDescriptors(f, args);
      EXPECT_TRUE(ok.ok()) << ok;
    }
  }
}

// Tests that a size cuDNN disagrees with is caught: the descriptor check is not vacuous.
TEST(CudnnConv, DescriptorCheckCatchesAWrongOutputSize) {
  runtime::cuda_api::ConvProblem p;
  p.n = 2, p.c = 4, p.h = 8, p.w = 8, p.oc = 6, p.kh = 3, p.kw = 3, p.oh = 8, p.ow = 8, p.pad = {1, 1};
  EXPECT_TRUE(runtime::cuda_api::CheckConvDescriptors(p).ok());
  p.oh = 7;
  const absl::Status bad = runtime::cuda_api::CheckConvDescriptors(p);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("[2, 6, 8, 8], not [2, 6, 7, 8]"));
  p.transposed = true, p.oh = 15, p.ow = 15, p.stride = {2, 2};  // data 8 <- (15 + 2 - 3) / 2 + 1
  EXPECT_TRUE(runtime::cuda_api::CheckConvDescriptors(p).ok());
  p.oh = 18;  // output_padding 3 >= stride: (18 + 2 - 3) / 2 + 1 = 9
  EXPECT_EQ(runtime::cuda_api::CheckConvDescriptors(p).code(), absl::StatusCode::kInvalidArgument);
}
#endif

// Tests that arguments that do not fit the group are InvalidArgument naming the function and
// the argument, without a GPU (the check Run makes) and on one.
TEST(CudnnConv, BadArgumentsAreInvalidArgument) {
  const Case k;
  auto m = testing::Parse(k.Text());
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  std::vector<Tensor> in = k.Inputs(2);
  in[1] = testing::RandomTensor(DType::kF32, {16, 7, 3, 3}, 2);  // 7 input channels, data has 8
  Tensor out = Tensor::Zeros(DType::kF32, {2, 16, 9, 9});
  std::vector<TensorArg> args;
  for (const Tensor& t : in) args.push_back(testing::Arg(t));
  args.push_back(testing::Arg(out));
#ifdef HETPASS_HAS_CUDA
  const absl::Status checked = cuda::CheckCudnnDescriptors(f, args);
  EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument) << checked;
  EXPECT_THAT(checked.message(), HasSubstr("@f"));
  EXPECT_THAT(checked.message(), HasSubstr("weight (%w)"));
  in[1] = testing::RandomTensor(DType::kF32, {16, 8, 3, 3}, 2);
  in[2] = testing::RandomTensor(DType::kF32, {15}, 3);
  args[1] = testing::Arg(in[1]);
  args[2] = testing::Arg(in[2]);
  const absl::Status bias = cuda::CheckCudnnDescriptors(f, args);
  EXPECT_EQ(bias.code(), absl::StatusCode::kInvalidArgument) << bias;
  EXPECT_THAT(bias.message(), HasSubstr("bias (%b)"));
  in[1] = testing::RandomTensor(DType::kF32, {16, 7, 3, 3}, 2);
#endif
  HETPASS_SKIP_WITHOUT_GPU();
  auto kernel = cuda::CompileCudnnConv(f);
  ASSERT_TRUE(kernel.ok());
  in[2] = testing::RandomTensor(DType::kF32, {16}, 3);
  const absl::Status run = testing::RunOnCuda(**kernel, in, out);
  EXPECT_EQ(run.code(), absl::StatusCode::kInvalidArgument) << run;
  EXPECT_THAT(run.message(), HasSubstr("weight (%w)"));
}

// Tests, on a GPU, every case against the host's oneDNN kernel at three batch sizes on one
// instance, with one plan per distinct batch (the second n = 1 reuses the first's plan).
TEST(CudnnConv, MatchesTheHostKernelsOnTheGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  for (const Case& k : Cases()) {
    SCOPED_TRACE(k.Text());
    auto m = testing::Parse(k.Text());
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    auto kernel = CompileCuda(k, f);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    auto instance = (*kernel)->Instantiate(testing::Cuda().ctx, std::vector<const Tensor*>(k.bias ? 3 : 2, nullptr));
    ASSERT_TRUE(instance.ok()) << instance.status();
    for (int64_t n : {1, 4, 1}) {
      const std::vector<Tensor> in = k.Inputs(n);
      absl::StatusOr<Tensor> reference = testing::Interpret(f, in);
      ASSERT_TRUE(reference.ok()) << reference.status();
      absl::StatusOr<Tensor> want = RunOnHost(k, f, in, reference->shape());
      ASSERT_TRUE(want.ok()) << want.status();
      Tensor got = Tensor::Zeros(DType::kF32, want->shape());
      const absl::Status run = testing::RunOnCuda(**kernel, in, got, {}, instance->get());
      ASSERT_TRUE(run.ok()) << run;
      EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-4)) << "n = " << n;
    }
    EXPECT_EQ(cuda::CudnnPlans(**instance), 2);
  }
}

// A ResNet block's tail as fuse-ops groups it on cuda: conv + bias + residual add + ReLU. The
// cuda split runs a cuDNN head and an in-place NVPTX tail (compiles without a GPU), and on a
// GPU computes what the reference computes.
TEST(CudnnConv, ResidualBlockSplitsIntoConvAndInPlaceTail) {
  auto m = testing::Parse(R"(
def @f(%x: f32[n, 4, 6, 6], %w: f32[4, 4, 3, 3], %b: f32[4], %r: f32[n, 4, 6, 6]) -> f32[n, 4, 6, 6] attributes {primitive = true} {
  %0 = nn.conv2d(%x, %w) {padding = [1, 1]} : f32[n, 4, 6, 6]
  %1 = nn.bias_add(%0, %b) {axis = 1} : f32[n, 4, 6, 6]
  %2 = add(%1, %r) : f32[n, 4, 6, 6]
  %3 = nn.relu(%2) : f32[n, 4, 6, 6]
  return %3
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  EXPECT_EQ(cuda::CompileCudnnConv(f).status().code(), absl::StatusCode::kUnimplemented);
  auto k = CudaSplitKernelProvider().TryCompile(f, KernelTarget{DeviceKind::kCuda});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT((*k)->Describe(), HasSubstr("cudnn conv2d[bias] + in-place nvptx"));
  HETPASS_SKIP_WITHOUT_GPU();
  for (int64_t n : {1, 3}) {
    std::vector<Tensor> in = {testing::RandomTensor(DType::kF32, {n, 4, 6, 6}, 1),
                              testing::RandomTensor(DType::kF32, {4, 4, 3, 3}, 2),
                              testing::RandomTensor(DType::kF32, {4}, 3),
                              testing::RandomTensor(DType::kF32, {n, 4, 6, 6}, 4)};
    absl::StatusOr<Tensor> want = testing::Interpret(f, in);
    ASSERT_TRUE(want.ok()) << want.status();
    Tensor got = Tensor::Zeros(DType::kF32, want->shape());
    const absl::Status run = testing::RunOnCuda(**k, in, got);
    ASSERT_TRUE(run.ok()) << run;
    EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-4)) << n;
  }
}

}  // namespace
}  // namespace hetpass
