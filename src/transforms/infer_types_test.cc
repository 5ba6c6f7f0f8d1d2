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
using ::testing::Not;

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

// Assumptions (issue 33). HF-style position embeddings: a 128-row table sliced to
// min(128, seq) rows broadcast against the sequence. The broadcast holds only when the two are
// equal (or the slice has 1 row), so the result keeps `seq` under that assumption instead of a
// fresh symbol that forgets the relation.
TEST(InferTypes, RelatedBroadcastDimsKeepTheInputSymbolUnderAnAssumption) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[batch, seq, 64], %pos: f32[1, min(128, seq), 64]) {
  %y = add(%x, %pos)
  return %y
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("add(%x, %pos) : f32[batch, seq, 64]"));
  EXPECT_THAT(out, HasSubstr("-> f32[batch, seq, 64]"));
  EXPECT_THAT(out, HasSubstr("assume(seq <= 128, \"<input>:3:3: add %y: op 'add': "
                             "broadcast of [batch, seq, 64] with [1, min(128, seq), 64] "
                             "(dimension 1)\")"));
  EXPECT_THAT(out, Not(HasSubstr("dyn")));
}

// Two unrelated symbols may broadcast either way (either may be 1): no assumption, a fresh
// symbol for the data-dependent result as before.
TEST(InferTypes, UnrelatedBroadcastDimsAssumeNothing) {
  const std::string out = RunAndPrint(R"(
def @main(%a: f32[n], %b: f32[m]) {
  %y = add(%a, %b)
  return %y
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("add(%a, %b) : f32[dyn1]"));
  EXPECT_THAT(out, Not(HasSubstr("assume")));
}

// A declared dim over symbols already bound wins over a weaker inferred one, under the
// assumption that the two are equal; a declared constant against an inferred symbol alike.
TEST(InferTypes, DeclaredDimWinsUnderAnAssumption) {
  const std::string out = RunAndPrint(R"(def @main(%x: f32[n, 4], %z: f32[m]) {
  %y = nn.relu(%x) : f32[m, 4]
  %w = nn.relu(%x) : f32[8, 4]
  return %y, %w
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("nn.relu(%x) : f32[m, 4]"));
  EXPECT_THAT(out, HasSubstr("nn.relu(%x) : f32[8, 4]"));
  EXPECT_THAT(out, HasSubstr("assume(n == m, \"<input>:2:3: nn.relu %y: %y is declared f32[m, 4]\")"));
  EXPECT_THAT(out, HasSubstr("assume(n == 8, \"<input>:3:3: nn.relu %w: %w is declared f32[8, 4]\")"));
}

// A function's declared result type is merged the same way: an exporter's declared output
// over bound symbols wins under an assumption (it stopped the model before).
TEST(InferTypes, DeclaredResultTypeWinsUnderAnAssumption) {
  const std::string out = RunAndPrint(R"(def @main(%x: f32[n, 4], %z: f32[m]) -> f32[m, 4] {
  %y = nn.relu(%x)
  return %y
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("-> f32[m, 4]"));
  EXPECT_THAT(out, HasSubstr("assume(n == m, \"<input>:1:1: result 0 of @main is declared f32[m, 4]\")"));
}

// A declared symbol nothing binds is only a name: inference keeps its own dim, no assumption.
// An inferred constant is a fact the declared name cannot override.
TEST(InferTypes, DeclaredUnboundSymbolOrInferredConstantKeepsTheInference) {
  const std::string out = RunAndPrint(R"(def @main(%x: f32[n, 4], %k: f32[3]) {
  %y = nn.relu(%x) : f32[batch, 4]
  %v = nn.relu(%k) : f32[n]
  return %y, %v
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("nn.relu(%x) : f32[n, 4]"));
  EXPECT_THAT(out, HasSubstr("nn.relu(%k) : f32[3]"));
  EXPECT_THAT(out, Not(HasSubstr("assume")));
}

// Re-running infer-types keeps one copy of each assumption and changes nothing.
TEST(InferTypes, AssumptionsAreIdempotent) {
  const std::string text = R"(def @main(%x: f32[batch, seq, 64], %pos: f32[1, min(128, seq), 64]) {
  %y = add(%x, %pos)
  %z = nn.relu(%y) : f32[batch, seq, 64]
  return %z
}
)";
  ExpectIdempotent(text, "infer-types");
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,infer-types").ok());
  EXPECT_EQ(m->FindFunction("main")->assumptions().size(), 1u);
}

// torch.arange(h, dtype=float32) over a feature map's size: Range(0.0, Cast(h), 1.0). Seen
// through the cast, the range has length h (not a fresh symbol), under the assumption that the
// float32 holds h exactly.
TEST(InferTypes, RangeOverACastSymbolKeepsItsLength) {
  const std::string out = RunAndPrint(R"(def @main(%x: f32[n, h]) {
  %s = shape_of(%x)
  %i = constant<1> : i64[]
  %hh = take(%s, %i) {axis = 0}
  %hf = cast(%hh) {dtype = f32}
  %z = constant<0.0> : f32[]
  %one = constant<1.0> : f32[]
  %r = arange(%z, %hf, %one) {dtype = f32}
  %half = constant<0.5> : f32[]
  %q = arange(%z, %hf, %half) {dtype = f32}
  return %r, %q
}
)",
                                      "infer-types");
  EXPECT_THAT(out, HasSubstr("arange(%z, %hf, %one) : f32[h]"));
  EXPECT_THAT(out, HasSubstr("assume(h <= 16777216, \"<input>:8:3: arange %r: op 'arange': input 1 "
                             "'stop' holds h as f32, exact up to 2^24\")"));
  // A fractional step is not integer arithmetic: its length stays data-dependent.
  EXPECT_THAT(out, HasSubstr("arange(%z, %hf, %half) : f32[dyn1]"));
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
