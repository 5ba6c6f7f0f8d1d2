// Tests of the channel-layout reorder (layout_transform [+ views] on oneDNN) against the
// registry's reference kernel of the same primitive function: every pair of NCHW, NCHW4c,
// NCHW8c and NCHW16c at static and symbolic sizes, bit for bit (a reorder only moves
// elements); a transform followed by a flatten (a ResNet's pooled features); the groups it
// does not take; errors for arguments that do not fit.
#include "compile_engine/reorder_kernel.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::hetpass::testing::RunOnNaNFilled;
using ::testing::HasSubstr;

std::string Layout(int64_t b) { return b == 0 ? "NCHW" : absl::StrCat("NCHW", b, "c"); }

// [n, C, H, W] stored in layout `b`, the batch written as `n` (a symbol or a number).
std::string TypeOf(const std::string& n, int64_t c, int64_t h, int64_t w, int64_t b) {
  if (b == 0) return absl::StrCat("f32[", n, ", ", c, ", ", h, ", ", w, "]");
  return absl::StrCat("f32[", n, ", ", c / b, ", ", h, ", ", w, ", ", b, "]");
}
std::vector<int64_t> Shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t b) {
  if (b == 0) return {n, c, h, w};
  return {n, c / b, h, w, b};
}

std::string Transform(const std::string& type, int64_t src, int64_t dst,
                      const std::string& tail = "") {
  return absl::StrCat("def @f(%x: ", type, ") attributes {primitive = true} {\n",
                      "  %t = layout_transform(%x) {src_layout = \"", Layout(src),
                      "\", dst_layout = \"", Layout(dst), "\"}\n", tail.empty() ? "  return %t\n" : tail,
                      "}\n");
}

void ExpectSameBits(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0);
}

// Tests every pair of layouts, static and symbolic batch, on the cpu engine (which must pick
// this kernel) against the reference, bit for bit.
TEST(ReorderKernelTest, EveryLayoutPairMatchesReference) {
  CompileEngine engine;
  uint64_t seed = 1;
  int pairs = 0;
  for (int64_t src : {0, 4, 8, 16}) {
    for (int64_t dst : {0, 4, 8, 16}) {
      if (src == dst) continue;
      ++pairs;
      for (const std::string n : {"2", "n"}) {
        const std::string text = Transform(TypeOf(n, 32, 5, 3, src), src, dst);
        SCOPED_TRACE(text);
        auto m = testing::Parse(text);
        ASSERT_NE(m, nullptr);
        const Function& f = *m->FindFunction("f");
        ASSERT_TRUE(IsReorderGroup(f));
        auto k = engine.Lower(f, DeviceKind::kCpu);
        ASSERT_TRUE(k.ok()) << k.status();
        EXPECT_EQ((*k)->Describe(), absl::StrCat("onednn reorder ", Layout(src), "->", Layout(dst)));
        for (int64_t batch : {2, 1}) {
          if (n == "2" && batch != 2) continue;
          const Tensor x = ::hetpass::testing::RandomF32(Shape(batch, 32, 5, 3, src), ++seed);
          auto want = Interpret(f, {x});
          ASSERT_TRUE(want.ok()) << want.status();
          auto got = RunOnNaNFilled(**k, x, want->shape());
          ASSERT_TRUE(got.ok()) << got.status();
          ExpectSameBits(*got, *want);
        }
      }
    }
  }
  EXPECT_EQ(pairs, 12);
}

// Tests a ResNet's classifier input: the pooled NCHW16c features back to NCHW and flattened to
// [n, C], one kernel with the views absorbed.
TEST(ReorderKernelTest, TransformThenViewsIsOneReorder) {
  const std::string text =
      Transform("f32[n, 128, 1, 1, 16]", 16, 0,
                "  %r = reshape(%t) {newshape = [-1, 2048]}\n  return %r\n");
  auto m = testing::Parse(text);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  ASSERT_TRUE(IsReorderGroup(f));
  auto k = CompileReorderGroup(f);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->Describe(), "onednn reorder NCHW16c->NCHW [reshape]");
  const Tensor x = ::hetpass::testing::RandomF32({3, 128, 1, 1, 16}, 7);
  auto want = Interpret(f, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->shape(), (std::vector<int64_t>{3, 2048}));
  auto got = RunOnNaNFilled(**k, x, want->shape());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBits(*got, *want);
}

// Tests the groups it leaves to others: f64 data, a layout oneDNN has no tag for (NCHW2c), an
// elementwise op after the transform, a view op with a second operand.
TEST(ReorderKernelTest, OtherGroupsAreNotTaken) {
  const std::vector<std::string> texts = {
      Transform("f64[1, 32, 2, 2]", 0, 16),
      Transform("f32[1, 16, 2, 2, 2]", 2, 0),
      Transform("f32[1, 2, 2, 2, 16]", 16, 0, "  %r = nn.relu(%t)\n  return %r\n"),
      "def @f(%x: f32[1, 2, 2, 2, 16], %s: i64[2]) attributes {primitive = true} {\n"
      "  %t = layout_transform(%x) {src_layout = \"NCHW16c\", dst_layout = \"NCHW\"}\n"
      "  %r = dyn.reshape(%t, %s)\n  return %r\n}\n",
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    auto m = testing::Parse(text);
    ASSERT_NE(m, nullptr);
    EXPECT_FALSE(IsReorderGroup(*m->FindFunction("f")));
    auto k = CompileReorderGroup(*m->FindFunction("f"));
    EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// Tests that arguments that do not fit are InvalidArgument naming the function, never a crash:
// blocked data whose last dim is not its block, channels that do not split into the
// destination's blocks (symbolic C), a result of another size, a wrong argument count.
TEST(ReorderKernelTest, BadArgumentsAreErrors) {
  auto m = testing::Parse(Transform("f32[n, c, 2, 2]", 0, 16));
  ASSERT_NE(m, nullptr);
  auto k = CompileReorderGroup(*m->FindFunction("f"));
  ASSERT_TRUE(k.ok()) << k.status();
  const Tensor x8 = ::hetpass::testing::RandomF32({1, 8, 2, 2}, 1);
  auto split = RunOnNaNFilled(**k, x8, {1, 1, 2, 2, 16});
  ASSERT_FALSE(split.ok());
  EXPECT_THAT(split.status().message(), HasSubstr("8 channels, which do not split into blocks of 16"));
  EXPECT_THAT(split.status().message(), HasSubstr("@f"));
  const Tensor x32 = ::hetpass::testing::RandomF32({1, 32, 2, 2}, 2);
  auto size = RunOnNaNFilled(**k, x32, {1, 2, 2, 2, 8});
  ASSERT_FALSE(size.ok());
  EXPECT_THAT(size.status().message(), HasSubstr("expected 128 f32 elements"));
  EXPECT_TRUE(RunOnNaNFilled(**k, x32, {1, 2, 2, 2, 16}).ok());

  auto mb = testing::Parse(Transform("f32[n, 2, 2, 2, 16]", 16, 0));
  ASSERT_NE(mb, nullptr);
  auto kb = CompileReorderGroup(*mb->FindFunction("f"));
  ASSERT_TRUE(kb.ok()) << kb.status();
  const Tensor x4 = ::hetpass::testing::RandomF32({1, 8, 2, 2, 4}, 3);
  auto lanes = RunOnNaNFilled(**kb, x4, {1, 32, 2, 2});
  ASSERT_FALSE(lanes.ok());
  EXPECT_THAT(lanes.status().message(), HasSubstr("not in NCHW16c"));
  auto instance = (*kb)->Instantiate(std::vector<const Tensor*>{nullptr});
  ASSERT_TRUE(instance.ok());
  EXPECT_EQ((*instance)->Run(std::vector<TensorArg>{Arg(x4)}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hetpass
