// Tests of the cuda device's NVPTX kernels beyond the JIT test cases they share
// (jit/kernels_test.cc runs every one of those through ptxas and, with a GPU, on the GPU):
// the PTX's shape (one .entry per index width, compute_80, parameters by value, libdevice
// inlined), refusals, and on a GPU the error word: an integer division by zero in a kernel is
// reported at the next synchronisation and then cleared.
#include "compile_engine/cuda/nvptx_kernel.h"

#include <cstdlib>

#include "compile_engine/cuda/ptx_codegen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_api.h"
#endif

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

// Tests that round's PTX rounds halves to even (cvt.rni) without a GPU: libdevice's
// __nv_rintf, upgraded by LLVM 16 to llvm.round, rounded them away from zero on an H100.
TEST(NvptxKernel, RoundIsHalvesToEven) {
  std::unique_ptr<Module> m = testing::Parse(R"(
def @f(%a: f32[n]) -> f32[n] attributes {primitive = true} {
  %0 = round(%a) : f32[n]
  return %0
}
)");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<std::string> ptx = cuda::NvptxPtx(*m->functions().front());
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_THAT(*ptx, HasSubstr("cvt.rni.f32.f32"));
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

// Tests that a libdevice named by HETPASS_LIBDEVICE that does not exist is NotFound naming it
// (never a silent fallback to another copy).
TEST(NvptxKernel, MissingLibdeviceIsNamed) {
  const char* old = std::getenv("HETPASS_LIBDEVICE");
  const std::string saved = old == nullptr ? "" : old;
  setenv("HETPASS_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
  absl::StatusOr<std::string> path = cuda::LibdevicePath();
  if (old == nullptr) {
    unsetenv("HETPASS_LIBDEVICE");
  } else {
    setenv("HETPASS_LIBDEVICE", saved.c_str(), 1);
  }
  EXPECT_EQ(path.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(path.status().message(), HasSubstr("/nonexistent/libdevice.10.bc"));
}

// Tests, on a GPU, that a dyn.reshape target handed to the kernel in device memory (instead of
// as a host tensor passed by value, as the VM passes it) is an error naming the argument, not a
// host read of device memory.
TEST(NvptxKernel, DynOperandInDeviceMemoryIsRefused) {
  std::unique_ptr<Module> m = testing::Parse(R"(
def @f(%a: f32[n, 6], %s: i64[2]) -> f32[?, ?] attributes {primitive = true} {
  %0 = dyn.reshape(%a, %s) : f32[?, ?]
  return %0
}
)");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<std::unique_ptr<CompiledKernel>> k = cuda::CompileNvptx(*m->functions().front());
  ASSERT_TRUE(k.ok()) << k.status();
  HETPASS_SKIP_WITHOUT_GPU();
  Tensor a = Tensor::Zeros(DType::kF32, {2, 6}), s = Tensor::Zeros(DType::kI64, {2});
  s.SetInt64(0, 3);
  s.SetInt64(1, 4);
  Tensor out = Tensor::Zeros(DType::kF32, {3, 4});
  absl::Status on_device = testing::RunOnCuda(**k, {a, s}, out, {false, false});
  EXPECT_EQ(on_device.code(), absl::StatusCode::kInvalidArgument) << on_device;
  EXPECT_THAT(on_device.message(), HasSubstr("argument 1 (%s) is device memory"));
  absl::Status on_host = testing::RunOnCuda(**k, {a, s}, out, {false, true});
  EXPECT_TRUE(on_host.ok()) << on_host;
}

#ifdef HETPASS_HAS_CUDA
// Tests, on a GPU, that PTX the driver rejects is an error naming what was loaded (before any
// launch).
TEST(NvptxKernel, BrokenPtxIsAnErrorWithTheJitLog) {
  HETPASS_SKIP_WITHOUT_GPU();
  auto loaded = runtime::cuda_api::PtxModule::Load(
      ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }\n", "@broken");
  // The driver may compile at load or, loading lazily, when the kernel is first asked for:
  // either way the error names the module.
  absl::Status error = loaded.status();
  if (loaded.ok()) error = (*loaded)->Kernel("k").status();
  ASSERT_FALSE(error.ok());
  EXPECT_THAT(error.message(), HasSubstr("@broken"));
}
#endif

}  // namespace
}  // namespace hetpass
