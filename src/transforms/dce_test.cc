#include "passes/transforms/dce.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::ExpectIdempotent;
using ::hetpass::testing::Parse;
using ::hetpass::testing::RunPipeline;
using ::hetpass::testing::RunAndPrint;
using ::testing::HasSubstr;
using ::testing::Not;

// Tests that unused bindings are removed, transitively, and used ones stay.
TEST(Dce, RemovesUnusedChains) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[4]) {
  %a = exp(%x)
  %b = nn.relu(%a)
  %c = tanh(%x)
  return %c
}
)",
                                      "dce");
  EXPECT_THAT(out, Not(HasSubstr("exp")));
  EXPECT_THAT(out, Not(HasSubstr("nn.relu")));
  EXPECT_THAT(out, HasSubstr("tanh(%x)"));
}

// Tests that a value used only inside a region (a capture) stays alive, and dead bindings
// inside regions are removed.
TEST(Dce, KeepsCapturesAndCleansRegions) {
  const std::string out = RunAndPrint(R"(
def @main(%c: bool[], %x: f32[4]) {
  %cap = exp(%x)
  %r = if (%c) {
    %dead = tanh(%x)
    yield %cap
  } else {
    yield %x
  }
  return %r
}
)",
                                      "dce");
  EXPECT_THAT(out, HasSubstr("exp(%x)"));
  EXPECT_THAT(out, Not(HasSubstr("tanh")));
}

// Tests that an unused if is removed whole, and dce reports no change when nothing is dead.
TEST(Dce, RemovesDeadIfAndReportsChange) {
  auto m = Parse(R"(
def @main(%c: bool[], %x: f32[4]) {
  %r = if (%c) {
    yield %x
  } else {
    yield %x
  }
  return %x
}
)");
  ASSERT_NE(m, nullptr);
  auto changed = RunPipeline(*m, "dce");
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(m->functions()[0]->body().nodes().empty());
  ExpectIdempotent("def @main(%x: f32[4]) {\n  %a = exp(%x)\n  return %a\n}\n", "dce");
}

}  // namespace
}  // namespace hetpass
