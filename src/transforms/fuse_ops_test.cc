#include "passes/transforms/fuse_ops.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/shape_funcs/primitive_function.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::ExpectIdempotent;
using ::hetpass::testing::Parse;
using ::hetpass::testing::RunPipeline;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// Parses `text` and runs `pipeline` (verifier after each pass); nullptr on failure.
std::unique_ptr<Module> Fuse(const std::string& text,
                             const std::string& pipeline = "infer-types,fuse-ops") {
  std::unique_ptr<Module> m = Parse(text);
  if (m == nullptr) return nullptr;
  absl::StatusOr<bool> changed = RunPipeline(*m, pipeline);
  EXPECT_TRUE(changed.ok()) << changed.status();
  if (!changed.ok()) return nullptr;
  return m;
}

// The op names of each primitive function, joined by '+', in module order.
std::vector<std::string> Groups(const Module& m) {
  std::vector<std::string> out;
  for (const auto& f : m.functions()) {
    if (!IsPrimitive(*f)) continue;
    std::vector<std::string> ops;
    for (const auto& n : f->body().nodes()) ops.emplace_back(n->OpName());
    out.push_back(absl::StrJoin(ops, "+"));
  }
  return out;
}

// The kinds/op names of the bindings of @main, joined by ' '.
std::string MainBindings(const Module& m) {
  std::vector<std::string> out;
  for (const auto& n : m.FindFunction("main")->body().nodes()) out.emplace_back(n->OpName());
  return absl::StrJoin(out, " ");
}

constexpr char kMlp[] = R"(
def @main(%x: f32[n, 1024], %w1: f32[512, 1024], %b1: f32[512], %w2: f32[256, 512],
          %b2: f32[256], %w3: f32[128, 256], %b3: f32[128]) {
  %h1 = nn.dense(%x, %w1)
  %h1b = nn.bias_add(%h1, %b1) {axis = -1}
  %a1 = nn.relu(%h1b)
  %h2 = nn.dense(%a1, %w2)
  %h2b = nn.bias_add(%h2, %b2) {axis = -1}
  %a2 = nn.relu(%h2b)
  %h3 = nn.dense(%a2, %w3)
  %h3b = nn.bias_add(%h3, %b3) {axis = -1}
  %a3 = nn.relu(%h3b)
  return %a3
}
)";

// Tests that the seed MLP becomes exactly three primitive functions, each dense + bias_add +
// relu, called by three invokes whose types are the original ones.
TEST(FuseOps, MlpGivesThreeDenseGroups) {
  auto m = Fuse(kMlp);
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m),
              ElementsAre("nn.dense+nn.bias_add+nn.relu", "nn.dense+nn.bias_add+nn.relu",
                          "nn.dense+nn.bias_add+nn.relu"));
  EXPECT_EQ(MainBindings(*m), "invoke invoke invoke");
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("%a1 = invoke @fused_nn_dense_nn_bias_add_nn_relu_0(%x, %w1, %b1) "
                             ": f32[n, 512]"));
  EXPECT_THAT(out, HasSubstr("%a3 = invoke @fused_nn_dense_nn_bias_add_nn_relu_2(%a2, %w3, %b3) "
                             ": f32[n, 128]"));
  EXPECT_THAT(out, HasSubstr("def @fused_nn_dense_nn_bias_add_nn_relu_1(%a1: f32[n, 512], %w2: "
                             "f32[256, 512], %b2: f32[256]) -> f32[n, 256] attributes "
                             "{primitive = true} {"));
}

// Tests that the whole seed example (with its shape subgraph, a duplicate and dead code)
// gives three dense groups after cse and dce, and that the shape subgraph is not fused into
// dyn.reshape through its `value` input: shape_of alone, take + concatenate, dyn.reshape alone.
TEST(FuseOps, SeedExampleShapeSubgraphStaysOutOfReshape) {
  auto m = Fuse(R"(
def @main(%x: f32[n, 32, 32], %w1: f32[512, 1024], %b1: f32[512], %w2: f32[256, 512],
          %b2: f32[256], %w3: f32[128, 256], %b3: f32[128]) {
  %shape = shape_of(%x)
  %i0 = constant<[0]> : i64[1]
  %batch = take(%shape, %i0) {axis = 0}
  %features = constant<[1024]> : i64[1]
  %target = concatenate(%batch, %features) {axis = 0}
  %flat = dyn.reshape(%x, %target)
  %h1 = nn.dense(%flat, %w1)
  %h1b = nn.bias_add(%h1, %b1) {axis = -1}
  %a1 = nn.relu(%h1b)
  %h2 = nn.dense(%a1, %w2)
  %h2b = nn.bias_add(%h2, %b2) {axis = -1}
  %a2 = nn.relu(%h2b)
  %h3 = nn.dense(%a2, %w3)
  %out = nn.bias_add(%h3, %b3) {axis = -1}
  %again = nn.relu(%h1b)
  %unused = exp(%out)
  %check = add(%a1, %again)
  return %out
}
)",
                "infer-types,cse,dce,fuse-ops");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("take+concatenate", "dyn.reshape",
                                      "nn.dense+nn.bias_add+nn.relu",
                                      "nn.dense+nn.bias_add+nn.relu", "nn.dense+nn.bias_add"));
  EXPECT_THAT(PrintModule(*m),
              HasSubstr("%flat = invoke @fused_dyn_reshape_1(%x, %target) : f32[n, 1024]"));
  ExpectIdempotent(PrintModule(*m), "infer-types");
  ExpectIdempotent(PrintModule(*m), "fuse-ops");
}

// Tests that infer-types after fuse-ops changes nothing and that fuse-ops on its own output
// changes nothing (every compute op is already inside a primitive function).
TEST(FuseOps, Idempotent) {
  auto m = Fuse(kMlp);
  ASSERT_NE(m, nullptr);
  const std::string once = PrintModule(*m);
  for (const char* pipeline : {"infer-types", "fuse-ops", "infer-types,fuse-ops"}) {
    absl::StatusOr<bool> again = RunPipeline(*m, pipeline);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_FALSE(*again) << pipeline;
    EXPECT_EQ(PrintModule(*m), once) << pipeline;
  }
  ExpectIdempotent(kMlp, "infer-types,fuse-ops");
}

// Tests that argwhere (data-dependent output shape) stands alone: it neither joins its
// producer's group nor absorbs its consumer.
TEST(FuseOps, ArgwhereStandsAlone) {
  auto m = Fuse(R"(
def @main(%x: f32[n], %c: f32[]) {
  %g = greater(%x, %c)
  %i = argwhere(%g)
  %y = cast(%i) {dtype = f32}
  return %y
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("greater", "argwhere", "cast"));
}

// Tests rule e on its own: in a registry where argwhere is elementwise, its data-dependent
// output shape still keeps it alone: nothing joins its group.
TEST(FuseOps, DataDependentOpNeverFusesWhateverItsPattern) {
  std::unique_ptr<OpRegistry> reg = OpRegistry::Global().CloneWith([](OpDef& def) {
    if (def.name() != "argwhere") return;
    OpDefBuilder(&def).Pattern(FusionPattern::kElementwise);
  });
  ASSERT_TRUE(reg->Find("argwhere")->data_dependent_output_shape());
  ParseOptions o;
  o.registry = reg.get();
  auto parsed = ParseModule(R"(
def @main(%x: f32[n]) {
  %i = argwhere(%x)
  %y = cast(%i) {dtype = f32}
  %z = negative(%y)
  return %z
}
)",
                            o);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<bool> r = RunPipeline(**parsed, "infer-types,fuse-ops");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Groups(**parsed), ElementsAre("argwhere", "cast+negative"));
}

// Tests that nodes on different devices never share a group, while equal devices fuse.
TEST(FuseOps, DevicesSeparateGroups) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x) @cuda
  %b = tanh(%a) @cpu
  %c = negative(%b) @cpu
  %d = sqrt(%c) @sim
  return %d
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp", "tanh+negative", "sqrt"));
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("%a = invoke @fused_exp_0(%x) : f32[n] @cuda"));
  EXPECT_THAT(out, HasSubstr("%c = invoke @fused_tanh_negative_1(%a) : f32[n] @cpu"));
  // Parameters carry the device of the value they stand for; the inner nodes keep theirs.
  EXPECT_THAT(out, HasSubstr("def @fused_tanh_negative_1(%a: f32[n] @cuda)"));
  EXPECT_THAT(out, HasSubstr("%b = tanh(%a) : f32[n] @cpu"));
}

// Tests that device_copy is neither fused nor wrapped, and that it separates groups.
TEST(FuseOps, DeviceCopyUntouched) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x) @cpu
  %b = device_copy(%a) {src = "cpu", dst = "cuda"} @cuda
  %c = tanh(%b) @cuda
  return %c
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp", "tanh"));
  EXPECT_EQ(MainBindings(*m), "invoke device_copy invoke");
}

// Tests that constants are never fused: a constant used in a group becomes a parameter and
// stays in the caller.
TEST(FuseOps, ConstantsBecomeParameters) {
  auto m = Fuse(R"(
def @main(%x: f32[4]) {
  %c = constant<[1.0, 2.0, 3.0, 4.0]> : f32[4]
  %a = add(%x, %c)
  %b = exp(%a)
  return %b
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("add+exp"));
  EXPECT_EQ(MainBindings(*m), "constant invoke");
  EXPECT_THAT(PrintModule(*m), HasSubstr("def @fused_add_exp_0(%x: f32[4], %c: f32[4]) -> f32[4]"));
}

// Tests that conv2d absorbs the bias_add and relu that follow it, but not a reduction.
TEST(FuseOps, Conv2dBiasRelu) {
  auto m = Fuse(R"(
def @main(%x: f32[n, 3, 32, 32], %w: f32[16, 3, 3, 3], %b: f32[16]) {
  %c = nn.conv2d(%x, %w) {padding = [1, 1]}
  %cb = nn.bias_add(%c, %b) {axis = 1}
  %r = nn.relu(%cb)
  %s = sum(%r) {axis = [1]}
  return %s
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("nn.conv2d+nn.bias_add+nn.relu", "sum"));
}

// Tests that an out-elementwise-fusable group takes only elementwise and broadcast ops: an
// injective op (transpose) after dense starts a new group.
TEST(FuseOps, OutElementwiseFusableTakesNoInjective) {
  auto m = Fuse(R"(
def @main(%x: f32[n, 8], %w: f32[4, 8]) {
  %d = nn.dense(%x, %w)
  %e = exp(%d)
  %t = transpose(%e)
  %u = negative(%t)
  return %u
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("nn.dense+exp", "transpose+negative"));
}

// Tests that a reduction joins an injective group, an elementwise op joins the reduction
// group, and a broadcast op after the reduction does not.
TEST(FuseOps, ReductionRules) {
  auto m = Fuse(R"(
def @main(%x: f32[n, 8], %y: f32[8]) {
  %t = transpose(%x)
  %e = exp(%t)
  %s = sum(%e) {axis = [1]}
  %r = sqrt(%s)
  %a = add(%r, %y)
  %m = max(%a)
  return %m
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("transpose+exp+sum+sqrt", "add+max"));
}

// Tests that a producer with several uses does not fuse with any of them, that a use as a
// block result counts, and that a consumer joins the group of its first eligible operand
// (add joins tanh; the invoke stands at add's place, after negative).
TEST(FuseOps, MultiUseProducerStaysSeparate) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  %c = negative(%a)
  %d = add(%b, %c)
  %e = sqrt(%x)
  %f = abs(%e)
  return %d, %e, %f
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp", "tanh+add", "negative", "sqrt", "abs"));
  EXPECT_EQ(MainBindings(*m), "invoke invoke invoke invoke invoke");
  EXPECT_THAT(PrintModule(*m), HasSubstr("%d = invoke @fused_tanh_add_1(%a, %c) : f32[n]"));
}

// Tests that an op reading the same producer twice (add(%a, %a)) still fuses with it.
TEST(FuseOps, SameUserTwice) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = add(%a, %a)
  return %b
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp+add"));
}

// Tests that an op with a `value` input never absorbs the producer of that input, while it
// may join the group of its data input's producer.
TEST(FuseOps, ValueInputBlocksFusion) {
  auto m = Fuse(R"(
def @main(%x: f32[n, 8], %t: i64[2]) {
  %e = exp(%x)
  %t2 = add(%t, %t)
  %r = dyn.reshape(%e, %t2)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp+dyn.reshape", "add"));
  const Function* g = m->FindFunction("fused_exp_dyn_reshape_0");
  ASSERT_NE(g, nullptr);
  EXPECT_THAT(DeriveInputMask(*g), ElementsAre(InputDep::kShape, InputDep::kValue));
}

// Tests that if branches and loop bodies are fused independently, that the if/loop nodes are
// never fused, and that group results captured by a region are redirected to the invoke.
TEST(FuseOps, Regions) {
  auto m = Fuse(R"(
def @main(%c: bool[], %x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  %r = if (%c) {
    %t = negative(%b)
    %u = sqrt(%t)
    yield %u
  } else {
    %v = abs(%x)
    yield %v
  }
  %trips = constant<3> : i64[]
  %l = loop(%trips, %c, %r) (%i: i64[], %cond: bool[], %acc: f32[n]) {
    %s = add(%acc, %b)
    %s2 = exp(%s)
    yield %cond, %s2
  }
  %z = negative(%l)
  return %z
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp+tanh", "negative+sqrt", "abs", "add+exp", "negative"));
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("%b = invoke @fused_exp_tanh_0(%x) : f32[n]"));
  EXPECT_THAT(out, HasSubstr("%u = invoke @fused_negative_sqrt_1(%b) : f32[n]"));
  EXPECT_THAT(out, HasSubstr("%s2 = invoke @fused_add_exp_3(%acc, %b) : f32[n]"));
  EXPECT_EQ(MainBindings(*m), "invoke if constant loop invoke");
}

// Tests that a group's name is unique when the module already holds that name, and that
// max-group-size caps the groups (1: every op alone).
TEST(FuseOps, NamesAndMaxGroupSize) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  %c = negative(%b)
  return %c
}
def @fused_exp_tanh_negative_0(%y: f32[2]) {
  return %y
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(m->FindFunction("fused_exp_tanh_negative_1"), nullptr);
  EXPECT_THAT(Groups(*m), ElementsAre("exp+tanh+negative"));

  auto capped = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  %c = negative(%b)
  return %c
}
)",
                     "infer-types,fuse-ops{max-group-size=2}");
  ASSERT_NE(capped, nullptr);
  EXPECT_THAT(Groups(*capped), ElementsAre("exp+tanh", "negative"));

  auto alone = Fuse(kMlp, "infer-types,fuse-ops{max-group-size=1}");
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(Groups(*alone).size(), 9u);
}

// Tests that a long group's name is cut at an op boundary and marked `_etc`.
TEST(FuseOps, LongNamesAreCut) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  %c = negative(%b)
  %d = sigmoid(%c)
  %e = exp(%d)
  %f = tanh(%e)
  %g = negative(%f)
  %h = sigmoid(%g)
  %i = exp(%h)
  %j = tanh(%i)
  %k = negative(%j)
  return %k
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(m->FindFunction("fused_exp_tanh_negative_sigmoid_exp_tanh_negative_sigmoid_exp_etc_0"),
            nullptr)
      << PrintModule(*m);
}

// Tests that a module whose op calls are all inside primitive functions is left unchanged.
TEST(FuseOps, AlreadyFusedModuleUnchanged) {
  auto m = Parse(R"(
def @main(%x: f32[n]) {
  %c = constant<1.0> : f32[]
  %a = invoke @k(%x, %c)
  return %a
}
def @k(%x: f32[n], %c: f32[]) attributes {primitive = true} {
  %a = add(%x, %c)
  %b = exp(%a)
  return %b
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types").ok());
  const std::string before = PrintModule(*m);
  absl::StatusOr<bool> r = RunPipeline(*m, "fuse-ops");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(*r);
  EXPECT_EQ(PrintModule(*m), before);
}

// Tests that an invalid max-group-size is rejected with a message naming it.
TEST(FuseOps, RejectsBadOption) {
  auto m = Parse(kMlp);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<bool> r = RunPipeline(*m, "fuse-ops{max-group-size=0}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("max-group-size must be at least 1, got 0"));
}

// Tests that share-functions takes only a boolean, and that the error names the option.
TEST(FuseOps, RejectsANonBooleanShareFunctions) {
  auto m = Parse(kMlp);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<bool> r = RunPipeline(*m, "fuse-ops{share-functions=maybe}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("share-functions"));
}

// Tests that untyped IR is rejected with a message naming the node and asking for
// infer-types, and that the module is left untouched.
TEST(FuseOps, UntypedIrIsAnError) {
  auto m = Parse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  return %b
}
)");
  ASSERT_NE(m, nullptr);
  const std::string before = PrintModule(*m);
  absl::StatusOr<bool> r = RunPipeline(*m, "fuse-ops");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("exp %a: fuse-ops needs typed IR (run infer-types first): result 0 (%a) "
                        "has no type"));
  EXPECT_EQ(PrintModule(*m), before);
}

// Tests that the invoke takes the location of the group's first member.
TEST(FuseOps, InvokeKeepsFirstLocation) {
  auto m = Fuse(R"(
def @main(%x: f32[n]) {
  %a = exp(%x)
  %b = tanh(%a)
  return %b
}
)");
  ASSERT_NE(m, nullptr);
  const Node& inv = *m->FindFunction("main")->body().nodes().front();
  EXPECT_EQ(inv.kind(), NodeKind::kInvoke);
  EXPECT_EQ(inv.loc().line, 3);
  const Function* f = m->FindFunction(inv.callee());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->body().nodes()[1]->loc().line, 4);
}

// Tests rule i: a group of individually fusable ops that no native kernel takes whole (a
// reduction whose prologue reads a second tensor: nvrtc.reduce and native.reduce take steps
// with scalar operands only) is cut into the longest pieces native kernels take, the
// elementwise prologue and the reduction: on cuda, which has no fallback provider, and on sim
// too, whose reference interpreter would otherwise run the whole group; a group a provider
// does take (a square then a sum) stays whole.
TEST(FuseOps, GroupsTheDeviceCannotRunWholeAreSplit) {
  const std::string two_tensors = R"(
def @main(%x: f32[n, 16] @DEV, %y: f32[n, 16] @DEV) {
  %d = subtract(%x, %y) @DEV
  %s = multiply(%d, %d) @DEV
  %r = sum(%s) {axis = [1]} @DEV
  return %r
}
)";
  auto on = [&](const std::string& dev) {
    std::string text = two_tensors;
    for (size_t at; (at = text.find("@DEV")) != std::string::npos;) text.replace(at, 4, "@" + dev);
    return text;
  };
  auto cuda = Fuse(on("cuda"));
  ASSERT_NE(cuda, nullptr);
  EXPECT_THAT(Groups(*cuda), ElementsAre("subtract+multiply", "sum"));
  auto sim = Fuse(on("sim"));
  ASSERT_NE(sim, nullptr);
  EXPECT_THAT(Groups(*sim), ElementsAre("subtract+multiply", "sum"));
  auto taken = Fuse(R"(
def @main(%x: f32[n, 16] @cuda) {
  %s = multiply(%x, %x) @cuda
  %r = sum(%s) {axis = [1]} @cuda
  return %r
}
)");
  ASSERT_NE(taken, nullptr);
  EXPECT_THAT(Groups(*taken), ElementsAre("multiply+sum"));
}

// The callee of each invoke of @main, in order.
std::vector<std::string> Callees(const Module& m) {
  std::vector<std::string> out;
  for (const auto& n : m.FindFunction("main")->body().nodes()) {
    if (n->kind() == NodeKind::kInvoke) out.push_back(n->callee());
  }
  return out;
}

// Tests share_functions: groups that outline to structurally equal functions (the same ops,
// attributes, devices, types and wiring; names aside) invoke one function, in any block of the
// function (a loop body's group shares main's); a group differing in any of those gets its own;
// share-functions=false gives one function per group. The module is unchanged by a second run,
// and a shared function's bindings carry no location (they were the first group's).
TEST(FuseOps, EqualGroupsShareOneFunction) {
  const std::string text = R"(
def @main(%x: f32[n, 16], %w: f32[16, 16], %v: f32[16, 16], %y: f32[n, 8], %w8: f32[8, 8]) {
  %d0 = nn.dense(%x, %w)
  %a0 = tanh(%d0)
  %d1 = nn.dense(%a0, %v)
  %a1 = tanh(%d1)
  %d2 = nn.dense(%y, %w8)
  %a2 = tanh(%d2)
  %d3 = nn.dense(%a1, %w)
  %a3 = sigmoid(%d3)
  %s0 = add(%a3, %a3)
  %s1 = add(%a3, %a1)
  %e0 = exp(%s0) @cpu
  %e1 = exp(%s1) @sim
  %e2 = exp(%s0) @sim
  return %a2, %e0, %e1, %e2
}
)";
  auto m = Fuse(text);
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Callees(*m),
              ElementsAre("fused_nn_dense_tanh_0", "fused_nn_dense_tanh_0", "fused_nn_dense_tanh_1",
                          "fused_nn_dense_sigmoid_2", "fused_add_3", "fused_add_4", "fused_exp_5",
                          "fused_exp_6", "fused_exp_6"));
  EXPECT_EQ(Groups(*m).size(), 7u);
  const Function* shared = m->FindFunction("fused_nn_dense_tanh_0");
  ASSERT_NE(shared, nullptr);
  for (const auto& n : shared->body().nodes()) EXPECT_EQ(n->loc().line, 0) << n->OpName();
  EXPECT_EQ(m->FindFunction("fused_nn_dense_tanh_1")->body().nodes()[0]->loc().line, 7);
  ExpectIdempotent(PrintModule(*m), "fuse-ops");
  ExpectIdempotent(PrintModule(*m), "infer-types");

  auto separate = Fuse(text, "infer-types,fuse-ops{share-functions=false}");
  ASSERT_NE(separate, nullptr);
  EXPECT_EQ(Groups(*separate).size(), 9u);
}

// Tests that a function whose types use a symbol its parameters do not bind (a reshape to a
// target only known at run time, declared `f32[k]`) is not shared: at each invoke the symbol
// is the caller's binding there, which another invoke need not have.
TEST(FuseOps, FunctionWithAnUnboundSymbolIsNotShared) {
  auto m = Fuse(R"(
def @main(%x: f32[m], %t: i64[1]) {
  %r0 = dyn.reshape(%x, %t) : f32[k]
  %r1 = dyn.reshape(%x, %t) : f32[k]
  return %r0, %r1
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Callees(*m), ElementsAre("fused_dyn_reshape_0", "fused_dyn_reshape_1"));
}

// Tests that a group inside a loop body shares the function of an equal group of main.
TEST(FuseOps, GroupsInRegionsShareWithTheirFunction) {
  auto m = Fuse(R"(
def @main(%x: f32[n], %trips: i64[], %cond: bool[]) {
  %a = exp(%x)
  %b = tanh(%a)
  %l = loop(%trips, %cond, %b) (%i: i64[], %c: bool[], %v: f32[n]) {
    %e = exp(%v)
    %t = tanh(%e)
    yield %c, %t
  }
  return %l
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Groups(*m).size(), 1u);
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("%t = invoke @fused_exp_tanh_0(%v)"));
  EXPECT_THAT(out, HasSubstr("%b = invoke @fused_exp_tanh_0(%x)"));
}

}  // namespace
}  // namespace hetpass
