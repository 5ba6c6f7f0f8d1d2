// Tests of VerifyModule: the structural verifier plus the shape-function mask coverage check.
#include "passes/pass/verify_module.h"

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/parser.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

// A primitive function and a shape-function invoke of it recording mask MASK (built-in ops).
constexpr char kShapeFuncInvoke[] = R"(def @main(%x: f32[3, 4], %p: i64[2]) {
  %r_shape, %q_shape = invoke @fused(%x, %p) {mask = [MASK], shape_func = true} : i64[2], i64[1]
  return %r_shape, %q_shape
}

def @fused(%x: f32[n, 4], %p: i64[2]) attributes {primitive = true} {
  %e = exp(%x)
  %r = dyn.reshape(%e, %p)
  %q = negative(%p)
  return %r, %q
}
)";

absl::Status VerifyShapeFuncMask(absl::string_view mask) {
  ParseOptions options;
  options.source_name = "v.hir";
  auto m = ParseModule(absl::StrReplaceAll(kShapeFuncInvoke, {{"MASK", mask}}), options);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? VerifyModule(**m) : m.status();
}

// Tests that a recorded mask equal to or above the derived one (%x: shape, %p: shape+value)
// verifies: over-declaration only costs copies.
TEST(VerifyModuleTest, ShapeFunctionMaskMayCoverMoreThanDerived) {
  for (absl::string_view mask : {"shape, shape+value", "shape+value, shape+value"}) {
    EXPECT_TRUE(VerifyShapeFuncMask(mask).ok()) << VerifyShapeFuncMask(mask);
  }
}

// Tests that a recorded mask missing a derived bit is an error naming the function, the
// parameter and the bit.
TEST(VerifyModuleTest, ShapeFunctionMaskMissingADerivedBit) {
  absl::Status value = VerifyShapeFuncMask("shape, shape");
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(value.message(),
              HasSubstr("v.hir:2:3: in function '@main': invoke %r_shape, %q_shape: mask of "
                        "'@fused' lacks the value bit of parameter 1 %p: the call records "
                        "'shape' but the body derives 'shape+value'"));
  absl::Status shape = VerifyShapeFuncMask("none, shape+value");
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.message(),
              HasSubstr("mask of '@fused' lacks the shape bit of parameter 0 %x: the call "
                        "records 'none' but the body derives 'shape'"));
  absl::Status both = VerifyShapeFuncMask("shape, none");
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.message(), HasSubstr("lacks the shape and value bits of parameter 1 %p"));
}

// Tests that a structural error is reported before the mask check runs.
TEST(VerifyModuleTest, RunsTheStructuralVerifierFirst) {
  EXPECT_THAT(VerifyShapeFuncMask("shape").message(),
              HasSubstr("has 1 entry but the callee has 2 parameters"));
}

}  // namespace
}  // namespace hetpass
