#include "passes/ir/structural.h"

#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_ops.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"

namespace hetpass {
namespace {

using ::hetpass::testing::TestRegistry;
using ::testing::HasSubstr;

std::unique_ptr<Module> MustParse(absl::string_view text) {
  ParseOptions options;
  options.registry = &TestRegistry();
  auto m = ParseModule(text, options);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : std::make_unique<Module>();
}

constexpr char kBase[] = R"(def @main(%x: f32[n, 4], %c: bool[]) -> f32[n, 4] {
  %a = add(%x, %x) : f32[n, 4] @cpu
  %v, %i = topk(%a) {k = 2} : f32[n, 2], i64[n, 2]
  %cst = constant<[1.5, 2.5]> : f32[2]
  %r = if (%c) {
    %b = nn.relu(%a) : f32[n, 4]
    yield %b
  } else {
    yield %x
  } : f32[n, 4]
  %w = invoke @helper(%r) : f32[n, 4]
  return %w
}

def @helper(%p: f32[n, 4]) -> f32[n, 4] {
  return %p
}
)";

// Applies one textual edit to kBase and expects the result to differ, with `why` naming it.
void ExpectDifferent(absl::string_view from, absl::string_view to, absl::string_view why_part) {
  const std::string edited = absl::StrReplaceAll(kBase, {{from, to}});
  ASSERT_NE(edited, kBase) << from;
  auto a = MustParse(kBase);
  auto b = MustParse(edited);
  std::string why;
  EXPECT_FALSE(StructurallyEqual(*a, *b, &why)) << edited;
  EXPECT_THAT(why, HasSubstr(why_part));
  EXPECT_NE(StructuralHash(*a), StructuralHash(*b));
}

TEST(StructuralTest, EqualUpToRenamingOfValues) {
  auto a = MustParse(kBase);
  std::string renamed = kBase;
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"%x", "%input"}, {"%a", "%0"}, {"%v", "%values"}, {"%b", "%7"}, {"%r", "%res"}}) {
    renamed = absl::StrReplaceAll(renamed, {{from, to}});
  }
  // Locations and node names are not compared either.
  renamed = absl::StrReplaceAll(
      renamed, {{"  %w = invoke", "\n\n  %w = invoke"}, {"{k = 2} :", "{k = 2} :"}});
  auto b = MustParse(renamed);
  std::string why;
  EXPECT_TRUE(StructurallyEqual(*a, *b, &why)) << why;
  EXPECT_EQ(StructuralHash(*a), StructuralHash(*b));
  EXPECT_TRUE(StructurallyEqual(*a->functions()[0], *b->functions()[0]));
  EXPECT_EQ(StructuralHash(*a->functions()[0]), StructuralHash(*b->functions()[0]));
}

TEST(StructuralTest, OperandWiringMatters) {
  // Same ops and types, different dataflow: %b uses %x instead of %a.
  ExpectDifferent("%b = nn.relu(%a)", "%b = nn.relu(%x)",
                  "binding 0 ('nn.relu' vs 'nn.relu'): "
                  "operand 0 differs");
}

TEST(StructuralTest, DifferencesAreFound) {
  ExpectDifferent("{k = 2}", "{k = 3}",
                  "attributes differ: {axis = -1, k = 2} vs {axis = -1, "
                  "k = 3}");
  ExpectDifferent("[1.5, 2.5]", "[1.5, 2.25]", "constant data differs");
  ExpectDifferent("%a = add(%x, %x) : f32[n, 4]", "%a = add(%x, %x) : f32[m, 4]",
                  "result 0 has type f32[n, 4] vs f32[m, 4]");
  ExpectDifferent("f32[n, 4] @cpu", "f32[n, 4] @cuda", "devices differ: 'cpu' vs 'cuda'");
  ExpectDifferent("f32[n, 4] @cpu", "f32[n, 4]", "devices differ: 'cpu' vs ''");
  ExpectDifferent("nn.relu(%a)", "add(%a, %a)", "ops differ");
  ExpectDifferent("%c: bool[]", "%c: bool[1]", "parameter 1 has type bool[] vs bool[1]");
  ExpectDifferent("-> f32[n, 4] {\n  %a", "{\n  %a", "declared result types differ");
  ExpectDifferent("    yield %x\n", "    %e = nn.relu(%x)\n    yield %e\n",
                  "region 1: 0 vs 1 bindings");
  ExpectDifferent("invoke @helper(%r)", "invoke @main(%r, %c)", "callees differ");
}

TEST(StructuralTest, FunctionNamesAreIgnoredForFunctions) {
  auto m =
      MustParse("def @f(%x: f32[4]) {\n  return %x\n}\ndef @g(%y: f32[4]) {\n  return %y\n}\n");
  EXPECT_TRUE(StructurallyEqual(*m->functions()[0], *m->functions()[1]));
  EXPECT_EQ(StructuralHash(*m->functions()[0]), StructuralHash(*m->functions()[1]));
  // A module compares them: invoke refers to functions by name.
  auto a = MustParse(kBase);
  auto b = MustParse(kBase);
  b->functions()[1]->set_name("other");
  std::string why;
  EXPECT_FALSE(StructurallyEqual(*a, *b, &why));
  EXPECT_EQ(why, "function 1 is '@helper' vs '@other'");
  EXPECT_NE(StructuralHash(*a), StructuralHash(*b));
}

TEST(StructuralTest, ModulesWithDifferentFunctionCounts) {
  auto a = MustParse(kBase);
  Module empty;
  std::string why;
  EXPECT_FALSE(StructurallyEqual(*a, empty, &why));
  EXPECT_EQ(why, "modules have 2 vs 0 functions");
  EXPECT_TRUE(StructurallyEqual(empty, Module()));
}

TEST(StructuralTest, EqualAfterPrintAndParse) {
  auto a = MustParse(kBase);
  auto b = MustParse(PrintModule(*a));
  EXPECT_TRUE(StructurallyEqual(*a, *b));
  EXPECT_EQ(StructuralHash(*a), StructuralHash(*b));
  Module c;
  CloneFunction(*a->functions()[0], c, "main");
  CloneFunction(*a->functions()[1], c, "helper");
  EXPECT_TRUE(StructurallyEqual(*a, c));
  EXPECT_EQ(StructuralHash(*a), StructuralHash(c));
}

// Tests that a clone keeps each builtin's operation (it once came back as seq.construct, the
// first builtin, so a cloned module failed infer-types: the Python package clones before compile).
TEST(StructuralTest, CloneKeepsBuiltins) {
  auto a = MustParse(
      "def @main(%s: seq<f32[?]>, %o: opt<f32[2]>, %i: i64[]) {\n"
      "  %n = seq.length(%s)\n  %e = seq.at(%s, %i)\n  %s2 = seq.insert(%s, %e)\n"
      "  %h = opt.has(%o)\n  return %n, %s2, %h\n}\n");
  Module c;
  CloneFunction(*a->functions()[0], c, "main");
  EXPECT_EQ(PrintModule(c), PrintModule(*a));
}

// Tests that groups of op calls compare as the function outlining them would be: equal up to
// renaming (parameters numbered by first use), and hashing alike then; a value used twice, a
// parameter's type, an attribute or the chosen outputs tell groups apart.
TEST(StructuralTest, GroupsCompareAsTheFunctionOutliningThem) {
  auto m = MustParse(R"(def @main(%x: f32[n, 4], %y: f32[n, 4], %z: f32[m, 4]) {
  %a = add(%x, %y) : f32[n, 4]
  %b = nn.relu(%a) : f32[n, 4]
  %c = add(%y, %x) : f32[n, 4]
  %d = nn.relu(%c) : f32[n, 4]
  %e = add(%x, %x) : f32[n, 4]
  %f = nn.relu(%e) : f32[n, 4]
  %g = add(%z, %z) : f32[m, 4]
  %h = nn.relu(%g) : f32[m, 4]
  %v, %i = topk(%x) {k = 2} : f32[n, 2], i64[n, 2]
  %v2, %i2 = topk(%y) {k = 2} : f32[n, 2], i64[n, 2]
  %v3, %i3 = topk(%y) {k = 3} : f32[n, 3], i64[n, 3]
  return %b
}
)");
  const auto& nodes = m->FindFunction("main")->body().nodes();
  auto group = [&](int first, int count) {
    std::vector<const Node*> g;
    for (int k = first; k < first + count; ++k) g.push_back(nodes[k].get());
    return g;
  };
  auto out = [&](int node, int result = 0) { return nodes[node]->result(result); };
  const std::vector<const Node*> ab = group(0, 2), cd = group(2, 2), ef = group(4, 2), gh = group(6, 2);
  const std::vector<Value*> b = {out(1)}, d = {out(3)}, f = {out(5)}, h = {out(7)};
  EXPECT_TRUE(GroupsStructurallyEqual(ab, b, cd, d));
  EXPECT_EQ(GroupStructuralHash(ab, b), GroupStructuralHash(cd, d));
  EXPECT_FALSE(GroupsStructurallyEqual(ab, b, ef, f));  // one parameter used twice
  EXPECT_FALSE(GroupsStructurallyEqual(ef, f, gh, h));  // f32[n, 4] vs f32[m, 4]
  const std::vector<Value*> ab_both = {out(0), out(1)}, cd_both = {out(2), out(3)};
  const std::vector<Value*> cd_swapped = {out(3), out(2)};
  EXPECT_TRUE(GroupsStructurallyEqual(ab, ab_both, cd, cd_both));
  EXPECT_FALSE(GroupsStructurallyEqual(ab, ab_both, cd, cd_swapped));
  EXPECT_FALSE(GroupsStructurallyEqual(ab, b, cd, cd_both));
  const std::vector<Value*> v = {out(8, 0)}, v2 = {out(9, 0)}, i2 = {out(9, 1)}, v3 = {out(10, 0)};
  EXPECT_TRUE(GroupsStructurallyEqual(group(8, 1), v, group(9, 1), v2));
  EXPECT_FALSE(GroupsStructurallyEqual(group(8, 1), v, group(9, 1), i2));  // another result
  EXPECT_FALSE(GroupsStructurallyEqual(group(9, 1), v2, group(10, 1), v3));  // k differs
  EXPECT_FALSE(GroupsStructurallyEqual(ab, b, group(0, 1), {out(0)}));  // member counts
}

}  // namespace
}  // namespace hetpass

namespace hetpass {
namespace {

// Tests that parameter devices and function attributes take part in equality and hashing.
TEST(StructuralTest, ParamDevicesAndFunctionAttributesMatter) {
  auto a = MustParse("def @f(%x: f32[4] @sim) attributes {primitive = true} {\n  return %x\n}\n");
  auto b = MustParse("def @f(%y: f32[4] @sim) attributes {primitive = true} {\n  return %y\n}\n");
  auto c = MustParse("def @f(%x: f32[4] @cpu) attributes {primitive = true} {\n  return %x\n}\n");
  auto d = MustParse("def @f(%x: f32[4] @sim) {\n  return %x\n}\n");
  EXPECT_TRUE(StructurallyEqual(*a, *b));
  EXPECT_EQ(StructuralHash(*a), StructuralHash(*b));
  std::string why;
  EXPECT_FALSE(StructurallyEqual(*a, *c, &why));
  EXPECT_THAT(why, HasSubstr("parameter 0 is on 'sim' vs 'cpu'"));
  EXPECT_FALSE(StructurallyEqual(*a, *d, &why));
  EXPECT_THAT(why, HasSubstr("function attributes differ"));
}

}  // namespace
}  // namespace hetpass
