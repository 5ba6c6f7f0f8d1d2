#include "passes/analysis/baseline_masks.h"

#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::testing::HasSubstr;
using ::testing::Not;

InputDep Dep(BaselineMasks b, absl::string_view op, int input) {
  const OpDef* def = BaselineRegistry(b).Find(op);
  EXPECT_NE(def, nullptr) << op;
  return def == nullptr ? InputDep::kNone : def->dep(input);
}

TEST(BaselineMasks, Names) {
  for (BaselineMasks b : kAllBaselineMasks) {
    EXPECT_EQ(ParseBaselineMasks(BaselineMasksName(b)), b);
  }
  EXPECT_EQ(ParseBaselineMasks("tvm"), std::nullopt);
  EXPECT_EQ(ParseBaselineMasks(""), std::nullopt);
}

// Tests Relay's table: per-input flags where Relay registers them (a strided slice's data
// passes only its shape), whole tensors where Relay registers a single True (tile, topk, the
// resize's image), argwhere without its on-device count, NMS keeping it, static ops as ours.
TEST(BaselineMasks, RelayTable) {
  const BaselineMasks r = BaselineMasks::kRelay;
  EXPECT_EQ(Dep(r, "dyn.strided_slice", 0), InputDep::kShape);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(Dep(r, "dyn.strided_slice", i), InputDep::kValue) << i;
  EXPECT_EQ(Dep(r, "dyn.reshape", 0), InputDep::kShape);
  EXPECT_EQ(Dep(r, "dyn.squeeze", 0), InputDep::kShape);
  EXPECT_EQ(Dep(r, "dyn.unsqueeze", 0), InputDep::kShapeAndValue);  // dyn.expand_dims [True, True]
  EXPECT_EQ(Dep(r, "dyn.tile", 0), InputDep::kShapeAndValue);
  EXPECT_EQ(Dep(r, "dyn.topk", 0), InputDep::kShapeAndValue);
  EXPECT_EQ(Dep(r, "dyn.image.resize2d", 0), InputDep::kShapeAndValue);
  EXPECT_EQ(Dep(r, "dyn.nn.pad", 2), InputDep::kValue);  // pad_value: ours reads nothing
  EXPECT_EQ(Dep(r, "argwhere", 0), InputDep::kValue);
  EXPECT_EQ(BaselineRegistry(r).Find("argwhere")->shape_counter(), "");
  EXPECT_EQ(BaselineRegistry(r).Find("non_max_suppression")->shape_counter(),
            OpRegistry::Global().Find("non_max_suppression")->shape_counter());
  EXPECT_EQ(Dep(r, "nn.dense", 1), OpRegistry::Global().Find("nn.dense")->dep(1));
  // The real registry is untouched.
  EXPECT_EQ(OpRegistry::Global().Find("dyn.tile")->dep(0), InputDep::kShape);
  EXPECT_EQ(OpRegistry::Global().Find("argwhere")->shape_counter(), "count_nonzero");
}

// Tests the single flag: every input of a value-reading op gains `value`, and the counters
// Relay never had are dropped as in the relay table.
TEST(BaselineMasks, SingleFlag) {
  const BaselineMasks s = BaselineMasks::kSingleFlag;
  EXPECT_EQ(Dep(s, "dyn.strided_slice", 0), InputDep::kShapeAndValue);
  EXPECT_EQ(Dep(s, "dyn.reshape", 0), InputDep::kShapeAndValue);
  EXPECT_EQ(Dep(s, "dyn.full", 0), InputDep::kValue);
  EXPECT_EQ(BaselineRegistry(s).Find("argwhere")->shape_counter(), "");
  EXPECT_EQ(Dep(s, "nn.dense", 0), OpRegistry::Global().Find("nn.dense")->dep(0));
}

// Tests the listing: only ops whose masks differ, each relay row citing TVM's source.
TEST(BaselineMasks, Describe) {
  const std::string relay = DescribeBaseline(BaselineMasks::kRelay);
  EXPECT_THAT(relay, HasSubstr("dyn.tile"));
  EXPECT_THAT(relay, HasSubstr("register_shape_func(\"dyn.tile\", True)"));
  EXPECT_THAT(relay, HasSubstr("apache/tvm"));
  EXPECT_THAT(relay, HasSubstr("on-device count count_nonzero dropped"));
  EXPECT_THAT(relay, Not(HasSubstr("\ndyn.strided_slice ")));  // same masks as ours
  const std::string single = DescribeBaseline(BaselineMasks::kSingleFlag);
  EXPECT_THAT(single, HasSubstr("dyn.strided_slice"));
  EXPECT_THAT(single, Not(HasSubstr("[Relay")));
}

TEST(BaselineMasks, PipelineWithBaseline) {
  EXPECT_EQ(PipelineWithBaseline("infer-types,plan-devices{target=sim,outputs=target},fuse-ops,"
                                 "manifest-alloc",
                                 BaselineMasks::kRelay),
            "infer-types,plan-devices{target=sim,outputs=target},fuse-ops,"
            "baseline-masks{table=relay},manifest-alloc");
  EXPECT_EQ(PipelineWithBaseline("infer-types,plan-devices", BaselineMasks::kSingleFlag),
            "infer-types,plan-devices,baseline-masks{table=single-flag}");
}

// Tests the pass: every call is rebound to the baseline registry's op (primitive functions
// included), placement and fusion stay as planned with our masks, and the ledger then counts
// the baseline's copies: the slice's data crosses under the single flag only.
TEST(BaselineMasks, PassKeepsPlacementAndFusion) {
  const std::string text = R"(
def @main(%x: f32[n, 64], %b: i64[2], %e: i64[2], %s: i64[2]) {
  %y = exp(%x)
  %z = dyn.strided_slice(%y, %b, %e, %s)
  %w = tanh(%z)
  return %w
}
)";
  std::string printed[3];
  int64_t d2h[3];
  int k = 0;
  for (const char* table : {"", "relay", "single-flag"}) {
    auto m = Parse(text);
    std::string pipeline = "infer-types,plan-devices{target=sim,outputs=target},fuse-ops";
    if (*table) pipeline = PipelineWithBaseline(pipeline, *ParseBaselineMasks(table));
    PassManagerOptions o;
    o.verify_each = true;
    auto pm = ParsePipeline(pipeline, o);
    ASSERT_TRUE(pm.ok()) << pm.status();
    ASSERT_TRUE((*pm)->Run(*m).ok());
    if (*table) {
      const OpRegistry& reg = BaselineRegistry(*ParseBaselineMasks(table));
      for (const auto& f : m->functions()) {
        WalkNodes(f->body(), [&](Node& n) {
          if (n.kind() == NodeKind::kCall && n.op() != nullptr) {
            EXPECT_EQ(n.op(), reg.Find(n.op()->name())) << n.op()->name();
          }
        });
      }
    }
    auto ledger = ComputeCopyLedger(*m);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    d2h[k] = ledger->Sites(CopyDirection::kDeviceToHost);
    printed[k++] = PrintModule(*m);
  }
  // Same IR: the pass changes masks, not the program; it only forgets the data-dependent
  // symbols infer-types named (Relay types have none): dynN prints as `?` again.
  const std::string unnamed = std::regex_replace(printed[0], std::regex("dyn[0-9]+"), "?");
  EXPECT_NE(unnamed, printed[0]);
  EXPECT_EQ(unnamed, printed[1]);
  EXPECT_EQ(unnamed, printed[2]);
  EXPECT_EQ(d2h[0], d2h[1]);          // relay: a strided slice's data passes its shape only
  EXPECT_EQ(d2h[2], d2h[0] + 1);      // single flag: the sliced tensor crosses (implied copy)
}

TEST(BaselineMasks, BadTableIsAnError) {
  auto pm = ParsePipeline("baseline-masks{table=tvm}", PassManagerOptions());
  ASSERT_FALSE(pm.ok());
  EXPECT_THAT(pm.status().message(), HasSubstr("tvm"));
}

}  // namespace
}  // namespace hetpass
