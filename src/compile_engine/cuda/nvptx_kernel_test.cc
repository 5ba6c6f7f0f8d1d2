// Tests of the cuda device's NVPTX kernels beyond the JIT test cases they share
// (jit/kernels_test.cc runs every one of those through ptxas and, with a GPU, on the GPU):
// the PTX's shape (one .entry per index width, compute_80, parameters by value, libdevice
// inlined), refusals, and on a GPU the error word: an integer division by zero in a kernel is
// reported at the next synchronisation and then cleared.
#include "compile_engine/cuda/nvptx_kernel.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kExpPow[] = R"(
def @f(%a: f64[n, 4], %b: f64[4]) -> f64[n, 4] attributes {primitive = true} {
  %0 = exp(%a) : f64[n, 4]
  %1 = power(%0, %b) : f64[n, 4]
  %2 = log(%1) : f64[n, 4]
  return %2
}
)";

constexpr char kDivide[] = R"(
def @f(%a: i32[n], %b: i32[n]) -> i32[n] attributes {primitive = true} {
  %0 = divide(%a, %b) : i32[n]
  return %0
}
)";

// Tests the PTX of a libdevice-calling group: two kernels (32- and 64-bit indexing) for
// sm_80 / PTX 7.8, libdevice's functions inlined (no call to an __nv_ symbol is left), and
// the tensors' metadata as by-value parameters; ptxas accepts it for sm_80 and sm_90.
TEST(NvptxKernel, PtxShape) {
  std::unique_ptr<Module> m = testing::Parse(kExpPow);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  absl::StatusOr<std::string> ptx = cuda::NvptxPtx(f);
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_TRUE(cuda::IsNvptxGroup(f));
  EXPECT_THAT(*ptx, HasSubstr(".version 7.8"));
  EXPECT_THAT(*ptx, HasSubstr(".target sm_80"));
  EXPECT_THAT(*ptx, HasSubstr(".visible .entry hetpass_f("));
  EXPECT_THAT(*ptx, HasSubstr(".visible .entry hetpass_f_wide("));
  EXPECT_THAT(*ptx, Not(HasSubstr("__nv_")));  // libdevice linked in, nothing left to resolve
  EXPECT_THAT(*ptx, HasSubstr(".param .align 8 .b8 hetpass_f_param_0[24]"));
  absl::Status ok = testing::PtxasAccepts(*ptx, "@f");
  EXPECT_TRUE(ok.ok()) << ok;
}

// Tests that groups the JIT does not take are refused as Unimplemented naming the op.
TEST(NvptxKernel, RefusesWhatTheJitDoesNot) {
  std::unique_ptr<Module> m = testing::Parse(R"(
def @f(%a: f32[n, 4]) -> f32[n] attributes {primitive = true} {
  %0 = sum(%a) {axis = [1]} : f32[n]
  return %0
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  EXPECT_FALSE(cuda::IsNvptxGroup(f));
  absl::StatusOr<std::unique_ptr<CompiledKernel>> k = cuda::CompileNvptx(f);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(k.status().message(), HasSubstr("sum"));
}

// Tests, on a GPU, that an integer division by zero inside a kernel reaches the device's error
// word and is reported at the next counted synchronisation (the read of the result), and that
// the word is cleared afterwards.
TEST(NvptxKernel, DivisionByZeroReachesTheErrorWord) {
  HETPASS_SKIP_WITHOUT_GPU();
  std::unique_ptr<Module> m = testing::Parse(kDivide);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<std::unique_ptr<CompiledKernel>> k = cuda::CompileNvptx(*m->functions().front());
  ASSERT_TRUE(k.ok()) << k.status();
  Tensor a = Tensor::Zeros(DType::kI32, {3}), b = Tensor::Zeros(DType::kI32, {3});
  for (int i = 0; i < 3; ++i) a.SetInt64(i, 10 + i), b.SetInt64(i, i == 1 ? 0 : 2);
  Tensor out = Tensor::Zeros(DType::kI32, {3});
  absl::Status s = testing::RunOnCuda(**k, {a, b}, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("integer division by zero"));
  b.SetInt64(1, 5);
  s = testing::RunOnCuda(**k, {a, b}, out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.GetInt64(0), 5);
  EXPECT_EQ(out.GetInt64(1), 2);
  EXPECT_EQ(out.GetInt64(2), 6);
}

}  // namespace
}  // namespace hetpass
