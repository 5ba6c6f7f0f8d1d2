// Tests of the cuda device's cuBLASLt dense kernel (docs/cuda.md): the group it takes, its
// descriptors for the shared models' GEMM shapes (needs cuBLASLt, not a GPU), and on a GPU the
// results against the reference for every epilogue, flattened leading dims, a per-shape plan
// cache, and argument errors.
#include "compile_engine/cuda/cublaslt_dense.h"

#include "compile_engine/split_kernel.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"
#include "support/runtime_test_util.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cublaslt.h"
#endif

namespace hetpass {
namespace {

using ::testing::HasSubstr;

std::string DenseText(const std::string& data, int64_t n, int64_t k, bool bias, bool relu) {
  std::string out_type = data.substr(0, data.rfind(',')) + ", " + std::to_string(n) + "]";
  if (data.find(',') == std::string::npos) out_type = "f32[" + std::to_string(n) + "]";
  std::string text = absl::StrCat("def @f(%x: ", data, ", %w: f32[", n, ", ", k, "]",
                                  bias ? absl::StrCat(", %b: f32[", n, "]") : "", ") -> ", out_type,
                                  " attributes {primitive = true} {\n  %0 = nn.dense(%x, %w) : ", out_type, "\n");
  std::string last = "%0";
  if (bias) {
    absl::StrAppend(&text, "  %1 = nn.bias_add(%0, %b) {axis = -1} : ", out_type, "\n");
    last = "%1";
  }
  if (relu) {
    absl::StrAppend(&text, "  %2 = nn.relu(", last, ") : ", out_type, "\n");
    last = "%2";
  }
  absl::StrAppend(&text, "  return ", last, "\n}\n");
  return text;
}

// Tests that the provider takes dense groups only, and that compiling needs no GPU.
TEST(CublasLtDense, TakesDenseGroupsOnly) {
  auto m = testing::Parse(DenseText("f32[n, 8]", 4, 8, true, true));
  ASSERT_NE(m, nullptr);
  auto k = cuda::CompileCublasLtDense(*m->functions().front());
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->Describe(), "cublaslt matmul + bias + relu");
  auto other = testing::Parse(R"(
def @f(%a: f32[n, 4]) -> f32[n, 4] attributes {primitive = true} {
  %0 = nn.relu(%a) : f32[n, 4]
  return %0
}
)");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(cuda::CompileCublasLtDense(*other->functions().front()).status().code(),
            absl::StatusCode::kUnimplemented);
}

#ifdef HETPASS_HAS_CUDA
// Tests that cuBLASLt loads here and accepts the descriptors of the shared models' dense shapes
// (the MLPs' 1024->512->256->128 at batch 1 and 16, the transformer's 64->64 and 64->128 at 2x8
// tokens, resnet's head) for every epilogue.
TEST(CublasLtDense, DescriptorsForTheSharedModelsShapes) {
  absl::StatusOr<std::string> lib = runtime::cuda_api::CublasLtLibrary();
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::printf("cuBLASLt: %s\n", lib->c_str());
  const int64_t shapes[][3] = {{1, 512, 1024}, {16, 512, 1024}, {16, 256, 512}, {16, 128, 256},
                               {16, 64, 64},   {16, 128, 64},   {16, 64, 128},  {2, 10, 32}};
  float fake = 0;
  for (const auto& s : shapes) {
    for (bool bias : {false, true}) {
      for (bool relu : {false, true}) {
        runtime::cuda_api::DenseCall c;
        c.m = s[0], c.n = s[1], c.k = s[2], c.relu = relu, c.bias = bias ? &fake : nullptr;
        const absl::Status ok = runtime::cuda_api::CheckDenseDescriptors(c);
        EXPECT_TRUE(ok.ok()) << s[0] << "x" << s[1] << "x" << s[2] << ": " << ok;
      }
    }
  }
}
#endif

// Tests, on a GPU, every epilogue and rank-3 data against the reference, the plan cache (one
// plan per distinct M), and a K mismatch refused naming the weight.
TEST(CublasLtDense, MatchesTheReferenceOnTheGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  for (bool bias : {false, true}) {
    for (bool relu : {false, true}) {
      for (const std::string data : {"f32[n, 40]", "f32[b, s, 40]"}) {
        SCOPED_TRACE(absl::StrCat(data, bias ? " bias" : "", relu ? " relu" : ""));
        auto m = testing::Parse(DenseText(data, 24, 40, bias, relu));
        ASSERT_NE(m, nullptr);
        const Function& f = *m->functions().front();
        auto k = cuda::CompileCublasLtDense(f);
        ASSERT_TRUE(k.ok()) << k.status();
        for (int64_t rows : {1, 7, 33}) {
          std::vector<int64_t> xs = data == "f32[n, 40]" ? std::vector<int64_t>{rows, 40}
                                                         : std::vector<int64_t>{rows, 3, 40};
          std::vector<Tensor> in = {testing::RandomTensor(DType::kF32, xs, 1),
                                    testing::RandomTensor(DType::kF32, {24, 40}, 2)};
          if (bias) in.push_back(testing::RandomTensor(DType::kF32, {24}, 3));
          absl::StatusOr<Tensor> want = testing::Interpret(f, in);
          ASSERT_TRUE(want.ok()) << want.status();
          Tensor got = Tensor::Zeros(DType::kF32, want->shape());
          absl::Status run = testing::RunOnCuda(**k, in, got);
          ASSERT_TRUE(run.ok()) << run;
          EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-4));
        }
      }
    }
  }
  auto m = testing::Parse(DenseText("f32[n, 40]", 24, 40, false, false));
  auto k = cuda::CompileCublasLtDense(*m->functions().front());
  ASSERT_TRUE(k.ok());
  Tensor out = Tensor::Zeros(DType::kF32, {2, 24});
  absl::Status bad = testing::RunOnCuda(
      **k, {testing::RandomTensor(DType::kF32, {2, 40}, 1), testing::RandomTensor(DType::kF32, {24, 39}, 2)}, out);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("weight (%w)"));
}

// A transformer's residual block as fuse-ops groups it on cuda: dense + bias (as `add`) + a
// residual add. No single provider takes it; the split runs the cuBLASLt head and an in-place
// NVPTX tail (compiles without a GPU), and on a GPU computes what the reference computes.
constexpr char kResidual[] = R"(
def @f(%x: f32[n, 32], %w: f32[16, 32], %b: f32[16], %r: f32[n, 16]) -> f32[n, 16] attributes {primitive = true} {
  %0 = nn.dense(%x, %w) : f32[n, 16]
  %1 = add(%0, %b) : f32[n, 16]
  %2 = add(%1, %r) : f32[n, 16]
  return %2
}
)";

TEST(CublasLtDense, ResidualGroupSplitsIntoGemmAndInPlaceTail) {
  auto m = testing::Parse(kResidual);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  EXPECT_EQ(cuda::CompileCublasLtDense(f).status().code(), absl::StatusCode::kUnimplemented);
  auto k = CudaSplitKernelProvider().TryCompile(f, KernelTarget{DeviceKind::kCuda});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->Describe(), "cublaslt matmul + bias + in-place nvptx[add]");
  HETPASS_SKIP_WITHOUT_GPU();
  for (int64_t n : {1, 5, 64}) {
    std::vector<Tensor> in = {testing::RandomTensor(DType::kF32, {n, 32}, 1),
                              testing::RandomTensor(DType::kF32, {16, 32}, 2),
                              testing::RandomTensor(DType::kF32, {16}, 3),
                              testing::RandomTensor(DType::kF32, {n, 16}, 4)};
    absl::StatusOr<Tensor> want = testing::Interpret(f, in);
    ASSERT_TRUE(want.ok()) << want.status();
    Tensor got = Tensor::Zeros(DType::kF32, want->shape());
    absl::Status run = testing::RunOnCuda(**k, in, got);
    ASSERT_TRUE(run.ok()) << run;
    EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-4)) << n;
  }
}

// ---- batch_matmul ----

std::string BatchText(const std::string& a, const std::string& b, const std::string& out) {
  return absl::StrCat("def @f(%a: ", a, ", %b: ", b, ") -> ", out,
                      " attributes {primitive = true} {\n  %0 = nn.batch_matmul(%a, %b) : ", out,
                      "\n  return %0\n}\n");
}

#ifdef HETPASS_HAS_CUDA
// Tests that cuBLASLt accepts the strided-batch descriptors of attention's shapes (the shared
// transformer's 2 x 4 heads of 8 x 16, longer sequences, a broadcast operand: stride 0).
TEST(CublasLtBatchMatmul, DescriptorsForAttentionShapes) {
  const int64_t shapes[][6] = {// batch, m, n, k, stride_a, stride_b
                               {8, 8, 8, 16, 128, 128},   {8, 8, 16, 8, 64, 128},
                               {64, 128, 128, 64, 8192, 8192}, {5, 7, 3, 4, 28, 0}, {1, 9, 9, 9, 0, 0}};
  for (const auto& s : shapes) {
    runtime::cuda_api::BatchMatmulCall c;
    c.batch = s[0], c.m = s[1], c.n = s[2], c.k = s[3], c.stride_a = s[4], c.stride_b = s[5];
    const absl::Status ok = runtime::cuda_api::CheckBatchMatmulDescriptors(c);
    EXPECT_TRUE(ok.ok()) << s[0] << " x " << s[1] << "x" << s[2] << "x" << s[3] << ": " << ok;
  }
}
#endif

// Tests that the provider takes batch_matmul groups (compiling needs no GPU) and nothing else,
// and on a GPU every broadcast pattern against the reference: equal batches (one call),
// a broadcast operand (stride 0), mixed broadcasts (host-looped outer dims), rank-2 operands,
// an empty K (zeros) and a dynamic batch.
TEST(CublasLtBatchMatmul, MatchesTheReferenceOnTheGpu) {
  struct Shape {
    std::vector<int64_t> a, b;
  };
  const struct {
    const char* a;
    const char* b;
    const char* out;
    std::vector<Shape> runs;
  } kCases[] = {
      {"f32[n, 3, 4, 5]", "f32[n, 3, 5, 6]", "f32[n, 3, 4, 6]", {{{2, 3, 4, 5}, {2, 3, 5, 6}}, {{1, 3, 4, 5}, {1, 3, 5, 6}}}},
      {"f32[n, 4, 5]", "f32[5, 6]", "f32[n, 4, 6]", {{{3, 4, 5}, {5, 6}}}},
      {"f32[4, 5]", "f32[n, 5, 6]", "f32[n, 4, 6]", {{{4, 5}, {3, 5, 6}}}},
      {"f32[2, 1, 4, 5]", "f32[1, 3, 5, 6]", "f32[2, 3, 4, 6]", {{{2, 1, 4, 5}, {1, 3, 5, 6}}}},
      {"f32[2, 3, 1, 4, 5]", "f32[3, 7, 5, 6]", "f32[2, 3, 7, 4, 6]", {{{2, 3, 1, 4, 5}, {3, 7, 5, 6}}}},
      {"f32[2, 4, k]", "f32[2, k, 6]", "f32[2, 4, 6]", {{{2, 4, 0}, {2, 0, 6}}, {{2, 4, 3}, {2, 3, 6}}}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(absl::StrCat(c.a, " x ", c.b));
    auto m = testing::Parse(BatchText(c.a, c.b, c.out));
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    auto k = cuda::CompileCublasLtBatchMatmul(f);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ((*k)->Describe(), "cublaslt matmul[strided batches]");
    if (testing::Cuda().device == nullptr) continue;
    for (const Shape& s : c.runs) {
      std::vector<Tensor> in = {testing::RandomTensor(DType::kF32, s.a, 1), testing::RandomTensor(DType::kF32, s.b, 2)};
      absl::StatusOr<Tensor> want = testing::Interpret(f, in);
      ASSERT_TRUE(want.ok()) << want.status();
      Tensor got = Tensor::Zeros(DType::kF32, want->shape());
      absl::Status run = testing::RunOnCuda(**k, in, got);
      ASSERT_TRUE(run.ok()) << run;
      EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-4));
    }
  }
  auto dense = testing::Parse(DenseText("f32[n, 8]", 4, 8, false, false));
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(cuda::CompileCublasLtBatchMatmul(*dense->functions().front()).status().code(),
            absl::StatusCode::kUnimplemented);
  HETPASS_SKIP_WITHOUT_GPU();
  auto m = testing::Parse(BatchText("f32[n, 4, 5]", "f32[n, 5, 6]", "f32[n, 4, 6]"));
  auto k = cuda::CompileCublasLtBatchMatmul(*m->functions().front());
  ASSERT_TRUE(k.ok());
  Tensor out = Tensor::Zeros(DType::kF32, {2, 4, 6});
  absl::Status bad = testing::RunOnCuda(
      **k, {testing::RandomTensor(DType::kF32, {2, 4, 5}, 1), testing::RandomTensor(DType::kF32, {2, 4, 6}, 2)}, out);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("b (%b)"));
}

}  // namespace
}  // namespace hetpass
