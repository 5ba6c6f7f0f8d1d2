// Tests of the cuda device's NVRTC reduction and softmax kernels (nvrtc_reduce.h): the groups
// taken (any axis set, steps with scalars on either side), PTX that ptxas accepts for sm_80
// and sm_90 (no GPU needed), the NVRTC cache, and on a GPU the results against the reference
// interpreter for every reduction kind and kernel path, NaN placement, empty reductions, and
// argument errors.
#include "compile_engine/cuda/nvrtc_reduce.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"
#include "support/runtime_test_util.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/nvrtc.h"
#endif

namespace hetpass {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* name;
  const char* text;
  std::vector<std::vector<int64_t>> shapes;  // per parameter
};

// Every kernel path: warp-per-line (last axes), thread-per-output (middle, non-adjacent, all
// axes with keepdims), each reduction kind, prologue and epilogue steps with a scalar on either
// side, power other than 2, softmax on the last and a middle axis.
const Case kCases[] = {
    {"layer_norm_mean", R"(
def @f(%x: f32[n, 7, 33], %c: f32[1], %e: f32[]) -> f32[n, 7, 1] attributes {primitive = true} {
  %0 = subtract(%x, %c) : f32[n, 7, 33]
  %1 = power(%0, %e) : f32[n, 7, 33]
  %2 = mean(%1) {axis = [-1], keepdims = true} : f32[n, 7, 1]
  %3 = add(%2, %c) : f32[n, 7, 1]
  return %3
}
)",
     {{3, 7, 33}, {1}, {}}},
    {"global_pool", R"(
def @f(%x: f32[n, 5, 9, 11]) -> f32[n, 5] attributes {primitive = true} {
  %0 = mean(%x) {axis = [2, 3]} : f32[n, 5]
  return %0
}
)",
     {{2, 5, 9, 11}}},
    {"middle_sum", R"(
def @f(%x: f32[4, 300, 6], %c: f32[1, 1]) -> f32[4, 6] attributes {primitive = true} {
  %0 = divide(%c, %x) : f32[4, 300, 6]
  %1 = sum(%0) {axis = [1]} : f32[4, 6]
  %2 = multiply(%1, %c) : f32[4, 6]
  return %2
}
)",
     {{4, 300, 6}, {1, 1}}},
    {"non_adjacent_max", R"(
def @f(%x: f32[3, 4, 5, 6]) -> f32[4, 6] attributes {primitive = true} {
  %0 = negative(%x) : f32[3, 4, 5, 6]
  %1 = max(%0) {axis = [0, 2]} : f32[4, 6]
  return %1
}
)",
     {{3, 4, 5, 6}}},
    {"exclude_min", R"(
def @f(%x: f32[3, 4, 5]) -> f32[1, 4, 1] attributes {primitive = true} {
  %0 = abs(%x) : f32[3, 4, 5]
  %1 = min(%0) {axis = [1], exclude = true, keepdims = true} : f32[1, 4, 1]
  return %1
}
)",
     {{3, 4, 5}}},
    {"prod_all", R"(
def @f(%x: f32[6, 7]) -> f32[] attributes {primitive = true} {
  %0 = prod(%x) : f32[]
  return %0
}
)",
     {{6, 7}}},
    {"power_three", R"(
def @f(%x: f32[2, 70], %e: f32[1]) -> f32[2] attributes {primitive = true} {
  %0 = power(%x, %e) : f32[2, 70]
  %1 = sum(%0) {axis = [1]} : f32[2]
  return %1
}
)",
     {{2, 70}, {1}}},
    {"extended_steps", R"(
def @f(%x: f32[n, 6, 40], %c: f32[1]) -> f32[n, 6] attributes {primitive = true} {
  %0 = nn.relu(%x) : f32[n, 6, 40]
  %1 = maximum(%0, %c) : f32[n, 6, 40]
  %2 = sigmoid(%1) : f32[n, 6, 40]
  %4 = add(%2, %c) : f32[n, 6, 40]
  %5 = sum(%4) {axis = [2]} : f32[n, 6]
  %6 = sqrt(%5) : f32[n, 6]
  %7 = log(%6) : f32[n, 6]
  %8 = minimum(%c, %7) : f32[n, 6]
  %9 = tanh(%8) : f32[n, 6]
  %10 = exp(%9) : f32[n, 6]
  return %10
}
)",
     {{2, 6, 40}, {1}}},
    {"rounding_steps", R"(
def @f(%x: f32[5, 8, 3], %c: f32[1]) -> f32[5, 3] attributes {primitive = true} {
  %0 = multiply(%x, %c) : f32[5, 8, 3]
  %1 = floor(%0) : f32[5, 8, 3]
  %2 = min(%1) {axis = [1]} : f32[5, 3]
  %3 = divide(%2, %c) : f32[5, 3]
  %4 = ceil(%3) : f32[5, 3]
  return %4
}
)",
     {{5, 8, 3}, {1}}},
    {"softmax_last", R"(
def @f(%x: f32[n, 3, 77]) -> f32[n, 3, 77] attributes {primitive = true} {
  %0 = nn.softmax(%x) {axis = -1} : f32[n, 3, 77]
  return %0
}
)",
     {{2, 3, 77}}},
    {"softmax_middle", R"(
def @f(%x: f32[2, 13, 5]) -> f32[2, 13, 5] attributes {primitive = true} {
  %0 = nn.softmax(%x) {axis = 1} : f32[2, 13, 5]
  return %0
}
)",
     {{2, 13, 5}}},
};

std::vector<Tensor> Inputs(const Case& c) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < c.shapes.size(); ++i) in.push_back(testing::RandomF32(c.shapes[i], 17 + i, 2.0));
  // Scalars: exponent 2 for layer norm, 3 otherwise; away from zero for divisions.
  for (size_t i = 1; i < in.size(); ++i) {
    *in[i].mutable_data_as<float>() = std::string(c.name) == "layer_norm_mean" && i == 2 ? 2.0f : 3.0f;
  }
  return in;
}

// Tests that every case compiles through NVRTC and its PTX assembles for sm_80 and sm_90,
// with the four kernels as entries; that groups of other shapes are Unimplemented.
TEST(NvrtcReduce, EveryCaseAssembles) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto m = testing::Parse(c.text);
    ASSERT_NE(m, nullptr);
    absl::StatusOr<cuda::NvrtcProgram> p = cuda::NvrtcReduceProgram(*m->functions().front());
#ifndef HETPASS_HAS_CUDA
    EXPECT_EQ(p.status().code(), absl::StatusCode::kUnimplemented);
    continue;
#endif
    ASSERT_TRUE(p.ok()) << p.status();
    const bool softmax = std::string(c.name).rfind("softmax", 0) == 0;
    EXPECT_THAT(p->ptx, HasSubstr(softmax ? ".entry softmax_line(" : ".entry reduce_line("));
    EXPECT_THAT(p->ptx, HasSubstr(softmax ? ".entry softmax_any(" : ".entry reduce_any("));
    EXPECT_THAT(p->ptx, HasSubstr(".target sm_80"));
    absl::Status ok = testing::PtxasAccepts(p->ptx, c.name);
    EXPECT_TRUE(ok.ok()) << ok;
  }
  auto other = testing::Parse(R"(
def @f(%a: f32[n, 4]) -> i64[n] attributes {primitive = true} {
  %0 = argmax(%a) {axis = [1], dtype = i64} : i64[n]
  return %0
}
)");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(cuda::CompileNvrtcReduce(*other->functions().front()).status().code(), absl::StatusCode::kUnimplemented);
}

#ifdef HETPASS_HAS_CUDA
// Tests that equal groups compile once: the second compile of the same source is a cache hit.
TEST(NvrtcReduce, SourceCacheCompilesOnce) {
  absl::StatusOr<std::string> lib = runtime::cuda_api::NvrtcLibrary();
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::printf("NVRTC: %s\n", lib->c_str());  // the GPU report names the file loaded
  auto m = testing::Parse(kCases[1].text);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(cuda::CompileNvrtcReduce(*m->functions().front()).ok());
  const runtime::cuda_api::NvrtcCacheStats before = runtime::cuda_api::NvrtcStats();
  ASSERT_TRUE(cuda::CompileNvrtcReduce(*m->functions().front()).ok());
  const runtime::cuda_api::NvrtcCacheStats after = runtime::cuda_api::NvrtcStats();
  EXPECT_EQ(after.compiled, before.compiled);
  EXPECT_EQ(after.hits, before.hits + 1);
}
#endif

// Tests, on a GPU, every case against the reference interpreter.
TEST(NvrtcReduce, MatchesTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto m = testing::Parse(c.text);
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    auto k = cuda::CompileNvrtcReduce(f);
    ASSERT_TRUE(k.ok()) << k.status();
    const std::vector<Tensor> in = Inputs(c);
    absl::StatusOr<Tensor> want = testing::Interpret(f, in);
    ASSERT_TRUE(want.ok()) << want.status();
    Tensor got = Tensor::Zeros(DType::kF32, want->shape());
    absl::Status run = testing::RunOnCuda(**k, in, got);
    ASSERT_TRUE(run.ok()) << run;
    EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-5));
  }
}

// Tests f64 / i32 / i64 reductions (no steps): compiled here, and on a GPU equal to the
// reference (computed in double, converted to the dtype; an integer mean truncates).
TEST(NvrtcReduce, OtherDtypes) {
  const struct {
    const char* text;
    DType dtype;
    std::vector<int64_t> shape;
  } kTyped[] = {
      {R"(
def @f(%x: i64[n, 5, 7]) -> i64[5] attributes {primitive = true} {
  %0 = sum(%x) {axis = [0, 2]} : i64[5]
  return %0
}
)",
       DType::kI64, {3, 5, 7}},
      {R"(
def @f(%x: i32[n, 50]) -> i32[n] attributes {primitive = true} {
  %0 = max(%x) {axis = [1]} : i32[n]
  return %0
}
)",
       DType::kI32, {4, 50}},
      {R"(
def @f(%x: i64[n, 50]) -> i64[n, 1] attributes {primitive = true} {
  %0 = mean(%x) {axis = [1], keepdims = true} : i64[n, 1]
  return %0
}
)",
       DType::kI64, {4, 50}},
      {R"(
def @f(%x: f64[n, 9, 3]) -> f64[n, 3] attributes {primitive = true} {
  %0 = prod(%x) {axis = [1]} : f64[n, 3]
  return %0
}
)",
       DType::kF64, {2, 9, 3}},
  };
  for (const auto& c : kTyped) {
    SCOPED_TRACE(c.text);
    auto m = testing::Parse(c.text);
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    absl::StatusOr<cuda::NvrtcProgram> p = cuda::NvrtcReduceProgram(f);
#ifndef HETPASS_HAS_CUDA
    EXPECT_EQ(p.status().code(), absl::StatusCode::kUnimplemented);
    continue;
#endif
    ASSERT_TRUE(p.ok()) << p.status();
    absl::Status ok = testing::PtxasAccepts(p->ptx, c.text);
    EXPECT_TRUE(ok.ok()) << ok;
    if (testing::Cuda().device == nullptr) continue;
    auto k = cuda::CompileNvrtcReduce(f);
    ASSERT_TRUE(k.ok()) << k.status();
    const std::vector<Tensor> in = {testing::RandomTensor(c.dtype, c.shape, 3, -20, 20)};
    absl::StatusOr<Tensor> want = testing::Interpret(f, in);
    ASSERT_TRUE(want.ok()) << want.status();
    Tensor got = Tensor::Zeros(c.dtype, want->shape());
    ASSERT_TRUE(testing::RunOnCuda(**k, in, got).ok());
    EXPECT_TRUE(testing::TensorsNear(got, *want, 1e-12));
  }
  HETPASS_SKIP_WITHOUT_GPU();
}

// Tests, on a GPU, the host kernels' NaN rule (a NaN counts in max only when it comes first in
// the line), an empty reduced extent (0 for max, 1 for prod, then the epilogue) and softmax of
// a line holding +inf (NaN throughout).
TEST(NvrtcReduce, NanAndEmptyLinesOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  auto m = testing::Parse(R"(
def @f(%x: f32[3, 100]) -> f32[3] attributes {primitive = true} {
  %0 = max(%x) {axis = [1]} : f32[3]
  return %0
}
)");
  ASSERT_NE(m, nullptr);
  auto k = cuda::CompileNvrtcReduce(*m->functions().front());
  ASSERT_TRUE(k.ok()) << k.status();
  Tensor x = testing::RandomF32({3, 100}, 5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x.mutable_data_as<float>()[0] = nan;         // line 0: first -> NaN
  x.mutable_data_as<float>()[100 + 33] = nan;  // line 1: later -> ignored
  Tensor got = Tensor::Zeros(DType::kF32, {3});
  ASSERT_TRUE(testing::RunOnCuda(**k, {x}, got).ok());
  absl::StatusOr<Tensor> want = testing::Interpret(*m->functions().front(), {x});
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(std::isnan(got.data_as<float>()[0]));
  EXPECT_FALSE(std::isnan(got.data_as<float>()[1]));
  EXPECT_EQ(got.data_as<float>()[1], want->data_as<float>()[1]);

  auto empty = testing::Parse(R"(
def @f(%x: f32[2, n], %c: f32[1]) -> f32[2] attributes {primitive = true} {
  %0 = prod(%x) {axis = [1]} : f32[2]
  %1 = add(%0, %c) : f32[2]
  return %1
}
)");
  ASSERT_NE(empty, nullptr);
  auto ke = cuda::CompileNvrtcReduce(*empty->functions().front());
  ASSERT_TRUE(ke.ok()) << ke.status();
  Tensor c = Tensor::Zeros(DType::kF32, {1});
  *c.mutable_data_as<float>() = 0.5f;
  Tensor out = Tensor::Zeros(DType::kF32, {2});
  ASSERT_TRUE(testing::RunOnCuda(**ke, {Tensor::Zeros(DType::kF32, {2, 0}), c}, out).ok());
  EXPECT_EQ(out.data_as<float>()[0], 1.5f);
  EXPECT_EQ(out.data_as<float>()[1], 1.5f);

  auto sm = testing::Parse(kCases[9].text);
  ASSERT_NE(sm, nullptr);
  auto ks = cuda::CompileNvrtcReduce(*sm->functions().front());
  ASSERT_TRUE(ks.ok());
  Tensor y = testing::RandomF32({1, 3, 77}, 9);
  y.mutable_data_as<float>()[77 + 5] = std::numeric_limits<float>::infinity();
  Tensor sy = Tensor::Zeros(DType::kF32, {1, 3, 77});
  ASSERT_TRUE(testing::RunOnCuda(**ks, {y}, sy).ok());
  EXPECT_FALSE(std::isnan(sy.data_as<float>()[0]));
  EXPECT_TRUE(std::isnan(sy.data_as<float>()[77]));
  EXPECT_TRUE(std::isnan(sy.data_as<float>()[77 + 76]));
}

// Tests, on a GPU, that an argument of the wrong shape is InvalidArgument naming the function.
TEST(NvrtcReduce, WrongShapeIsAnErrorOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  auto m = testing::Parse(kCases[1].text);
  ASSERT_NE(m, nullptr);
  auto k = cuda::CompileNvrtcReduce(*m->functions().front());
  ASSERT_TRUE(k.ok());
  Tensor out = Tensor::Zeros(DType::kF32, {2, 4});
  absl::Status s = testing::RunOnCuda(**k, {testing::RandomF32({2, 5, 9, 11}, 1)}, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("@f"));
}

}  // namespace
}  // namespace hetpass
