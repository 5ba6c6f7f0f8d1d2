#include "passes/device_planner/plan_devices.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
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
using ::testing::HasSubstr;

std::unique_ptr<Module> ParseWith(const std::string& text, const OpRegistry* registry) {
  ParseOptions o;
  o.registry = registry;
  auto m = ParseModule(text, o);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

// Parses, runs `pipeline` (verifier after every pass), checks the placement invariant, and
// returns the ledger of @main.
CopyLedger Plan(const std::string& text, const std::string& pipeline,
                const OpRegistry* registry = nullptr, bool outputs_on_host = true) {
  auto m = ParseWith(text, registry);
  if (!m) return {};
  auto r = RunPipeline(*m, pipeline);
  EXPECT_TRUE(r.ok()) << r.status();
  absl::Status placed = VerifyDevicePlacement(*m, "main", outputs_on_host);
  EXPECT_TRUE(placed.ok()) << placed;
  auto ledger = ComputeCopyLedger(*m);
  EXPECT_TRUE(ledger.ok());
  return ledger.ok() ? *ledger : CopyLedger{};
}

// The seed case: ten dyn.strided_slice on an accelerator tensor, begin/end/strides computed on
// the host at run time (from host inputs), so every output shape needs a shape function.
std::string SliceChain() {
  std::string s =
      "def @main(%x: f32[n, 64] @sim, %b: i64[2] @cpu, %e: i64[2] @cpu, %s: i64[2] @cpu) {\n"
      "  %xs = nn.relu(%x) @sim\n";
  std::string prev = "%xs";
  for (int i = 0; i < 10; ++i) {
    absl::StrAppend(&s, "  %k", i, " = constant<[", i, ", 0]> : i64[2]\n", "  %b", i,
                    " = add(%b, %k", i, ")\n", "  %y", i, " = dyn.strided_slice(", prev, ", %b",
                    i, ", %e, %s) @sim\n");
    prev = absl::StrCat("%y", i);
  }
  return absl::StrCat(s, "  return ", prev, "\n}\n");
}

constexpr char kOnDevice[] = "infer-types,plan-devices{outputs=target}";

// Tests the seed case under both masks: with per-input masks no data crosses; with the
// single-flag baseline masks every slice copies its whole input to the host (10 copies, bytes = the
// ten sliced tensors).
TEST(PlanDevices, SeedSliceChain) {
  const CopyLedger ours = Plan(SliceChain(), kOnDevice, nullptr, /*outputs_on_host=*/false);
  ExpectCopies(ours, {.h2d = 0, .d2h = 0});
  EXPECT_EQ(ours.Syncs(), 0);

  auto m = ParseWith(SliceChain(), &SingleFlag());
  ASSERT_TRUE(RunPipeline(*m, kOnDevice).ok());
  auto old = ComputeCopyLedger(*m);
  ASSERT_TRUE(old.ok());
  ExpectCopies(*old, {.h2d = 0, .d2h = 10});
  EXPECT_EQ(old->Syncs(), 10);
  // Bytes: entry i copies the tensor slice i reads (its size is known at run time for the
  // slices' outputs, symbolically for the first input: n*256).
  std::vector<const Node*> slices;
  WalkNodes(static_cast<const Block&>(m->FindFunction("main")->body()), [&](const Node& node) {
    if (node.kind() == NodeKind::kCall && node.OpName() == "dyn.strided_slice") slices.push_back(&node);
  });
  ASSERT_EQ(slices.size(), 10u);
  // The copies (each slice's begin/end/strides also reach its kernel by value: `param`).
  std::vector<const LedgerEntry*> copies;
  for (const LedgerEntry& e : old->entries) {
    if (e.direction != CopyDirection::kParam) copies.push_back(&e);
  }
  ASSERT_EQ(copies.size(), 10u) << old->ToText();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(copies[i]->bytes, slices[i]->operand(0)->type().NumBytes());
    EXPECT_TRUE(copies[i]->implied);
  }
  EXPECT_EQ(copies[0]->bytes.ToString(), "n*256");
}

std::unique_ptr<Module> ParseElided(const std::string& text) {
  ParseOptions o;
  o.allow_elided_constants = true;
  auto m = ParseModule(text, o);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

// Tests the 3-layer MLP, static and dynamic batch: the only copies are the input upload and
// the result download, with exact bytes; every op runs on the accelerator.
TEST(PlanDevices, MlpCopiesOnlyInputAndResult) {
  for (const std::string batch : {"16", "n"}) {
    auto m = ParseElided(SeedMlp(batch));
    ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
    ASSERT_TRUE(VerifyDevicePlacement(*m).ok());
    auto ledger = ComputeCopyLedger(*m);
    ExpectCopies(*ledger, {.h2d = 1, .d2h = 1});
    const DimExpr::Bindings b = {{"n", 16}};
    EXPECT_EQ(LedgerBytes(*ledger, CopyDirection::kHostToDevice, b), 16 * 1024 * 4);
    EXPECT_EQ(LedgerBytes(*ledger, CopyDirection::kDeviceToHost, b), 16 * 128 * 4);
    WalkNodes(static_cast<const Block&>(m->FindFunction("main")->body()), [&](const Node& n) {
      if (n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kCompute) {
        EXPECT_EQ(n.device(), DeviceKind::kSim) << n.OpName();
      }
    });
  }
}

// Tests that a reshape target computed by shape arithmetic stays on the host: no device to
// host copy except the result.
TEST(PlanDevices, ReshapeTargetFromShapeArithmeticStaysOnHost) {
  const std::string text = ::hetpass::testing::kReshapeFromShapeArithmetic;
  auto m = ParseElided(text);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
  auto ledger = ComputeCopyLedger(*m);
  ExpectCopies(*ledger, {.h2d = 1, .d2h = 1});
  EXPECT_THAT(ledger->ToText(), HasSubstr("returned from @main"));
  EXPECT_THAT(PrintModule(*m), HasSubstr("%t = concatenate(%b, %k) : i64[3] @cpu"));
}

// Tests that a reduction in a shape subgraph runs where its input already is: the min over
// an image's dims (detection preprocessing: scale = target / min(h, w)) reads host values and
// feeds a host shape function, so it runs on the host with no copy to the device and back;
// the same reduction over device data stays on the device and only its scalar crosses.
TEST(PlanDevices, ShapeSubgraphReductionFollowsItsInput) {
  constexpr char kHostDims[] = R"(
def @main(%x: f32[h, w] @sim) {
  %s = shape_of(%x)
  %f = cast(%s) {dtype = f32}
  %m = min(%f) {axis = [0]}
  %k = cast(%m) {dtype = i64}
  %t = expand_dims(%k) {axis = 0}
  %z = dyn.zeros(%t) {dtype = f32}
  %y = nn.relu(%x)
  return %y, %z
}
)";
  {
    auto m = ParseElided(kHostDims);
    ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
    auto ledger = ComputeCopyLedger(*m);
    ASSERT_TRUE(ledger.ok());
    EXPECT_THAT(PrintModule(*m), HasSubstr("%m = min(%f) {axis = [0]} : f32[] @cpu"));
    // y and z out; nothing for the shape arithmetic.
    ExpectCopies(*ledger, {.h2d = 0, .d2h = 2});
  }
  constexpr char kDeviceData[] = R"(
def @main(%x: f32[h, w] @sim) {
  %r = nn.relu(%x)
  %m = max(%r) {axis = []}
  %k = cast(%m) {dtype = i64}
  %t = expand_dims(%k) {axis = 0}
  %z = dyn.zeros(%t) {dtype = f32}
  return %z
}
)";
  {
    auto m = ParseElided(kDeviceData);
    ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
    EXPECT_THAT(PrintModule(*m), HasSubstr("%m = max(%r) : f32[] @sim"));
    auto ledger = ComputeCopyLedger(*m);
    ASSERT_TRUE(ledger.ok());
    ExpectCopies(*ledger, {.h2d = 0, .d2h = 2});  // the 4-byte max, and z
  }
}

// The ops TVM over-declared: the data input never crosses; only host values feed the shape
// functions. With the single-flag baseline masks each one copies its data input.
TEST(PlanDevices, OverDeclaredOpsCopyNoData) {
  // Sizes, pads, reps and k arrive as host inputs (known only at run time).
  const std::string text = R"(
def @main(%x: f32[n, 3, 8, 8], %size: i64[2], %pads: i64[8], %reps: i64[4], %k: i64[]) {
  %w = constant<elided> : f32[3, 3, 1, 1]
  %c = nn.conv2d(%x, %w) @sim
  %two = constant<2> : i64[]
  %big = multiply(%size, %two)
  %r = dyn.image.resize2d(%c, %big) @sim
  %zero = constant<0.0> : f32[]
  %p = dyn.nn.pad(%r, %pads, %zero) @sim
  %t = dyn.tile(%p, %reps) @sim
  %flat = constant<[-1]> : i64[1]
  %f = dyn.reshape(%t, %flat) @sim
  %v, %i = dyn.topk(%f, %k) @sim
  return %v
}
)";
  ParseOptions o;
  o.allow_elided_constants = true;
  auto m = *ParseModule(text, o);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices{outputs=target}").ok());
  ASSERT_TRUE(VerifyDevicePlacement(*m, "main", /*outputs_on_host=*/false).ok());
  auto ours = ComputeCopyLedger(*m);
  ExpectCopies(*ours, {.h2d = 1, .d2h = 0});  // the input upload only

  o.registry = &SingleFlag();
  auto old = *ParseModule(text, o);
  ASSERT_TRUE(RunPipeline(*old, "infer-types,plan-devices{outputs=target}").ok());
  auto old_ledger = ComputeCopyLedger(*old);
  // resize, pad, tile, reshape and topk each copy their data input to the host.
  ExpectCopies(*old_ledger, {.h2d = 1, .d2h = 5});
}

// Tests that a value needed on the host by two shape functions and on the device by a kernel
// is copied once, shared by both host uses.
TEST(PlanDevices, OneCopyPerValueAndDestination) {
  const std::string text = R"(
def @main(%x: f32[n, 4], %y: f32[m, 4]) {
  %w = constant<elided> : f32[4, 4]
  %h = nn.dense(%x, %w)
  %t = argmax(%h) {axis = [0], dtype = i64}
  %a = dyn.reshape(%x, %t)
  %b = dyn.reshape(%y, %t)
  %c = add(%t, %t) @sim
  return %a, %b, %c
}
)";
  auto m = ParseElided(text);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
  auto ledger = ComputeCopyLedger(*m);
  int copies_of_t = 0;
  for (const LedgerEntry& e : ledger->entries) copies_of_t += e.value == "%t";
  EXPECT_EQ(copies_of_t, 1) << ledger->ToText();
}

// Tests that annotations are honoured and conflicting ones are errors naming both sides.
TEST(PlanDevices, AnnotationConflicts) {
  auto shape_on_device = testing::Parse("def @main(%x: f32[4]) {\n  %s = shape_of(%x) @sim\n  return %s\n}\n");
  auto r = RunPipeline(*shape_on_device, "infer-types,plan-devices");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("2:3: shape_of %s: annotation @sim conflicts with 'shape_of' running on the host only"));
  auto other_accel = testing::Parse("def @main(%x: f32[4]) {\n  %y = exp(%x) @cuda\n  return %y\n}\n");
  r = RunPipeline(*other_accel, "infer-types,plan-devices{target=sim}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("annotation @cuda conflicts with the pipeline target 'sim'"));
  auto forced_host = testing::Parse("def @main(%x: f32[n, 4]) {\n  %w = constant<[1.0, 2.0, 3.0, 4.0]> : f32[1, 4]\n  %y = nn.dense(%x, %w) @cpu\n  return %y\n}\n");
  ASSERT_TRUE(RunPipeline(*forced_host, "infer-types,plan-devices").ok());
  ExpectCopies(*ComputeCopyLedger(*forced_host), {.h2d = 0, .d2h = 0});
}

// Tests that a constant used on both sides is duplicated (materialised at load), not copied.
TEST(PlanDevices, ConstantsAreDuplicatedNotCopied) {
  const std::string text = R"(
def @main(%x: f32[n, 2]) {
  %c = constant<[2, 2]> : i64[2]
  %w = constant<[1.0, 2.0, 3.0, 4.0]> : f32[2, 2]
  %h = nn.dense(%x, %w)
  %f = cast(%c) {dtype = f32}
  %g = add(%h, %f) @sim
  %r = dyn.reshape(%g, %c)
  return %r
}
)";
  auto m = testing::Parse(text);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("%c = constant<[2, 2]> : i64[2] @cpu"));
  EXPECT_THAT(out, HasSubstr("%c_sim = constant<[2, 2]> : i64[2] @sim"));
  auto ledger = ComputeCopyLedger(*m);
  ExpectCopies(*ledger, {.h2d = 1, .d2h = 1});
}

// Tests that for target=cuda a call is placed on the accelerator only where a cuda kernel takes
// it with its dtypes: an f32 sum runs there (nvrtc.reduce), an f16 sum of the same shape, which
// no cuda kernel takes though cuda runs sums, stays on the host.
TEST(PlanDevices, CudaTakesCallsItHasAKernelFor) {
  auto m = testing::Parse(R"(
def @main(%x: f32[n, 8] @cuda, %h: f16[n, 8] @cuda) {
  %a = sum(%x) {axis = [1]}
  %b = sum(%h) {axis = [1]}
  return %a, %b
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices{target=cuda}").ok());
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("%a = sum(%x) {axis = [1]} : f32[n] @cuda"));
  EXPECT_THAT(out, HasSubstr(": f16[n] @cpu"));
}

// Tests that target=cpu puts everything on the host with no copies.
TEST(PlanDevices, CpuTargetHasNoCopies) {
  auto m = ParseElided(SeedMlp("n"));
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices{target=cpu}").ok());
  ExpectCopies(*ComputeCopyLedger(*m), {});
}

// Tests loops: the trip count and condition stay on the host, the carried tensor on the
// device, and the per-iteration copy is flagged in the ledger.
TEST(PlanDevices, LoopControlOnHostCarriedOnDevice) {
  const std::string text = R"(
def @main(%m: i64[], %c: bool[], %x: f32[n, 4]) {
  %w = constant<[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]> : f32[4, 4]
  %r = loop(%m, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[n, 4]) {
    %d = nn.dense(%acc, %w)
    yield %ci, %d
  }
  return %r
}
)";
  auto m = testing::Parse(text);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
  ASSERT_TRUE(VerifyDevicePlacement(*m).ok()) << PrintModule(*m);
  auto ledger = ComputeCopyLedger(*m);
  ExpectCopies(*ledger, {.h2d = 1, .d2h = 1});
  EXPECT_THAT(PrintModule(*m), HasSubstr("(%i: i64[] @cpu, %ci: bool[] @cpu, %acc: f32[n, 4] @sim)"));
}

// Tests that copies inside a loop body are weighted by the trip count: an `anywhere` loop
// whose body feeds a device kernel runs on the device (one upload before, one download
// after) rather than on the host with two copies per iteration.
TEST(PlanDevices, LoopBodyCopiesWeighPerIteration) {
  const std::string text = R"(
def @main(%m: i64[], %c: bool[], %x: f32[n, 4]) {
  %w = constant<[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]> : f32[4, 4]
  %r = loop(%m, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[n, 4]) {
    %e = exp(%acc)
    %d = nn.dense(%e, %w)
    %t = tanh(%d)
    yield %ci, %t
  }
  return %r
}
)";
  auto m = testing::Parse(text);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,plan-devices").ok());
  auto ledger = ComputeCopyLedger(*m);
  ExpectCopies(*ledger, {.h2d = 1, .d2h = 1});
  for (const LedgerEntry& e : ledger->entries) EXPECT_FALSE(e.in_loop) << ledger->ToText();
}

// Tests idempotence: planning planned IR changes nothing.
TEST(PlanDevices, Idempotent) {
  ExpectIdempotent(SliceChain(), "infer-types,plan-devices");
  ExpectIdempotent(R"(
def @main(%x: f32[n, 4], %k: i64[]) {
  %w = constant<[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]> : f32[4, 4]
  %h = nn.dense(%x, %w)
  %s = shape_of(%h)
  %v, %i = dyn.topk(%h, %k)
  return %v, %s
}
)",
                   "infer-types,plan-devices");
}

// Tests that the placement verifier catches a use across devices with no copy.
TEST(PlanDevices, VerifierCatchesMissingCopy) {
  auto m = testing::Parse(R"(
def @main(%x: f32[4] @cpu) {
  %y = exp(%x) : f32[4] @sim
  return %y
}
)");
  absl::Status s = VerifyDevicePlacement(*m);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("input 0 %x is on 'cpu' but is read on 'sim' with no device_copy"));
}

// Tests that untyped IR and a missing function are clear errors.
TEST(PlanDevices, Errors) {
  auto m = testing::Parse("def @main(%x: f32[4]) {\n  %y = exp(%x)\n  return %y\n}\n");
  auto r = RunPipeline(*m, "plan-devices");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("plan-devices needs typed IR (run infer-types first): %y has no type"));
  r = RunPipeline(*m, "infer-types,plan-devices{function=nope}");
  EXPECT_THAT(r.status().message(), HasSubstr("plan-devices: no function @nope"));
  auto bad = ParsePipeline("plan-devices{target=gpu}");
  EXPECT_THAT(bad.status().message(), HasSubstr("option 'target' of pass 'plan-devices' must be cpu, sim or cuda, got 'gpu'"));
}

}  // namespace
}  // namespace hetpass
