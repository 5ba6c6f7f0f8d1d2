// Tests of the kernel providers: the documented order, the engine's walk over a provider list
// ("not mine" goes on, a real error stops), the capability queries, and the passes that consult
// them (fuse-ops rule h, plan-devices' host fallback), and the kernel context a launch gets.
#include "passes/compile_engine/kernel_provider.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/device_planner/plan_devices.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/runtime/device.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/fuse_ops.h"
#include "passes/transforms/infer_types.h"
#include "passes/pass/pass_registry.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"

namespace hetpass {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const OpDef& Op(absl::string_view name) {
  const OpDef* op = OpRegistry::Global().Find(name);
  EXPECT_NE(op, nullptr) << name;
  return *op;
}

std::vector<std::string> Names(DeviceKind device) {
  std::vector<std::string> names;
  for (const KernelProvider* p : KernelProviders(device)) names.emplace_back(p->name());
  return names;
}

TEST(KernelProvidersTest, HostMemoryDevicesShareTheDocumentedOrder) {
  const std::vector<std::string> expected = {
      "onednn.dense",      "onednn.conv2d",    "onednn.conv2d_transpose", "onednn.batch_matmul",
      "onednn.pool2d",     "onednn.reorder",   "native.reduce",           "native.image",
      "native.creation",   "native.argreduce", "view.copy",               "onednn+llvm.split",
      "llvm.elementwise",  "llvm.injective",   "reference"};
  EXPECT_EQ(Names(DeviceKind::kCpu), expected);
  EXPECT_EQ(Names(DeviceKind::kSim), expected);
  EXPECT_EQ(Names(DeviceKind::kCuda),
            (std::vector<std::string>{"cudnn.conv2d", "cudnn.conv2d_transpose", "cublaslt.dense", "cublaslt.batch_matmul",
                                      "cublaslt/cudnn+nvptx.split", "nvrtc.reduce", "nvrtc.algorithm",
                                      "nvrtc.image", "nvptx.injective"}));
  // Only the last is a fallback.
  for (const KernelProvider* p : KernelProviders(DeviceKind::kCpu)) {
    EXPECT_EQ(p->is_fallback(), p->name() == "reference") << p->name();
  }
}

TEST(KernelCapabilitiesTest, BuiltinAnswersFromTheProviders) {
  const KernelCapabilities& caps = BuiltinKernelCapabilities();
  for (DeviceKind d : {DeviceKind::kCpu, DeviceKind::kSim}) {
    EXPECT_TRUE(caps.CanRun(Op("image.resize2d"), d));    // native.image, alone
    EXPECT_FALSE(caps.CanFuse(Op("image.resize2d"), d));  // ... and only alone
    EXPECT_FALSE(caps.CanFuse(Op("nn.pad"), d));
    EXPECT_TRUE(caps.CanFuse(Op("add"), d));         // the JIT
    EXPECT_TRUE(caps.CanFuse(Op("nn.dense"), d));    // with its epilogue
    EXPECT_TRUE(caps.CanFuse(Op("sum"), d));         // native.reduce with steps
    EXPECT_TRUE(caps.CanRun(Op("tile"), d));   // only the reference runs it ...
    EXPECT_TRUE(caps.CanFuse(Op("tile"), d));  // ... so fusing it loses no native kernel
  }
  EXPECT_TRUE(caps.CanRun(Op("add"), DeviceKind::kCuda));    // nvptx.injective
  EXPECT_TRUE(caps.CanFuse(Op("transpose"), DeviceKind::kCuda));
  EXPECT_TRUE(caps.CanRun(Op("nn.dense"), DeviceKind::kCuda));    // cublaslt.dense
  EXPECT_TRUE(caps.CanRun(Op("nn.conv2d"), DeviceKind::kCuda));   // cudnn.conv2d
  EXPECT_TRUE(caps.CanFuse(Op("nn.conv2d_transpose"), DeviceKind::kCuda));  // cudnn.conv2d_transpose
  EXPECT_TRUE(caps.CanRun(Op("argwhere"), DeviceKind::kCuda));     // nvrtc.algorithm
  EXPECT_FALSE(caps.CanFuse(Op("argwhere"), DeviceKind::kCuda));    // ... alone
  EXPECT_TRUE(caps.CanRun(Op("nn.batch_matmul"), DeviceKind::kCuda));  // cublaslt.batch_matmul
  EXPECT_TRUE(caps.CanFuse(Op("mean"), DeviceKind::kCuda));        // nvrtc.reduce with steps
  EXPECT_TRUE(caps.CanRun(Op("image.roi_align"), DeviceKind::kCuda));  // nvrtc.image
  EXPECT_FALSE(caps.CanFuse(Op("nn.pad"), DeviceKind::kCuda));          // ... alone
  EXPECT_FALSE(caps.CanRun(Op("argmax"), DeviceKind::kCuda));      // no kernel: host
}

// A provider with a fixed answer, for the engine's walk.
class FixedProvider final : public KernelProvider {
 public:
  FixedProvider(std::string name, absl::Status answer, bool fallback = false)
      : name_(std::move(name)), answer_(std::move(answer)), fallback_(fallback) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<std::unique_ptr<CompiledKernel>> TryCompile(const Function& f,
                                                             const KernelTarget& t) const override {
    ++calls;
    last_device = t.device;
    if (answer_.ok()) return CompileReferenceKernel(f);
    return answer_;
  }
  bool Runs(const OpDef&) const override { return true; }
  bool is_fallback() const override { return fallback_; }
  mutable int calls = 0;
  mutable DeviceKind last_device = DeviceKind::kUnset;

 private:
  std::string name_;
  absl::Status answer_;
  bool fallback_;
};

constexpr absl::string_view kPrimitive = R"(
def @p(%x: f32[4]) -> f32[4] attributes {primitive = true} {
  %y = exp(%x) : f32[4]
  return %y
}
)";

TEST(CompileEngineTest, WalksTheListUntilAProviderTakesTheGroup) {
  auto m = ParseModule(kPrimitive);
  ASSERT_TRUE(m.ok()) << m.status();
  FixedProvider skip("skip", absl::UnimplementedError("not mine"));
  FixedProvider take("take", absl::OkStatus());
  FixedProvider never("never", absl::OkStatus());
  const KernelProvider* const list[] = {&skip, &take, &never};
  CompileEngineOptions options;
  options.providers = [&](DeviceKind) { return absl::MakeConstSpan(list); };
  CompileEngine engine(options);
  auto k = engine.Lower(*(*m)->FindFunction("p"), DeviceKind::kSim);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(skip.calls, 1);
  EXPECT_EQ(take.calls, 1);
  EXPECT_EQ(never.calls, 0);
  EXPECT_EQ(take.last_device, DeviceKind::kSim);
}

TEST(CompileEngineTest, ARealErrorStopsTheWalkAndNamesTheProvider) {
  auto m = ParseModule(kPrimitive);
  ASSERT_TRUE(m.ok()) << m.status();
  FixedProvider broken("broken", absl::InvalidArgumentError("weights of the wrong rank"));
  FixedProvider never("never", absl::OkStatus());
  const KernelProvider* const list[] = {&broken, &never};
  CompileEngineOptions options;
  options.providers = [&](DeviceKind) { return absl::MakeConstSpan(list); };
  CompileEngine engine(options);
  auto k = engine.Lower(*(*m)->FindFunction("p"), DeviceKind::kCpu);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("cannot compile @p for cpu (broken): weights"));
  EXPECT_EQ(never.calls, 0);
}

TEST(CompileEngineTest, NoProviderTakingTheGroupIsUnimplementedNamingTheDevice) {
  auto m = ParseModule(kPrimitive);
  ASSERT_TRUE(m.ok()) << m.status();
  CompileEngine engine;
  // argmax: no cuda provider runs it.
  auto r = ParseModule(R"(
def @p(%x: f32[4, 3]) -> i64[4] attributes {primitive = true} {
  %y = argmax(%x) {axis = [1], dtype = i64} : i64[4]
  return %y
}
)");
  ASSERT_TRUE(r.ok()) << r.status();
  auto k = engine.Lower(*(*r)->FindFunction("p"), DeviceKind::kCuda);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(k.status().message(), HasSubstr("no kernel provider of cuda takes it"));
}

TEST(CompileEngineTest, SwitchedOffFacilitiesSkipTheirProviders) {
  auto m = ParseModule(kPrimitive);
  ASSERT_TRUE(m.ok()) << m.status();
  CompileEngineOptions options;
  options.use_jit = false;
  CompileEngine engine(options);
  auto k = engine.Lower(*(*m)->FindFunction("p"), DeviceKind::kCpu);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->Describe(), "reference[exp]");
  CompileEngine jit;
  auto j = jit.Lower(*(*m)->FindFunction("p"), DeviceKind::kCpu);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_THAT((*j)->Describe(), HasSubstr("jit"));
}

// Capabilities of a made-up accelerator, for the passes.
class TestCapabilities final : public KernelCapabilities {
 public:
  bool CanRun(const OpDef& op, DeviceKind d) const override {
    return d != DeviceKind::kSim || op.name() != "exp";
  }
  bool CanFuse(const OpDef& op, DeviceKind) const override { return fuse; }
  bool fuse = true;
};

// dense is a `target` op, so the accelerator runs both; exp in between is free.
constexpr absl::string_view kChain = R"(
def @main(%x: f32[n, 8], %w: f32[8, 8]) -> f32[n, 8] {
  %a = nn.dense(%x, %w)
  %e = exp(%a)
  %r = nn.dense(%e, %w)
  return %r
}
)";

absl::StatusOr<std::unique_ptr<Module>> Typed(absl::string_view text) {
  ASSIGN_OR_RETURN(auto m, ParseModule(text));
  RETURN_IF_ERROR(CreateInferTypesPass()->Run(*m).status());
  return m;
}

// The groups fuse-ops made: invokes of @main (equal groups share one primitive function).
int CountGroups(const Module& m) {
  int n = 0;
  for (const auto& node : m.FindFunction("main")->body().nodes()) n += node->kind() == NodeKind::kInvoke;
  return n;
}

TEST(FuseOpsCapabilitiesTest, NothingFusesWhereTheDeviceFusesNothing) {
  TestCapabilities caps;
  for (bool fuse : {true, false}) {
    caps.fuse = fuse;
    auto m = Typed(kChain);
    ASSERT_TRUE(m.ok()) << m.status();
    FuseOpsOptions options;
    options.capabilities = &caps;
    auto pass = CreateFuseOpsPass(options);
    ASSERT_TRUE(pass.ok());
    ASSERT_TRUE((*pass)->Run(**m).ok());
    // dense absorbs exp (out-elementwise-fusable); the second dense starts its own group.
    EXPECT_EQ(CountGroups(**m), fuse ? 2 : 3) << PrintModule(**m);
  }
}

TEST(FuseOpsCapabilitiesTest, AResizeStaysAloneWithTheBuiltinProviders) {
  auto m = Typed(R"(
def @main(%x: f32[1, 3, 8, 8]) -> f32[1, 3, 16, 16] {
  %a = add(%x, %x)
  %r = image.resize2d(%a) {size = [16, 16]}
  %e = nn.relu(%r)
  return %e
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  auto pass = CreateFuseOpsPass();
  ASSERT_TRUE(pass.ok());
  ASSERT_TRUE((*pass)->Run(**m).ok());
  std::vector<std::string> names;
  for (const auto& f : (*m)->functions()) {
    if (f->attrs().Has("primitive")) names.push_back(f->name());
  }
  EXPECT_THAT(names, ElementsAre("fused_add_0", "fused_image_resize2d_1", "fused_nn_relu_2"));
}

TEST(PlanDevicesCapabilitiesTest, AnOpTheAcceleratorCannotRunStaysOnTheHost) {
  TestCapabilities caps;  // sim runs everything but exp
  auto m = Typed(kChain);
  ASSERT_TRUE(m.ok()) << m.status();
  PlanDevicesOptions options;
  options.capabilities = &caps;
  auto pass = CreatePlanDevicesPass(options);
  ASSERT_TRUE(pass->Run(**m).ok());
  const std::string text = PrintModule(**m);
  EXPECT_THAT(text, HasSubstr("%e = exp(%a) : f32[n, 8] @cpu")) << text;
  EXPECT_THAT(text, HasSubstr("%r = nn.dense(%e_sim, %w_sim) : f32[n, 8] @sim")) << text;
  // The control: with the built-in providers, sim runs exp between the two denses.
  auto builtin = Typed(kChain);
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  ASSERT_TRUE(CreatePlanDevicesPass()->Run(**builtin).ok());
  EXPECT_THAT(PrintModule(**builtin), HasSubstr("%e = exp(%a) : f32[n, 8] @sim"));
  EXPECT_TRUE(VerifyDevicePlacement(**m).ok());
  // An annotation that puts it on the accelerator anyway is refused.
  auto annotated = Typed(R"(
def @main(%x: f32[n, 8]) -> f32[n, 8] {
  %e = exp(%x) @sim
  return %e
}
)");
  // (the annotation is checked before any placement)
  ASSERT_TRUE(annotated.ok()) << annotated.status();
  auto again = CreatePlanDevicesPass(options);
  absl::StatusOr<bool> r = again->Run(**annotated);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no kernel provider of sim runs 'exp'"));
}

// A kernel that records the context it was instantiated and run with.
struct Seen {
  DeviceKind instantiate = DeviceKind::kUnset;
  DeviceKind run = DeviceKind::kUnset;
  bool workspace = false;
  bool workspace_on_device = false;
};

class ContextKernel final : public CompiledKernel {
 public:
  explicit ContextKernel(Seen* seen) : seen_(seen) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    seen_->instantiate = ctx.device->kind();
    class Instance final : public KernelInstance {
     public:
      explicit Instance(Seen* seen) : seen_(seen) {}
      absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
        seen_->run = ctx.device->kind();
        seen_->workspace = ctx.workspace != nullptr && ctx.workspace->device() == ctx.device;
        // Scratch from the workspace lies in the device's memory and goes back to the pool.
        ASSIGN_OR_RETURN(runtime::PoolingAllocator::Block b, ctx.workspace->Allocate(256));
        seen_->workspace_on_device = ctx.device->Owns(b.ptr);
        ctx.workspace->Release(b);
        std::memset(args.back().data, 0, args.back().nbytes());
        return absl::OkStatus();
      }

     private:
      Seen* seen_;
    };
    return std::make_unique<Instance>(seen_);
  }
  std::string Describe() const override { return "context probe"; }

 private:
  Seen* seen_;
};

TEST(KernelContextTest, TheVmHandsKernelsTheirDeviceAndItsWorkspace) {
  auto m = Typed(R"(
def @main(%x: f32[2, 4], %w: f32[4, 4]) -> f32[2, 4] {
  %y = nn.dense(%x, %w)
  return %y
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  auto pipeline = ParsePipeline("plan-devices{target=sim},fuse-ops,manifest-alloc");
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  ASSERT_TRUE((*pipeline)->Run(**m).ok());
  auto exe = vm::CompileModule(**m);
  ASSERT_TRUE(exe.ok()) << exe.status();
  Seen seen;
  vm::VmOptions options;
  options.kernel_factory = [&](const Function&, DeviceKind)
      -> absl::StatusOr<std::shared_ptr<const CompiledKernel>> {
    return std::make_shared<ContextKernel>(&seen);
  };
  auto machine = vm::VirtualMachine::Load(*std::move(exe), options);
  ASSERT_TRUE(machine.ok()) << machine.status();
  Tensor x = Tensor::Zeros(DType::kF32, {2, 4});
  Tensor w = Tensor::Zeros(DType::kF32, {4, 4});
  auto out = (*machine)->RunWithHostTensors("main", {x, w});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(seen.instantiate, DeviceKind::kSim);
  EXPECT_EQ(seen.run, DeviceKind::kSim);
  EXPECT_TRUE(seen.workspace);
  EXPECT_TRUE(seen.workspace_on_device);
}

// Capabilities that count the candidates they are asked about and take groups without exp.
class CountingCapabilities final : public KernelCapabilities {
 public:
  bool CanRun(const OpDef&, DeviceKind) const override { return true; }
  bool CanFuse(const OpDef&, DeviceKind) const override { return true; }
  bool TakesEveryGroup(DeviceKind) const override { return false; }
  bool TakesGroup(const Function& f, DeviceKind d) const override { return Ask(f); }
  bool TakesGroupNatively(const Function& f, DeviceKind d) const override { return Ask(f); }
  mutable int asked = 0;

 private:
  bool Ask(const Function& f) const {
    ++asked;
    for (const auto& n : f.body().nodes()) {
      if (n->OpName() == "exp") return false;
    }
    return true;
  }
};

// The cache answers a candidate structurally equal to one asked before (names aside) without
// asking; a different dtype, shape, op or question is asked.
TEST(GroupAnswerCache, AnswersStructurallyEqualCandidates) {
  auto m = Typed(R"(
def @main(%x: f32[n, 8], %y: f32[n, 8], %h: f16[n, 8], %k: f32[n, 4]) {
  %a = tanh(%x)
  %b = add(%a, %x)
  %c = tanh(%y)
  %d = add(%c, %y)
  %e = tanh(%h)
  %f = add(%e, %h)
  %g = tanh(%k)
  %i = add(%g, %k)
  %j = exp(%x)
  %l = add(%j, %x)
  return %b, %d, %f, %i, %l
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& nodes = (*m)->FindFunction("main")->body().nodes();
  auto pair = [&](int k) { return std::vector<const Node*>{nodes[2 * k].get(), nodes[2 * k + 1].get()}; };
  auto out = [&](int k) { return std::vector<Value*>{nodes[2 * k + 1]->result()}; };
  CountingCapabilities caps;
  GroupAnswerCache cache;
  std::vector<bool> cached, direct;
  for (int k = 0; k < 5; ++k) {
    cached.push_back(DeviceRunsGroupNatively(caps, pair(k), out(k), DeviceKind::kSim, &cache));
  }
  EXPECT_EQ(caps.asked, 4);  // %c, %d is %a, %b renamed
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 4);
  // The other question and another device are not answered from these.
  EXPECT_TRUE(DeviceRunsGroup(caps, pair(0), out(0), DeviceKind::kSim, &cache));
  EXPECT_TRUE(DeviceRunsGroupNatively(caps, pair(0), out(0), DeviceKind::kCuda, &cache));
  EXPECT_EQ(caps.asked, 6);
  for (int k = 0; k < 5; ++k) direct.push_back(DeviceRunsGroupNatively(caps, pair(k), out(k), DeviceKind::kSim));
  EXPECT_EQ(cached, direct);
  EXPECT_EQ(cached, (std::vector<bool>{true, true, true, true, false}));
}

// The cache matches candidates on their members, without building them: what a built
// candidate would differ in (operand wiring, a value used twice, how many parameters, an
// attribute, which values are outputs) is a miss; only a renamed group is a hit.
TEST(GroupAnswerCache, TellsApartWiringAttributesAndOutputs) {
  auto m = Typed(R"(
def @main(%x: f32[n, 8], %y: f32[n, 8], %v: f32[8]) {
  %a = tanh(%x)
  %b = add(%a, %x)
  %c = tanh(%x)
  %d = add(%x, %c)
  %e = tanh(%x)
  %f = add(%e, %e)
  %g = tanh(%x)
  %i = add(%g, %y)
  %j = tanh(%y)
  %l = add(%j, %y)
  %o = tanh(%x)
  %p = nn.bias_add(%o, %v) {axis = 1}
  %q = tanh(%x)
  %r = nn.bias_add(%q, %v) {axis = -1}
  return %b, %d, %f, %i, %l, %p, %r
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& nodes = (*m)->FindFunction("main")->body().nodes();
  auto pair = [&](int k) { return std::vector<const Node*>{nodes[2 * k].get(), nodes[2 * k + 1].get()}; };
  auto out = [&](int k) { return std::vector<Value*>{nodes[2 * k + 1]->result()}; };
  CountingCapabilities caps;
  GroupAnswerCache cache;
  for (int k = 0; k < 7; ++k) DeviceRunsGroupNatively(caps, pair(k), out(k), DeviceKind::kSim, &cache);
  EXPECT_EQ(caps.asked, 6);  // only %j, %l (group 4) is group 0 renamed
  EXPECT_EQ(cache.hits(), 1);
  // Group 0 with both of its values as outputs is another candidate; asked again, a hit.
  const std::vector<Value*> both = {nodes[0]->result(), nodes[1]->result()};
  DeviceRunsGroupNatively(caps, pair(0), both, DeviceKind::kSim, &cache);
  DeviceRunsGroupNatively(caps, pair(4), {nodes[8]->result(), nodes[9]->result()}, DeviceKind::kSim, &cache);
  EXPECT_EQ(caps.asked, 7);
  EXPECT_EQ(cache.hits(), 2);
  // An output that is not a member's value is refused, not cached.
  const std::vector<Value*> foreign = {nodes[3]->result()};
  EXPECT_FALSE(DeviceRunsGroupNatively(caps, pair(0), foreign, DeviceKind::kSim, &cache));
  EXPECT_EQ(caps.asked, 7);
}

}  // namespace
}  // namespace hetpass
