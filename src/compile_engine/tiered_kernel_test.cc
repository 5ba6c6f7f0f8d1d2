// Tests of tiered kernels (tiered_kernel.h): an instance runs the reference kernel until the
// background compile is done and the compiled kernel from its next run on; a failed compile
// fails the runs that would have used it, naming what failed; kernels and compilers destroyed
// with compiles queued or running neither crash nor leak; through the engine, the JIT groups
// of a module end bit-identical to a synchronous load.
#include "compile_engine/tiered_kernel.h"

#include <algorithm>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/ir/parser.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

constexpr char kAddRelu[] = R"(
def @f(%a: f32[2, 3], %b: f32[3]) -> f32[2, 3] attributes {primitive = true} {
  %s = add(%a, %b) : f32[2, 3]
  %r = nn.relu(%s) : f32[2, 3]
  return %r
}
)";

// The shapes of @f's arguments (TensorArg holds a span: they must outlive the call).
constexpr int64_t kShape23[] = {2, 3};
constexpr int64_t kShape3[] = {3};

std::unique_ptr<Module> Parse(const char* text) {
  auto m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

// A "compiled" kernel that fills its output with `value`: unmistakable for the reference.
class FillKernel final : public CompiledKernel {
 public:
  explicit FillKernel(float value) : value_(value) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext&, absl::Span<const Tensor* const>) const override {
    class Instance final : public KernelInstance {
     public:
      explicit Instance(float v) : v_(v) {}
      absl::Status Run(const KernelContext&, absl::Span<const TensorArg> args) override {
        const TensorArg& out = args.back();
        std::fill_n(static_cast<float*>(out.data), out.nbytes() / sizeof(float), v_);
        return absl::OkStatus();
      }

     private:
      float v_;
    };
    return std::make_unique<Instance>(value_);
  }
  std::string Describe() const override { return "fill"; }

 private:
  float value_;
};

// Runs `instance` on a = [-1 .. 4] and b = [1, -1, 0]: the output.
std::vector<float> RunAddRelu(KernelInstance& instance) {
  std::vector<float> a = {-1, 0, 1, 2, 3, 4}, b = {1, -1, 0}, out(6, -7.0f);
  const std::vector<TensorArg> args = {
      TensorArg{a.data(), DType::kF32, kShape23},
      TensorArg{b.data(), DType::kF32, kShape3},
      TensorArg{out.data(), DType::kF32, kShape23},
  };
  const absl::Status s = instance.Run(args);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

const std::vector<float> kAddReluResult = {0, 0, 1, 3, 2, 4};

// Tests that the instance runs the reference kernel while the compile is held back, and the
// compiled kernel from the first run after it finished, with the description following.
TEST(TieredKernel, RunsTheReferenceUntilTheCompileIsDoneThenTheCompiledKernel) {
  auto m = Parse(kAddRelu);
  TieredCompiler compiler;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto kernel = compiler.Defer(*m->FindFunction("f"), "@f for cpu (test)", [released] {
    released.wait();
    return absl::StatusOr<std::unique_ptr<CompiledKernel>>(std::make_unique<FillKernel>(42.0f));
  });
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_THAT((*kernel)->Describe(), HasSubstr("reference[add,nn.relu] until @f for cpu (test) compiles"));
  auto instance = (*kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_EQ(RunAddRelu(**instance), kAddReluResult);
  EXPECT_EQ(RunAddRelu(**instance), kAddReluResult);
  EXPECT_EQ(compiler.pending(), 1);

  release.set_value();
  ASSERT_TRUE(compiler.WaitForAll().ok());
  EXPECT_EQ(compiler.pending(), 0);
  EXPECT_EQ((*kernel)->Describe(), "fill");
  EXPECT_EQ(RunAddRelu(**instance), std::vector<float>(6, 42.0f));
  // An instance made after the switch starts on the reference and switches on its first run.
  auto late = (*kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(RunAddRelu(**late), std::vector<float>(6, 42.0f));
}

// Tests that a failed background compile fails the next run of every instance, naming what
// failed, and that WaitForAll returns the same error.
TEST(TieredKernel, AFailedCompileFailsTheRunsThatWouldUseIt) {
  auto m = Parse(kAddRelu);
  TieredCompiler compiler;
  auto kernel = compiler.Defer(*m->FindFunction("f"), "@f for cpu (test)", [] {
    return absl::StatusOr<std::unique_ptr<CompiledKernel>>(absl::InternalError("LLVM said no"));
  });
  ASSERT_TRUE(kernel.ok());
  auto instance = (*kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(instance.ok());
  const absl::Status waited = compiler.WaitForAll();
  EXPECT_TRUE(absl::IsInternal(waited)) << waited;
  EXPECT_THAT(waited.message(), HasSubstr("cannot compile @f for cpu (test) in the background: LLVM said no"));
  std::vector<float> a(6), b(3), out(6);
  const std::vector<TensorArg> args = {TensorArg{a.data(), DType::kF32, kShape23},
                                       TensorArg{b.data(), DType::kF32, kShape3},
                                       TensorArg{out.data(), DType::kF32, kShape23}};
  EXPECT_EQ((*instance)->Run(args), waited);
  EXPECT_THAT((*kernel)->Describe(), HasSubstr("LLVM said no"));
}

// Tests that kernels destroyed with their compile queued or running, and a compiler destroyed
// with compiles queued, neither crash nor leave a thread behind (ASan / LSan check the rest).
TEST(TieredKernel, DestroyingWithCompilesQueuedOrRunningIsSafe) {
  auto m = Parse(kAddRelu);
  const Function& f = *m->FindFunction("f");
  for (int round = 0; round < 20; ++round) {
    auto compiler = std::make_unique<TieredCompiler>();
    std::vector<std::unique_ptr<CompiledKernel>> kernels;
    for (int k = 0; k < 4; ++k) {
      auto kernel = compiler->Defer(f, "@f (test)", [] {
        return absl::StatusOr<std::unique_ptr<CompiledKernel>>(std::make_unique<FillKernel>(1.0f));
      });
      ASSERT_TRUE(kernel.ok());
      kernels.push_back(*std::move(kernel));
    }
    if (round % 2 == 0) kernels.clear();  // kernels first: each withdraws or waits for its job
    compiler.reset();                     // then the compiler: withdraws the rest, joins
  }
}

// Tests, through the engine with the real JIT providers, that Lower returns at once with a
// reference tier, and that after WaitForBackgroundCompiles the kernel is the JIT's and its
// results are bit-identical to a synchronously lowered kernel's.
TEST(TieredKernel, EngineJitGroupsEndBitIdenticalToASynchronousLower) {
  auto m = Parse(kAddRelu);
  const Function& f = *m->FindFunction("f");
  CompileEngineOptions sync_options;
  sync_options.kernel_cache_dir = "off";
  CompileEngine sync_engine(sync_options);
  auto sync_kernel = sync_engine.Lower(f, DeviceKind::kCpu);
  ASSERT_TRUE(sync_kernel.ok()) << sync_kernel.status();

  CompileEngineOptions options = sync_options;
  options.background_jit = true;
  CompileEngine engine(options);
  auto kernel = engine.Lower(f, DeviceKind::kCpu);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto instance = (*kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(instance.ok());
  EXPECT_EQ(RunAddRelu(**instance), kAddReluResult);  // either tier: exact on these values
  ASSERT_TRUE(engine.WaitForBackgroundCompiles().ok());
  EXPECT_EQ(engine.background_pending(), 0);
  EXPECT_EQ((*kernel)->Describe(), (*sync_kernel)->Describe());
  auto sync_instance = (*sync_kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(sync_instance.ok());
  EXPECT_EQ(RunAddRelu(**instance), RunAddRelu(**sync_instance));
}

}  // namespace
}  // namespace hetpass
