#include "compile_engine/batch_matmul_kernel.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"
#include "support/runtime_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::hetpass::testing::RandomF32;
using ::hetpass::testing::TensorsNear;
using ::testing::HasSubstr;

std::string Dims(const std::vector<std::string>& d) { return absl::StrJoin(d, ", "); }

// A primitive `@f(a, b) = nn.batch_matmul(a, b)` with the given (possibly symbolic) dims.
std::unique_ptr<Module> BatchMatmulFunction(const std::vector<std::string>& a,
                                            const std::vector<std::string>& b) {
  return testing::Parse(absl::StrCat(
      "def @f(%a: f32[", Dims(a), "], %b: f32[", Dims(b),
      "]) attributes {primitive = true} {\n  %c = nn.batch_matmul(%a, %b)\n  return %c\n}\n"));
}

absl::StatusOr<Tensor> RunKernel(const Function& f, const Tensor& a, const Tensor& b,
                                 std::vector<int64_t> out_shape) {
  auto kernel = CompileBatchMatmulGroup(f);
  if (!kernel.ok()) return kernel.status();
  auto instance = (*kernel)->Instantiate({nullptr, nullptr});
  if (!instance.ok()) return instance.status();
  Tensor out = Tensor::Zeros(DType::kF32, out_shape);
  std::vector<TensorArg> args = {Arg(a), Arg(b), Arg(out)};
  RETURN_IF_ERROR((*instance)->Run(args));
  return out;
}

struct Case {
  std::vector<int64_t> a, b, out;
};

// Tests the oneDNN kernel against the reference kernel: equal batches, either side broadcast
// (a 1 or a missing leading dim), attention's shapes, K = 0 (zeros) and empty batches, with
// symbolic dims in the declared types so one compiled kernel serves several shapes.
TEST(BatchMatmulKernel, MatchesReferenceAcrossBroadcasts) {
  const std::vector<Case> cases = {
      {{2, 3, 5}, {2, 5, 4}, {2, 3, 4}},
      {{2, 3, 5}, {1, 5, 4}, {2, 3, 4}},
      {{1, 3, 5}, {6, 5, 4}, {6, 3, 4}},
      {{3, 4, 12, 16}, {3, 4, 16, 12}, {3, 4, 12, 12}},  // Q x K^T, [batch, heads, seq, d]
      {{2, 1, 7, 3}, {1, 4, 3, 2}, {2, 4, 7, 2}},
      {{2, 3, 0}, {2, 0, 4}, {2, 3, 4}},
      {{0, 3, 5}, {0, 5, 4}, {0, 3, 4}},
  };
  int seed = 1;
  for (const Case& c : cases) {
    std::vector<std::string> da, db;
    for (size_t i = 0; i < c.a.size(); ++i) da.push_back(absl::StrCat("a", i));
    for (size_t i = 0; i < c.b.size(); ++i) db.push_back(absl::StrCat("b", i));
    auto m = BatchMatmulFunction(da, db);
    ASSERT_NE(m, nullptr);
    const Function& f = *m->FindFunction("f");
    ASSERT_TRUE(IsBatchMatmulGroup(f));
    const Tensor a = RandomF32(c.a, seed++), b = RandomF32(c.b, seed++);
    auto got = RunKernel(f, a, b, c.out);
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = Interpret(f, {a, b});
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(TensorsNear(*got, *want, 1e-5))
        << "a " << absl::StrJoin(c.a, "x") << " b " << absl::StrJoin(c.b, "x");
  }
}

// Tests that a rank-3 by rank-2 product (b broadcast over the batch) runs, and that the
// compile engine picks this kernel for such a group.
TEST(BatchMatmulKernel, MixedRanksAndEnginePicksIt) {
  auto m = BatchMatmulFunction({"n", "3", "5"}, {"5", "4"});
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  const Tensor a = RandomF32({4, 3, 5}, 7), b = RandomF32({5, 4}, 8);
  auto got = RunKernel(f, a, b, {4, 3, 4});
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = Interpret(f, {a, b});
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(TensorsNear(*got, *want, 1e-5));
  CompileEngine engine;
  auto lowered = engine.Lower(f, DeviceKind::kCpu);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ((*lowered)->Describe(), "onednn matmul[batched]");
}

// Tests that run-time arguments that do not fit are errors naming the function and argument.
TEST(BatchMatmulKernel, BadArgumentsAreErrors) {
  auto m = BatchMatmulFunction({"n", "3", "k"}, {"n2", "k2", "4"});
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  {  // K differs
    auto r = RunKernel(f, RandomF32({2, 3, 5}, 1), RandomF32({2, 6, 4}, 2), {2, 3, 4});
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("@f: nn.batch_matmul operands do not match"));
  }
  {  // batch dims 2 vs 3 do not broadcast
    auto r = RunKernel(f, RandomF32({2, 3, 5}, 1), RandomF32({3, 5, 4}, 2), {3, 3, 4});
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("b (%b) is [3, 5, 4]"));
  }
  {  // wrong result shape
    auto r = RunKernel(f, RandomF32({2, 3, 5}, 1), RandomF32({2, 5, 4}, 2), {2, 3, 5});
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("@f: result is [2, 3, 5]"));
  }
  {  // wrong dtype
    Tensor a = Tensor::Zeros(DType::kI64, {2, 3, 5});
    auto r = RunKernel(f, a, RandomF32({2, 5, 4}, 2), {2, 3, 4});
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("a (%a) must be an f32 tensor of rank 3"));
  }
}

// Tests what the matcher refuses: other bodies, i64 operands.
TEST(BatchMatmulKernel, MatchesOnlyItsGroup) {
  auto i64 = testing::Parse(
      "def @f(%a: i64[2, 3, 4], %b: i64[2, 4, 5]) attributes {primitive = true} {\n"
      "  %c = nn.batch_matmul(%a, %b)\n  return %c\n}\n");
  ASSERT_NE(i64, nullptr);
  EXPECT_FALSE(IsBatchMatmulGroup(*i64->FindFunction("f")));
  auto tail = testing::Parse(
      "def @f(%a: f32[2, 3, 4], %b: f32[2, 4, 5]) attributes {primitive = true} {\n"
      "  %c = nn.batch_matmul(%a, %b)\n  %d = nn.relu(%c)\n  return %d\n}\n");
  ASSERT_NE(tail, nullptr);
  EXPECT_FALSE(IsBatchMatmulGroup(*tail->FindFunction("f")));
  auto err = CompileBatchMatmulGroup(*tail->FindFunction("f"));
  EXPECT_EQ(err.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hetpass
