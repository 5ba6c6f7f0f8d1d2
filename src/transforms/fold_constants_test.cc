#include "passes/transforms/fold_constants.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::ExpectIdempotent;
using ::hetpass::testing::RunAndPrint;
using ::testing::HasSubstr;
using ::testing::Not;

// Tests that arithmetic on constants folds to one constant and dce removes the inputs.
TEST(FoldConstants, FoldsConstantArithmetic) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[3]) {
  %a = constant<[1.0, 2.0, 3.0]> : f32[3]
  %b = constant<[10.0, 20.0, 30.0]> : f32[3]
  %c = add(%a, %b)
  %d = multiply(%c, %c)
  %y = add(%x, %d)
  return %y
}
)",
                                      "infer-types,fold-constants,dce");
  EXPECT_THAT(out, HasSubstr("%d = constant<[121.0, 484.0, 1089.0]> : f32[3]"));
  EXPECT_THAT(out, Not(HasSubstr("multiply")));
  EXPECT_THAT(out, Not(HasSubstr("%a =")));
}

// Tests that shape_of of a static tensor folds without its data, and so does arithmetic on it.
TEST(FoldConstants, FoldsStaticShapes) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[4, 8]) {
  %s = shape_of(%x)
  %two = constant<2> : i64[]
  %t = multiply(%s, %two)
  return %t
}
)",
                                      "infer-types,fold-constants,dce");
  EXPECT_THAT(out, HasSubstr("%t = constant<[8, 16]> : i64[2]"));
  EXPECT_THAT(out, Not(HasSubstr("shape_of")));
}

// Tests that symbolic shapes are not folded (their values are not known).
TEST(FoldConstants, KeepsSymbolicShapes) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[n, 8]) {
  %s = shape_of(%x)
  return %s
}
)",
                                      "infer-types,fold-constants");
  EXPECT_THAT(out, HasSubstr("shape_of(%x)"));
}

// Tests that the size limit stops folding of big results.
TEST(FoldConstants, RespectsMaxBytes) {
  const std::string out = RunAndPrint(R"(
def @main() {
  %a = constant<[1.0, 2.0]> : f32[2]
  %b = add(%a, %a)
  return %b
}
)",
                                      "infer-types,fold-constants{max-bytes=4}");
  EXPECT_THAT(out, HasSubstr("add(%a, %a)"));
}

// Tests that folding is idempotent.
TEST(FoldConstants, Idempotent) {
  ExpectIdempotent(R"(
def @main(%x: f32[4, 8]) {
  %s = shape_of(%x)
  %a = constant<[1, 2]> : i64[2]
  %t = add(%s, %a)
  return %t
}
)",
                   "infer-types,fold-constants,dce");
}

}  // namespace
}  // namespace hetpass
