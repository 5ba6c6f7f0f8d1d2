#include "passes/ir/verifier.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_ops.h"
#include "passes/ir/parser.h"

namespace hetpass {
namespace {

using ::hetpass::testing::TestRegistry;
using ::testing::HasSubstr;

std::unique_ptr<Module> MustParse(absl::string_view text) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.source_name = "v.hir";
  auto m = ParseModule(text, options);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : std::make_unique<Module>();
}

constexpr char kValid[] =
    R"(def @main(%x: f32[n, 4], %c: bool[], %k: i64[]) -> f32[n, 4], f32[?, n, 4] {
  %a = add(%x, %x) : f32[n, 4]
  %v, %i = topk(%a) {k = 2} : f32[n, 2], i64[n, 2]
  %t = tuple(%v, %i) : (f32[n, 2], i64[n, 2])
  %g = get_item(%t) {index = 1} : i64[n, 2]
  %cst = constant<[1, 2]> : i64[2]
  %r = if (%c) {
    %b = nn.relu(%a) : f32[n, 4]
    yield %b
  } else {
    yield %x
  } : f32[n, 4]
  %l, %s = loop(%k, %c, %r) (%it: i64[], %ci: bool[], %acc: f32[n, 4]) {
    %d = add(%acc, %x) : f32[n, 4]
    yield %ci, %d, %acc
  } : f32[n, 4], f32[?, n, 4]
  %w = invoke @helper(%l) : f32[n, 4]
  return %w, %s
}

def @helper(%p: f32[n, 4]) -> f32[n, 4] {
  return %p
}
)";

Block& MainBody(Module& m) { return m.functions()[0]->body(); }
Node& NodeAt(Module& m, int i) { return *MainBody(m).nodes()[i]; }

std::string VerifyError(const Module& m, bool require_types = false) {
  VerifyOptions options;
  options.require_types = require_types;
  absl::Status s = Verify(m, options);
  EXPECT_FALSE(s.ok());
  if (!s.ok()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  }
  return std::string(s.message());
}

TEST(VerifierTest, AcceptsAValidModule) {
  auto m = MustParse(kValid);
  EXPECT_TRUE(Verify(*m).ok());
  VerifyOptions strict;
  strict.require_types = true;
  EXPECT_TRUE(Verify(*m, strict).ok()) << Verify(*m, strict);
}

TEST(VerifierTest, UseBeforeDefinition) {
  auto m = MustParse(kValid);
  auto& nodes = MainBody(*m).mutable_nodes();
  std::swap(nodes[0], nodes[1]);  // topk now uses %a before it is defined
  EXPECT_THAT(VerifyError(*m), HasSubstr("v.hir:3:3: in function '@main': topk %v, %i: operand 0 "
                                         "%a is not defined before its use"));
}

TEST(VerifierTest, RegionValueUsedOutside) {
  auto m = MustParse(kValid);
  Value* inner = NodeAt(*m, 5).region(0)->nodes()[0]->result(0);  // %b inside the if
  NodeAt(*m, 7).set_operand(0, inner);
  EXPECT_THAT(VerifyError(*m), HasSubstr("invoke %w: operand 0 %b is not defined before its use"));
}

TEST(VerifierTest, ReturnedValueFromAnotherFunction) {
  auto m = MustParse(kValid);
  MainBody(*m).mutable_results()[0] = m->functions()[1]->body().param(0);
  EXPECT_THAT(VerifyError(*m), HasSubstr("in function '@main': value 0 of 'return' %p is not "
                                         "defined before its use"));
}

TEST(VerifierTest, NullOperand) {
  auto m = MustParse(kValid);
  NodeAt(*m, 0).set_operand(1, nullptr);
  EXPECT_THAT(VerifyError(*m), HasSubstr("add %a: operand 1 is null"));
}

TEST(VerifierTest, OpArity) {
  auto m = MustParse(kValid);
  NodeAt(*m, 0).mutable_operands().pop_back();
  EXPECT_THAT(VerifyError(*m), HasSubstr("add %a: op 'add' takes 2 operands, found 1"));
}

TEST(VerifierTest, UnknownAttribute) {
  auto m = MustParse(kValid);
  NodeAt(*m, 1).mutable_attrs().Set("bogus", int64_t{1});
  EXPECT_THAT(VerifyError(*m), HasSubstr("topk %v, %i: op 'topk' has no attribute 'bogus'"));
}

TEST(VerifierTest, MissingDefaultedAttribute) {
  auto m = MustParse(kValid);
  NodeAt(*m, 1).mutable_attrs().Erase("axis");
  EXPECT_THAT(VerifyError(*m), HasSubstr("topk %v, %i: attribute 'axis' is missing"));
}

TEST(VerifierTest, AttributeOfTheWrongType) {
  auto m = MustParse(kValid);
  NodeAt(*m, 1).mutable_attrs().Set("k", std::string("two"));
  EXPECT_THAT(VerifyError(*m), HasSubstr("attribute 'k' of op 'topk' must be of type int"));
}

TEST(VerifierTest, ResultCount) {
  auto m = MustParse(kValid);
  NodeAt(*m, 0).AddResult();
  EXPECT_THAT(VerifyError(*m), HasSubstr("add %a, <result 1 of 'add'>: has 2 results, expected 1"));
}

TEST(VerifierTest, IfConditionMustBeBool) {
  auto m = MustParse(kValid);
  NodeAt(*m, 5).set_operand(0, MainBody(*m).param(2));  // %k: i64[]
  EXPECT_THAT(VerifyError(*m), HasSubstr("if %r: condition %k must be a one-element bool tensor, "
                                         "found i64[]"));
}

TEST(VerifierTest, IfBranchesYieldDifferentCounts) {
  auto m = MustParse(kValid);
  Block& else_branch = *NodeAt(*m, 5).region(1);
  else_branch.set_results({else_branch.results()[0], else_branch.results()[0]});
  EXPECT_THAT(VerifyError(*m),
              HasSubstr("if %r: then-branch yields 1 value but else-branch yields 2"));
}

TEST(VerifierTest, LoopBodyParameters) {
  auto m = MustParse(kValid);
  NodeAt(*m, 6).region(0)->AddParam(Type::Tensor(DType::kF32, {4}), "extra");
  EXPECT_THAT(VerifyError(*m), HasSubstr("loop %l, %s: body has 4 parameters but needs 3"));
}

TEST(VerifierTest, LoopBodyYields) {
  auto m = MustParse(kValid);
  Block& body = *NodeAt(*m, 6).region(0);
  body.set_results({body.results()[0]});
  EXPECT_THAT(VerifyError(*m), HasSubstr("loop %l, %s: body yields 1 values but needs at least 2"));
}

TEST(VerifierTest, LoopResultCount) {
  auto m = MustParse(kValid);
  Block& body = *NodeAt(*m, 6).region(0);
  body.set_results({body.results()[0], body.results()[1]});  // drop the scan output
  EXPECT_THAT(VerifyError(*m), HasSubstr("loop %l, %s: has 2 results, expected 1"));
}

TEST(VerifierTest, InvokeTarget) {
  auto m = MustParse(kValid);
  NodeAt(*m, 7).set_callee("nowhere");
  EXPECT_THAT(VerifyError(*m), HasSubstr("invoke %w: invoke of undefined function '@nowhere'"));
}

TEST(VerifierTest, InvokeArity) {
  auto m = MustParse(kValid);
  NodeAt(*m, 7).AddOperand(MainBody(*m).param(0));
  EXPECT_THAT(VerifyError(*m), HasSubstr("invoke %w: '@helper' takes 1 operand, found 2"));
  auto m2 = MustParse(kValid);
  NodeAt(*m2, 7).AddResult();
  EXPECT_THAT(VerifyError(*m2), HasSubstr("'@helper' returns 1 value, but 2 are bound"));
}

TEST(VerifierTest, ConstantDataMatchesItsType) {
  auto m = MustParse(kValid);
  NodeAt(*m, 4).set_constant_value(Tensor::FromInt64s(DType::kI64, {3}, {1, 2, 3}));
  EXPECT_THAT(VerifyError(*m), HasSubstr("v.hir:6:3: in function '@main': constant %cst: constant "
                                         "data of type i64[3] does not match the result type "
                                         "i64[2]"));
}

TEST(VerifierTest, GetItemIndexInRange) {
  auto m = MustParse(kValid);
  NodeAt(*m, 3).mutable_attrs().Set("index", int64_t{2});
  EXPECT_THAT(VerifyError(*m), HasSubstr("get_item %g: index 2 is out of range for "
                                         "(f32[n, 2], i64[n, 2])"));
}

TEST(VerifierTest, GetItemOfATensor) {
  auto m = MustParse(kValid);
  NodeAt(*m, 3).set_operand(0, MainBody(*m).param(0));
  EXPECT_THAT(VerifyError(*m), HasSubstr("get_item %g: operand %x is not a tuple: f32[n, 4]"));
}

TEST(VerifierTest, DuplicateFunctionNames) {
  auto m = MustParse(kValid);
  m->functions()[1]->set_name("main");
  EXPECT_THAT(VerifyError(*m), HasSubstr("function '@main' is defined twice"));
}

TEST(VerifierTest, RequireTypesFindsUntypedValues) {
  auto m = MustParse(R"(def @f(%x: f32[4]) {
  %y = nn.relu(%x)
  return %y
}
)");
  EXPECT_TRUE(Verify(*m).ok());
  EXPECT_THAT(VerifyError(*m, /*require_types=*/true),
              HasSubstr("v.hir:2:3: in function '@f': nn.relu %y: result %y has no type"));
  auto untyped_param = MustParse("def @f(%x) {\n  return %x\n}\n");
  EXPECT_THAT(VerifyError(*untyped_param, true),
              HasSubstr("in function '@f': parameter 0 %x has no type"));
}

TEST(VerifierTest, FunctionResultsMatchDeclaredTypes) {
  auto m = MustParse(R"(def @f(%x: f32[4]) -> f32[5] {
  return %x
}
)");
  EXPECT_TRUE(Verify(*m).ok());  // types are only compared with require_types
  EXPECT_THAT(VerifyError(*m, true),
              HasSubstr("v.hir:1:1: in function '@f': result 0 %x has type f32[4], but the "
                        "function declares f32[5]"));
  auto count = MustParse("def @f(%x: f32[4]) -> f32[4], f32[4] {\n  return %x\n}\n");
  EXPECT_THAT(VerifyError(*count), HasSubstr("declares 2 result types but returns 1 value"));
  // Unknown dims in the declaration accept any dim.
  auto refine = MustParse("def @f(%x: f32[n]) -> f32[?] {\n  return %x\n}\n");
  VerifyOptions strict;
  strict.require_types = true;
  EXPECT_TRUE(Verify(*refine, strict).ok());
  // A declared dim that differs from the returned one matches under the function's assumption
  // that they are equal (ir_parse_fuzzer finding: infer-types keeps a declared result dim over a
  // parameter's), and only under it.
  auto assumed = MustParse(
      "def @f(%x: f32[min(j, k)]) -> f32[min(k, n)]\n"
      "    assume(min(j, k) == min(k, n), \"declared\") {\n  return %x\n}\n");
  EXPECT_TRUE(Verify(*assumed, strict).ok());
  auto unassumed = MustParse("def @f(%x: f32[min(j, k)]) -> f32[min(k, n)] {\n  return %x\n}\n");
  EXPECT_THAT(VerifyError(*unassumed, true), HasSubstr("but the function declares f32[min(k, n)]"));
}

TEST(VerifierTest, NamesUnnamedValuesByPosition) {
  auto m = MustParse("def @f(%0: f32[4]) {\n  %1 = nn.relu(%0)\n  return %1\n}\n");
  NodeAt(*m, 0).mutable_operands().push_back(MainBody(*m).param(0));
  // Numeric source names are kept for messages.
  EXPECT_THAT(VerifyError(*m), HasSubstr("nn.relu %1: op 'nn.relu' takes 1 operand, found 2"));
  // A value created without a name is named by its position.
  NodeAt(*m, 0).result(0)->set_name("");
  EXPECT_THAT(VerifyError(*m), HasSubstr("nn.relu <result 0 of 'nn.relu'>: op 'nn.relu' takes 1 "
                                         "operand, found 2"));
}

// Tests that the structural verifier checks a shape-function mask's form (a dep list with one
// input dependence per parameter, errors naming the location and the mask) and leaves its
// coverage to VerifyModule (src/pass/verify_module_test.cc).
TEST(VerifierTest, ShapeFunctionMaskForm) {
  const char* text = R"(def @main(%x: f32[3, 4], %p: i64[2]) {
  %r_shape = invoke @fused(%x, %p) {mask = MASK, shape_func = true} : i64[2]
  return %r_shape
}

def @fused(%x: f32[n, 4], %p: i64[2]) attributes {primitive = true} {
  %r = dyn.reshape(%x, %p)
  return %r
}
)";
  auto verify = [&](absl::string_view mask) {
    ParseOptions options;
    options.source_name = "v.hir";
    auto m = ParseModule(absl::StrReplaceAll(text, {{"MASK", mask}}), options);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? Verify(**m) : m.status();
  };
  EXPECT_TRUE(verify("[shape, shape]").ok());  // too small, but not the IR layer's to know
  EXPECT_THAT(verify("[shape]").message(),
              HasSubstr("v.hir:2:3: in function '@main': invoke %r_shape: the mask [shape] of a "
                        "shape-function invoke of '@fused' has 1 entry but the callee has 2 "
                        "parameters"));
  EXPECT_THAT(verify("[shape, value, none]").message(),
              HasSubstr("has 3 entries but the callee has 2 parameters"));
  EXPECT_THAT(verify("dep[]").message(), HasSubstr("has 0 entries"));
  // Only a dep list is a mask; the parser types integer lists itself, so these come from C++.
  EXPECT_THAT(verify("\"1, 2\"").message(),
              HasSubstr("needs a mask of type dep[] (one dependence per parameter), found "
                        "\"1, 2\""));
  auto m = ParseModule(absl::StrReplaceAll(text, {{"MASK", "[shape, value]"}}));
  ASSERT_TRUE(m.ok()) << m.status();
  m->get()->FindFunction("main")->body().mutable_nodes()[0]->mutable_attrs().Erase("mask");
  EXPECT_THAT(Verify(**m).message(), HasSubstr("needs a mask of type dep[] (one dependence per "
                                               "parameter), found none"));
}

}  // namespace
}  // namespace hetpass

namespace hetpass {
namespace {

// VerifyOptions::node_check runs once per node, regions included, after the node's own checks,
// and its error is the verifier's.
TEST(VerifierTest, NodeCheckSeesEveryNodeAndFailsTheModule) {
  auto m = MustParse(kValid);
  int nodes = 0;
  WalkNodes(static_cast<const Block&>(MainBody(*m)), [&](const Node&) { ++nodes; });
  VerifyOptions options;
  int seen = 0;
  options.node_check = [&](const Function&, const Node&) {
    ++seen;
    return absl::OkStatus();
  };
  EXPECT_TRUE(Verify(*m, options).ok());
  EXPECT_EQ(seen, nodes);
  options.node_check = [](const Function& f, const Node& n) {
    return n.kind() == NodeKind::kInvoke
               ? absl::InvalidArgumentError(absl::StrCat("@", f.name(), " invokes @", n.callee()))
               : absl::OkStatus();
  };
  absl::Status s = Verify(*m, options);
  EXPECT_EQ(s.message(), "@main invokes @helper");
  // A structural error of the node comes first.
  NodeAt(*m, 0).mutable_operands().pop_back();
  options.node_check = [](const Function&, const Node&) {
    return absl::InvalidArgumentError("node check");
  };
  EXPECT_THAT(Verify(*m, options).message(), HasSubstr("op 'add' takes 2 operands, found 1"));
}

}  // namespace
}  // namespace hetpass
