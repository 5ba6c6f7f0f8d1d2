// Sequence and optional types (`seq<T>`, `opt<T>`) and their builtins (builtins.def) in the
// text IR: print/parse round trips, structural equality and hashing, type joins, and the
// parser's and verifier's errors.
#include "passes/ir/type.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/ir/structural.h"
#include "passes/ir/verifier.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

constexpr char kModule[] = R"(def @main(%s: seq<f32[?, 3]>, %o: opt<seq<i64[2]>>, %t: f32[4, 3], %p: i64[]) -> seq<f32[?, 3]>, f32[?, 3], i64[], bool[] {
  %e = seq.empty() : seq<?>
  %c = seq.construct(%t, %t) : seq<f32[4, 3]>
  %i = seq.insert(%s, %t, %p) : seq<f32[?, 3]>
  %j = seq.insert(%i, %t) : seq<f32[?, 3]>
  %a = seq.at(%j, %p) : f32[?, 3]
  %r = seq.erase(%j, %p) : seq<f32[?, 3]>
  %q = seq.erase(%r) : seq<f32[?, 3]>
  %n = seq.length(%q) : i64[]
  %h = opt.has(%o) : bool[]
  %g = opt.get(%o) : seq<i64[2]>
  %k = opt.some(%t) : opt<f32[4, 3]>
  %z = opt.none() : opt<f32[2]>
  return %q, %a, %n, %h
}
)";

// Tests that every type and builtin prints as it was written and reparses equal.
TEST(ContainerTypes, RoundTripExactly) {
  auto m = ParseModule(kModule);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string printed = PrintModule(**m);
  EXPECT_EQ(printed, kModule);
  auto again = ParseModule(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(StructurallyEqual(**m, **again));
  EXPECT_TRUE(Verify(**m).ok()) << Verify(**m);
}

// Tests that types of different containers or elements differ, and hash apart.
TEST(ContainerTypes, EqualityHashAndJoin) {
  const Type f3 = Type::Tensor(DType::kF32, {DimExpr(3)});
  const Type f4 = Type::Tensor(DType::kF32, {DimExpr(4)});
  EXPECT_EQ(Type::Sequence(f3), Type::Sequence(f3));
  EXPECT_NE(Type::Sequence(f3), Type::Optional(f3));
  EXPECT_NE(Type::Sequence(f3), Type::Sequence(f4));
  EXPECT_NE(Type::Sequence(f3).Hash(), Type::Optional(f3).Hash());
  EXPECT_EQ(JoinTypes(Type::Sequence(f3), Type::Sequence(f4))->ToString(), "seq<f32[?]>");
  EXPECT_EQ(JoinTypes(Type::Sequence(Type()), Type::Sequence(f4))->ToString(), "seq<f32[4]>");
  EXPECT_FALSE(JoinTypes(Type::Sequence(f3), Type::Optional(f3)).has_value());
  EXPECT_FALSE(JoinTypes(Type::Sequence(f3), f3).has_value());
  EXPECT_FALSE(Type::Sequence(f3).is_static());
  EXPECT_TRUE(Type::Optional(f3).is_static());
  auto t = ParseType("opt<seq<f32[?, 2]>>");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, Type::Optional(Type::Sequence(
                    Type::Tensor(DType::kF32, {DimExpr::Unknown(), DimExpr(2)}))));
}

// Tests that a module differing only in one builtin is not structurally equal.
TEST(ContainerTypes, BuiltinsTakePartInStructuralEquality) {
  const char* a = "def @f(%s: seq<f32[2]>) {\n  %r = seq.erase(%s)\n  return %r\n}\n";
  const char* b = "def @f(%s: seq<f32[2]>) {\n  %r = seq.length(%s)\n  return %r\n}\n";
  auto ma = ParseModule(a);
  auto mb = ParseModule(b);
  ASSERT_TRUE(ma.ok() && mb.ok());
  EXPECT_FALSE(StructurallyEqual(**ma, **mb));
}

// Tests the parser's errors: operand counts, a missing declared type, a bad container type.
TEST(ContainerTypes, ParserErrors) {
  struct Case {
    std::string text;
    const char* message;
  } cases[] = {
      {"def @f(%s: seq<f32[2]>) {\n  %r = seq.at(%s)\n  return %r\n}\n",
       "2:8: 'seq.at' does not take 1 operand"},
      {"def @f(%s: seq<f32[2]>) {\n  %r = seq.empty()\n  return %r\n}\n",
       "expected ':' and the type of 'seq.empty'"},
      {"def @f(%s: seq<f32[2]) {\n  return %s\n}\n", "'>' after the contained type"},
      {"def @f(%s: opt f32[2]) {\n  return %s\n}\n", "'<' after 'opt'"},
  };
  for (const Case& c : cases) {
    auto m = ParseModule(c.text);
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_THAT(m.status().message(), HasSubstr(c.message)) << c.text;
  }
}

// Tests that the verifier rejects builtins on the wrong kind of container.
TEST(ContainerTypes, VerifierChecksContainerKinds) {
  auto m = ParseModule("def @f(%o: opt<f32[2]>) {\n  %n = seq.length(%o)\n  return %n\n}\n");
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::Status st = Verify(**m);
  EXPECT_THAT(st.message(), HasSubstr("operand 0 must be a sequence, found opt<f32[2]>"));
}

}  // namespace
}  // namespace hetpass
