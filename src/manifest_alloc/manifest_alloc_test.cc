#include "passes/manifest_alloc/manifest_alloc.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/ir/printer.h"
#include "passes/device_planner/plan_devices.h"
#include "passes/pass/verify_module.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/testing/copy_budget.h"
#include "support/ir_test_util.h"
#include "support/seed_models.h"

namespace hetpass {
namespace {

using ::hetpass::testing::ExpectIdempotent;
using ::hetpass::testing::RunPipeline;
using ::hetpass::testing::SeedMlp;
using ::hetpass::testing::SingleFlag;
using ::hetpass::testing::SliceChain;
using ::testing::HasSubstr;

constexpr char kPipeline[] = "infer-types,plan-devices,fuse-ops,manifest-alloc";

struct Compiled {
  std::unique_ptr<Module> module;
  CopyLedger ledger;
  int shape_functions = 0;
  int kernels = 0;
  std::string text;
};

Compiled Compile(const std::string& text, const std::string& pipeline = kPipeline,
                 const OpRegistry* registry = nullptr) {
  Compiled c;
  ParseOptions o;
  o.registry = registry;
  o.allow_elided_constants = true;
  auto m = ParseModule(text, o);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return c;
  c.module = *std::move(m);
  auto r = RunPipeline(*c.module, pipeline);
  EXPECT_TRUE(r.ok()) << r.status();
  if (pipeline.find("manifest-alloc") != std::string::npos) {
    EXPECT_TRUE(VerifyExplicitAllocation(*c.module).ok());
  }
  auto ledger = ComputeCopyLedger(*c.module);
  EXPECT_TRUE(ledger.ok());
  if (ledger.ok()) c.ledger = *ledger;
  WalkNodes(static_cast<const Block&>(c.module->FindFunction("main")->body()), [&](const Node& n) {
    if (n.kind() != NodeKind::kInvoke) return;
    c.shape_functions += n.attrs().Has("shape_func");
    c.kernels += n.attrs().Has("outputs");
  });
  c.text = PrintModule(*c.module);
  return c;
}

// Tests the 3-layer MLP, static and dynamic batch: 3 kernels, 0 shape functions (sizes are
// host expressions of the batch symbol), and only the input upload and result download.
TEST(ManifestAlloc, MlpNeedsNoShapeFunction) {
  for (const std::string batch : {"16", "n"}) {
    Compiled c = Compile(SeedMlp(batch));
    EXPECT_EQ(c.kernels, 3) << batch;
    EXPECT_EQ(c.shape_functions, 0) << batch;
    ExpectCopies(c.ledger, {.h2d = 1, .d2h = 1});
    const DimExpr::Bindings n16 = {{"n", 16}};
    EXPECT_EQ(LedgerBytes(c.ledger, CopyDirection::kHostToDevice, n16), 16 * 1024 * 4);
    EXPECT_EQ(LedgerBytes(c.ledger, CopyDirection::kDeviceToHost, n16), 16 * 128 * 4);
  }
  EXPECT_THAT(Compile(SeedMlp("n")).text, HasSubstr("memory.alloc_storage() : storage[n*2048] @sim"));
  EXPECT_THAT(Compile(SeedMlp("16")).text, HasSubstr("memory.alloc_storage() : storage[32768] @sim"));
}

// The seed case: ten dyn.strided_slice with run-time begin/end/strides. Per-input masks: the
// chain fuses (no slice reads its input's values), and ONE composed host shape function reads
// begin/end/strides on the host and the input's shape only: no copy. Single flag: every slice
// reads its input's values, so nothing fuses, ten shape functions each need the whole sliced
// tensor: ten copies, the same ten the ledger implied before manifest-alloc, now explicit.
TEST(ManifestAlloc, SeedSliceChainUnderBothMasks) {
  const char* pipeline = "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc";
  Compiled ours = Compile(SliceChain(), pipeline);
  EXPECT_EQ(ours.shape_functions, 1);
  ExpectCopies(ours.ledger, {.h2d = 0, .d2h = 0});

  Compiled old = Compile(SliceChain(), pipeline, &SingleFlag());
  EXPECT_EQ(old.shape_functions, 10);
  ExpectCopies(old.ledger, {.h2d = 0, .d2h = 10});
  for (const LedgerEntry& e : old.ledger.entries) EXPECT_FALSE(e.implied) << e.value;
  // The first copy is the whole input: n*64 floats.
  EXPECT_EQ(old.ledger.entries[0].bytes.ToString(), "n*256");
  // Before manifest-alloc the same ten copies were implied: the ledger is exact at every stage.
  Compiled planned = Compile(SliceChain(), "infer-types,plan-devices{outputs=target},fuse-ops", &SingleFlag());
  ExpectCopies(planned.ledger, {.h2d = 0, .d2h = 10});
}

// Tests argwhere on the accelerator: its count is computed there and only those 8 bytes cross.
TEST(ManifestAlloc, ArgwhereCopiesOnlyTheCount) {
  Compiled c = Compile(::hetpass::testing::kArgwhereCount,
                       "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc");
  ExpectCopies(c.ledger, {.h2d = 0, .d2h = 1});
  EXPECT_EQ(c.ledger.entries[0].bytes, DimExpr(8));
  EXPECT_THAT(c.ledger.entries[0].reason, HasSubstr("memory.alloc_tensor_dyn"));
  // The count's dim is a data-dependent symbol: bound here, it sizes the cast's output.
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_tensor_dyn(%i_count_cpu) : i64[dyn1, 2] @sim"));
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_storage() : storage[dyn1*8] @sim"));
  EXPECT_EQ(c.shape_functions, 0);
}

// Tests non_max_suppression on the accelerator: its counter runs there on all five operands
// (mapped through the primitive's four parameters, one constant feeding both thresholds) with
// the op's attributes, and only the 8-byte count crosses; boxes and scores never do.
TEST(ManifestAlloc, NonMaxSuppressionCopiesOnlyTheCount) {
  Compiled c = Compile(::hetpass::testing::kNonMaxSuppressionCount,
                       "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc");
  ExpectCopies(c.ledger, {.h2d = 0, .d2h = 1});
  ASSERT_EQ(c.ledger.entries.size(), 1u);
  EXPECT_EQ(c.ledger.entries[0].bytes, DimExpr(8));
  // The cast needs no shape function: its size is dyn1, bound by %sel's allocation.
  EXPECT_EQ(c.shape_functions, 0);
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_tensor_dyn(%sel_count_cpu) : i64[dyn1, 3] @sim"));
  EXPECT_THAT(c.text, HasSubstr("invoke @count_non_max_suppression_0(%boxes, %scores, %max, "
                                "%half, %sel_count) {outputs = 1} @sim"));
  const Function* counter = c.module->FindFunction("count_non_max_suppression_0");
  ASSERT_NE(counter, nullptr) << c.text;
  EXPECT_EQ(counter->body().num_params(), 4);
  const Node& call = *counter->body().nodes()[0];
  EXPECT_EQ(call.op()->name(), "non_max_suppression_count");
  ASSERT_EQ(call.num_operands(), 5);
  EXPECT_EQ(call.operand(3), call.operand(4));  // the shared threshold constant
  EXPECT_EQ(call.attrs().GetInt("center_point_box"), 1);
  ExpectIdempotent(::hetpass::testing::kNonMaxSuppressionCount,
                   "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc");
}

// Tests unique on the accelerator: its counter runs once and its one 8-byte count crosses once,
// sizing all three counted results (y, indices, counts); inverse_indices is known from n.
TEST(ManifestAlloc, UniqueCountsOnceForThreeResults) {
  constexpr char kUnique[] = R"(
def @main(%x: f32[n] @sim) {
  %e = exp(%x)
  %y, %first, %inverse, %counts = unique(%e) {sorted = false}
  return %y, %first, %inverse, %counts
}
)";
  const char* pipeline = "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc";
  Compiled c = Compile(kUnique, pipeline);
  ExpectCopies(c.ledger, {.h2d = 0, .d2h = 1});
  ASSERT_EQ(c.ledger.entries.size(), 1u);
  EXPECT_EQ(c.ledger.entries[0].bytes, DimExpr(8));
  EXPECT_EQ(c.shape_functions, 0);
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_tensor_dyn(%y_count_cpu) : f32[dyn1] @sim"));
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_tensor_dyn(%y_count_cpu) : i64[dyn2] @sim"));
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_tensor_dyn(%y_count_cpu) : i64[dyn3] @sim"));
  EXPECT_THAT(c.text, HasSubstr("memory.alloc_tensor(%inverse_storage) : i64[n] @sim"));
  size_t counters = 0;
  for (size_t at = c.text.find("invoke @count_unique_0("); at != std::string::npos;
       at = c.text.find("invoke @count_unique_0(", at + 1)) {
    ++counters;
  }
  EXPECT_EQ(counters, 1u) << c.text;
  ExpectIdempotent(kUnique, pipeline);
}

// Tests a reshape target from shape arithmetic: known symbolically, so no shape function and no
// copy; and the ops TVM over-declared, with run-time host values: shape functions run, but no
// data tensor crosses.
TEST(ManifestAlloc, ShapeFunctionsNeverCopyData) {
  Compiled reshape = Compile(::hetpass::testing::kReshapeFromShapeArithmetic);
  EXPECT_EQ(reshape.shape_functions, 0);
  ExpectCopies(reshape.ledger, {.h2d = 1, .d2h = 1});

  const std::string over = ::hetpass::testing::kOverDeclaredOps;
  const char* pipeline = "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc";
  Compiled ours = Compile(over, pipeline);
  // tile+reshape fuse (injective, values from host inputs); pad and resize stand alone (the
  // native image kernel runs each only alone: fuse-ops rule h), and so does topk (opaque).
  EXPECT_EQ(ours.shape_functions, 4);
  ExpectCopies(ours.ledger, {.h2d = 1, .d2h = 0});
  // Single flag copies the data of resize, pad, tile and topk; the reshape's size is known
  // (over the symbols bound by the tile's allocation), so it runs no shape function.
  Compiled old = Compile(over, pipeline, &SingleFlag());
  ExpectCopies(old.ledger, {.h2d = 1, .d2h = 4});
}

// Tests that a tensor whose shape and values two shape functions need (single flag: a slice's
// data is shape+value) is copied once, shared.
TEST(ManifestAlloc, ShapeAndValueInputCopiesOnce) {
  Compiled c = Compile(::hetpass::testing::kShapeAndValueCopiedOnce,
                       "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc",
                       &SingleFlag());
  EXPECT_EQ(c.shape_functions, 2);
  ExpectCopies(c.ledger, {.h2d = 0, .d2h = 1});
}

// Tests idempotence and the errors for IR that is not ready.
TEST(ManifestAlloc, IdempotentAndErrors) {
  ExpectIdempotent(SliceChain(), "infer-types,plan-devices,fuse-ops,manifest-alloc");
  auto unfused = testing::Parse("def @main(%x: f32[4]) {\n  %y = exp(%x)\n  return %y\n}\n");
  auto r = RunPipeline(*unfused, "infer-types,plan-devices,manifest-alloc");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("2:3: exp %y: manifest-alloc expects every computation inside a primitive function: run fuse-ops first"));
  auto unplanned = testing::Parse("def @main(%x: f32[4]) {\n  %y = exp(%x)\n  return %y\n}\n");
  r = RunPipeline(*unplanned, "infer-types,fuse-ops,manifest-alloc");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("manifest-alloc needs devices: run plan-devices first"));
  auto broken = testing::Parse(R"(
def @main(%x: f32[4] @sim) {
  %y = invoke @f(%x) : f32[4] @sim
  return %y
}

def @f(%a: f32[4] @sim) -> f32[4] attributes {primitive = true} {
  %b = exp(%a) : f32[4] @sim
  return %b
}
)");
  absl::Status s = VerifyExplicitAllocation(*broken);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("kernel @f has no explicit outputs"));
}

// A precondition error leaves the module as it was: the second kernel is unplanned, and the
// first is not rewritten before the pass finds out.
TEST(ManifestAlloc, ErrorLeavesTheModuleWhole) {
  auto m = testing::Parse(R"(
def @main(%x: f32[4] @sim) {
  %y = invoke @f(%x) : f32[4] @sim
  %z = invoke @f(%y) : f32[4]
  return %z
}

def @f(%a: f32[4] @sim) -> f32[4] attributes {primitive = true} {
  %b = exp(%a) : f32[4] @sim
  return %b
}
)");
  const std::string before = PrintModule(*m);
  absl::StatusOr<bool> r = CreateManifestAllocPass(ManifestAllocOptions())->Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("4:3: invoke %z: manifest-alloc needs devices: run plan-devices first"));
  EXPECT_EQ(PrintModule(*m), before);
}

}  // namespace
}  // namespace hetpass

namespace hetpass {
namespace {

// Tests that a shape-function mask must cover the callee's derived mask: more is accepted (it
// only costs copies), a missing bit is rejected.
TEST(ManifestAlloc, ModuleVerificationChecksRecordedMask) {
  const std::string text = R"(
def @main(%x: f32[n, 64] @sim, %b: i64[2] @cpu, %e: i64[2] @cpu, %s: i64[2] @cpu) {
  %y_shape = invoke @f(%x, %b, %e, %s) {mask = [MASK], shape_func = true} : i64[2] @cpu
  return %y_shape
}

def @f(%x: f32[n, 64] @sim, %b: i64[2] @cpu, %e: i64[2] @cpu, %s: i64[2] @cpu) -> f32[?, ?] attributes {primitive = true} {
  %y = dyn.strided_slice(%x, %b, %e, %s) : f32[?, ?] @sim
  return %y
}
)";
  auto verify = [&](absl::string_view mask) {
    auto m = ParseModule(absl::StrReplaceAll(text, {{"MASK", mask}}));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? VerifyModule(**m) : m.status();
  };
  EXPECT_TRUE(verify("shape, value, value, value").ok());
  EXPECT_TRUE(verify("shape+value, value, value, shape+value").ok());
  absl::Status s = verify("shape, value, shape, value");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("mask of '@f' lacks the value bit of parameter 2 "
                                                "%e: the call records 'shape' but the body "
                                                "derives 'value'"));
}

}  // namespace
}  // namespace hetpass
