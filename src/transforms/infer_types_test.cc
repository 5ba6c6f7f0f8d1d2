#include "passes/transforms/infer_types.h"

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

// Tests that the dynamic-batch MLP keeps the batch symbol through dense and bias_add.
TEST(InferTypes, DynamicMlpKeepsSymbol) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[n, 1024], %w1: f32[512, 1024], %b1: f32[512], %w2: f32[256, 512]) {
  %0 = nn.dense(%x, %w1)
  %1 = nn.bias_add(%0, %b1) {axis = -1}
  %2 = nn.relu(%1)
  %3 = nn.dense(%2, %w2)
  return %3
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("-> f32[n, 256]"));
  EXPECT_THAT(out, HasSubstr("nn.dense(%x, %w1) : f32[n, 512]"));
  EXPECT_THAT(out, HasSubstr("nn.relu(%1) : f32[n, 512]"));
}

// Tests that a reshape target computed by shape arithmetic yields a symbolic shape, with no
// unknown dims: shape_of -> take -> multiply -> concatenate -> dyn.reshape.
TEST(InferTypes, ShapeSubgraphGivesSymbolicReshape) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[n, 4, 8]) {
  %s = shape_of(%x)
  %i0 = constant<[0]> : i64[1]
  %n = take(%s, %i0) {axis = 0}
  %k = constant<[32]> : i64[1]
  %t = concatenate(%n, %k) {axis = 0}
  %y = dyn.reshape(%x, %t)
  return %y
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("dyn.reshape(%x, %t) : f32[n, 32]"));
}

// Tests that a declared type contradicting inference is an error naming value and location.
TEST(InferTypes, DeclaredMismatchIsLocatedError) {
  auto m = Parse(R"(def @main(%x: f32[n, 4]) {
  %y = nn.relu(%x) : f32[n, 5]
  return %y
}
)");
  ASSERT_NE(m, nullptr);
  auto r = RunPipeline(*m, "infer-types");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("<input>:2:3"));
  EXPECT_THAT(r.status().message(), HasSubstr("%y is declared f32[n, 5] but infers to f32[n, 4]"));
}

// Tests that a declared `?` is refined by inference.
TEST(InferTypes, UnknownDeclaredDimIsRefined) {
  const std::string out = RunAndPrint(R"(def @main(%x: f32[n, 4]) {
  %y = nn.relu(%x) : f32[?, 4]
  return %y
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("nn.relu(%x) : f32[n, 4]"));
}

// Tests that if-branches with different dims join to `?` and equal dims are kept.
TEST(InferTypes, IfJoinsBranches) {
  const std::string out = RunAndPrint(R"(
def @main(%c: bool[], %x: f32[n, 4], %y: f32[m, 4]) {
  %r = if (%c) {
    %a = nn.relu(%x)
    yield %a
  } else {
    yield %y
  }
  return %r
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("-> f32[?, 4]"));
}

// Tests that a loop whose carried value grows gets a `?` dim by fixpoint, and scan outputs a
// leading `?` dim.
TEST(InferTypes, LoopFixpoint) {
  const std::string out = RunAndPrint(R"(
def @main(%m: i64[], %c: bool[], %x: f32[2]) {
  %r, %s = loop(%m, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[2]) {
    %g = concatenate(%acc, %acc) {axis = 0}
    %e = exp(%acc)
    yield %ci, %g, %e
  }
  return %r, %s
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("-> f32[?], f32[?, ?]"));
  ExpectIdempotent(R"(
def @main(%m: i64[], %c: bool[], %x: f32[2]) {
  %r = loop(%m, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[2]) {
    %g = concatenate(%acc, %acc) {axis = 0}
    yield %ci, %g
  }
  return %r
}
)",
                   "infer-types");
}

// Tests that a loop whose carried value changes dtype is an error.
TEST(InferTypes, LoopCarriedDtypeChangeIsError) {
  auto m = Parse(R"(
def @main(%m: i64[], %c: bool[], %x: f32[2]) {
  %r = loop(%m, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[2]) {
    %g = cast(%acc) {dtype = i32}
    yield %ci, %g
  }
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  auto r = RunPipeline(*m, "infer-types");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("dtype and rank must not change"));
}

// Tests that invoke substitutes the callee's symbols with the caller's dims.
TEST(InferTypes, InvokeSubstitutesSymbols) {
  const std::string out = RunAndPrint(R"(
def @helper(%a: f32[k, 8]) {
  %b = exp(%a)
  return %b
}

def @main(%x: f32[n*2, 8]) {
  %y = invoke @helper(%x)
  return %y
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("invoke @helper(%x) : f32[n*2, 8]"));
}

// Tests that shape errors from the op rule carry the location and op.
TEST(InferTypes, RuleErrorIsLocated) {
  auto m = Parse(R"(def @main(%x: f32[n, 1024], %w: f32[512, 1000]) {
  %y = nn.dense(%x, %w)
  return %y
}
)");
  ASSERT_NE(m, nullptr);
  auto r = RunPipeline(*m, "infer-types");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("<input>:2:3: nn.dense %y"));
}

// Tests that inference is idempotent on an already-typed module.
TEST(InferTypes, Idempotent) {
  ExpectIdempotent(R"(
def @main(%x: f32[n, 1024], %w: f32[512, 1024]) {
  %0 = nn.dense(%x, %w)
  %1 = shape_of(%0)
  %2 = nn.relu(%0)
  return %2, %1
}
)",
                   "infer-types");
}

}  // namespace
}  // namespace hetpass
