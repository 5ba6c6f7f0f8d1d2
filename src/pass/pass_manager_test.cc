#include "passes/pass/pass_manager.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass/pass_registry.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kModule[] = R"(
def @main(%x: f32[n, 4]) {
  %a = exp(%x)
  %b = exp(%x)
  %c = add(%a, %b)
  %dead = tanh(%x)
  return %c
}
)";

// Tests that a pipeline with options parses into passes in order.
TEST(Pipeline, ParsesNamesAndOptions) {
  auto pm = ParsePipeline(" infer-types{max-loop-rounds=3}, cse ,dce,fold-constants{max-bytes=10}");
  ASSERT_TRUE(pm.ok()) << pm.status();
  ASSERT_EQ((*pm)->passes().size(), 4u);
  EXPECT_EQ((*pm)->passes()[0]->name(), "infer-types");
  EXPECT_EQ((*pm)->passes()[3]->name(), "fold-constants");
  auto empty = ParsePipeline("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE((*empty)->passes().empty());
}

// Tests that malformed pipelines give errors naming the problem and its column.
TEST(Pipeline, Errors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"infer-types,nope", "col 13: unknown pass 'nope' (known passes: infer-types, bind-params"},
      {"dce{x=1}", "pass 'dce' has no option 'x' (options: none)"},
      {"fold-constants{max-bytes=lots}", "option 'max-bytes' of pass 'fold-constants' must be an integer, got 'lots'"},
      {"infer-types{max-loop-rounds=1", "unterminated '{' in options of 'infer-types'"},
      {"dce,", "expected a pass name after ','"},
      {"dce;cse", "col 4: expected ',' or end of pipeline, found ';'"},
      {"cse{a=1,a=2}", "option 'a' of 'cse' given twice"},
      {",dce", "col 1: expected a pass name, found ','"},
  };
  for (const auto& [text, message] : cases) {
    auto pm = ParsePipeline(text);
    ASSERT_FALSE(pm.ok()) << text;
    EXPECT_THAT(pm.status().message(), HasSubstr(message)) << text;
  }
}

// Tests print-IR-after, timing and changed reporting.
TEST(PassManager, InstrumentationPrintsAndTimes) {
  auto m = Parse(kModule);
  std::ostringstream ir;
  PassManagerOptions o;
  o.print_ir_after = {"cse"};
  o.ir_out = &ir;
  o.timing = true;
  o.verify_each = true;
  auto pm = ParsePipeline("infer-types,cse,dce", o);
  ASSERT_TRUE(pm.ok());
  auto changed = (*pm)->Run(*m);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_THAT(ir.str(), HasSubstr("// ----- IR after cse -----"));
  EXPECT_THAT(ir.str(), Not(HasSubstr("IR after dce")));
  ASSERT_EQ((*pm)->timings().size(), 3u);
  EXPECT_TRUE((*pm)->timings()[1].changed);
  EXPECT_THAT((*pm)->TimingReport(), HasSubstr("total"));
}

// A deliberately broken pass: leaves a use of a value defined later (breaks SSA dominance).
// `says_changed` false: it also claims to have changed nothing ("silent-break").
class BreakSsaPass : public Pass {
 public:
  explicit BreakSsaPass(bool says_changed = true) : says_changed_(says_changed) {}
  absl::string_view name() const override { return says_changed_ ? "break-ssa" : "silent-break"; }
  absl::StatusOr<bool> Run(Module& m) override {
    auto& nodes = m.functions()[0]->body().mutable_nodes();
    std::swap(nodes[0], nodes[1]);
    nodes[0]->set_operand(0, nodes[1]->result(0));
    return says_changed_;
  }

 private:
  bool says_changed_;
};

// Tests that the verifier after each pass blames the pass that broke the IR.
TEST(PassManager, VerifierBlamesBrokenPass) {
  auto m = Parse("def @main(%x: f32[4]) {\n  %a = exp(%x)\n  %b = tanh(%a)\n  return %b\n}\n");
  PassManagerOptions o;
  o.verify_each = true;
  PassManager pm(o);
  pm.AddPass(std::make_unique<BreakSsaPass>());
  auto r = pm.Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("verifier failed after pass 'break-ssa'"));
}

// Tests that hooks see every pass and their errors stop the pipeline.
TEST(PassManager, HooksRunAfterEachPass) {
  auto m = Parse(kModule);
  auto pm = ParsePipeline("infer-types,cse,dce");
  ASSERT_TRUE(pm.ok());
  std::vector<std::string> seen;
  (*pm)->AddAfterPassHook([&](const Pass& p, const Module&, bool) {
    seen.emplace_back(p.name());
    return p.name() == "dce" ? absl::InternalError("hook says no") : absl::OkStatus();
  });
  auto r = (*pm)->Run(*m);
  EXPECT_EQ(seen, (std::vector<std::string>{"infer-types", "cse", "dce"}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("pass 'dce': hook says no"));
}

// Tests that every registered pass is listed with its options.
TEST(PassRegistry, DescribesEveryPass) {
  const std::string d = PassRegistry::Global().Describe();
  for (const char* name : {"infer-types", "bind-params", "fold-constants", "dce", "cse"}) {
    EXPECT_THAT(d, HasSubstr(name));
  }
}

}  // namespace
}  // namespace hetpass

namespace hetpass {
namespace {

// A pass that claims a postcondition it does not establish.
class BrokenPromisePass : public Pass {
 public:
  absl::string_view name() const override { return "broken-promise"; }
  absl::StatusOr<bool> Run(Module&) override { return false; }
  absl::Status VerifyPostconditions(const Module&) const override {
    return absl::InvalidArgumentError("every value has a device: %x has none");
  }
};

// Tests that pass-specific postconditions are checked after the pass and blame it.
TEST(PassManager, PostconditionsAreCheckedAfterThePass) {
  auto m = testing::Parse("def @main(%x: f32[4]) {\n  return %x\n}\n");
  PassManagerOptions o;
  o.verify_each = true;
  PassManager pm(o);
  pm.AddPass(std::make_unique<BrokenPromisePass>());
  auto r = pm.Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("verifier failed after pass 'broken-promise' (a bug in that pass): every value has a device"));
  o.verify_each = false;
  PassManager unchecked(o);
  unchecked.AddPass(std::make_unique<BrokenPromisePass>());
  EXPECT_TRUE(unchecked.Run(*m).ok());
  // Without the verifier, the postconditions alone (what `hetpass run` does by default).
  o.check_postconditions = true;
  PassManager postconditions_only(o);
  postconditions_only.AddPass(std::make_unique<BrokenPromisePass>());
  auto only = postconditions_only.Run(*m);
  ASSERT_FALSE(only.ok());
  EXPECT_THAT(only.status().message(), ::testing::HasSubstr("postcondition failed after pass 'broken-promise' (a bug in that pass): every value has a device"));
  o.check_postconditions = false;
  // An unchanged module skips the structural verifier (verify_unchanged off), never the pass's
  // own postconditions.
  o.verify_each = true;
  o.verify_unchanged = false;
  PassManager lean(o);
  lean.AddPass(std::make_unique<BrokenPromisePass>());
  auto again = lean.Run(*m);
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.status().message(), ::testing::HasSubstr("every value has a device"));
}

// A pass that breaks the module and says it changed nothing (a bug): the verifier after every
// pass finds it; with verify_unchanged off the structural verifier trusts the pass's answer
// (what `hetpass run` does).
TEST(PassManager, UnchangedPassesAreVerifiedUnlessAskedNotTo) {
  const char* text = "def @main(%x: f32[4]) {\n  %a = exp(%x)\n  %b = tanh(%a)\n  return %b\n}\n";
  PassManagerOptions o;
  o.verify_each = true;
  {
    auto m = testing::Parse(text);
    PassManager pm(o);
    pm.AddPass(std::make_unique<BreakSsaPass>(/*says_changed=*/false));
    auto r = pm.Run(*m);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("verifier failed after pass 'silent-break'"));
  }
  o.verify_unchanged = false;
  auto m = testing::Parse(text);
  PassManager pm(o);
  pm.AddPass(std::make_unique<BreakSsaPass>(/*says_changed=*/false));
  EXPECT_TRUE(pm.Run(*m).ok());
}

}  // namespace
}  // namespace hetpass
