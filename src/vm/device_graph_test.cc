// Tests of device graphs (VmOptions::device_graphs; vm.cc, "Device graphs") on sim: where the
// stretches are, capture once per shape key after the warm-up, replays that launch one graph
// and compute what eager runs compute, the LRU bound, and fallbacks when a replay's launches
// differ from its graph's (a pointer or a by-value argument).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"
#include "support/seed_models.h"
#include "support/shared_models.h"

namespace hetpass::vm {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::RandomTensor;
using ::hetpass::testing::VmProgram;
using ::testing::HasSubstr;

VmProgram MustCompile(const std::string& text) {
  auto p = CompileForVm(text, DefaultPipeline(DeviceKind::kSim));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : VmProgram();
}

std::unique_ptr<VirtualMachine> MustLoad(const Executable& exe, VmOptions options = {}) {
  auto vm = VirtualMachine::Load(exe, std::move(options));
  EXPECT_TRUE(vm.ok()) << vm.status();
  return vm.ok() ? *std::move(vm) : nullptr;
}

// A VM with device graphs (the default) and one without, loaded from one executable.
std::pair<std::unique_ptr<VirtualMachine>, std::unique_ptr<VirtualMachine>> LoadWithAndWithoutGraphs(
    const Executable& exe) {
  VmOptions off;
  off.device_graphs = false;
  return {MustLoad(exe), MustLoad(exe, off)};
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// The accelerator launches a run made one by one (the cpu's launches are host kernels).
int64_t OneByOne(const VirtualMachine& vm) {
  const runtime::DeviceCounters& c = vm.LastRunCounters();
  return c.launches - c.graph_kernels - vm.CountersOf(DeviceKind::kCpu).launches;
}

// argwhere's count crosses to the host between the two halves: two stretches, neither of which
// spans an instruction that waits for or hands data to the device.
TEST(DeviceGraphs, StretchesEndWhereTheHostWaits) {
  VmProgram p = MustCompile(testing::ArgwhereGatherDense(/*softmax=*/true));
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  const std::vector<GraphStretch> stretches = vm->GraphStats();
  ASSERT_EQ(stretches.size(), 2u) << p.executable.ToListing();
  for (const GraphStretch& s : stretches) {
    const VmFunction& f = p.executable.functions[p.executable.FindFunction(s.function)];
    EXPECT_EQ(s.device, DeviceKind::kSim);
    EXPECT_EQ(f.code[s.begin].op, Opcode::kInvokeKernel);
    EXPECT_EQ(f.code[s.end - 1].op, Opcode::kInvokeKernel);
    int32_t launches = 0;
    for (int32_t pc = s.begin; pc < s.end; ++pc) {
      const Opcode op = f.code[pc].op;
      // Copies onto the device can be nodes of the graph; none to the host (a wait).
      EXPECT_FALSE(op == Opcode::kDeviceCopy && f.code[pc].device == DeviceKind::kCpu) << "pc " << pc;
      EXPECT_NE(op, Opcode::kCall) << "pc " << pc;
      EXPECT_NE(op, Opcode::kLoop) << "pc " << pc;
      EXPECT_NE(op, Opcode::kIf) << "pc " << pc;
      EXPECT_NE(op, Opcode::kRet) << "pc " << pc;
      launches += op == Opcode::kInvokeKernel && f.code[pc].device == DeviceKind::kSim;
    }
    EXPECT_EQ(launches, s.launches);
  }
  // A device-to-host copy lies between them.
  const VmFunction& main = p.executable.functions[p.executable.FindFunction("main")];
  bool copy_between = false;
  for (int32_t pc = stretches[0].end; pc < stretches[1].begin; ++pc) {
    copy_between |= main.code[pc].op == Opcode::kDeviceCopy && main.code[pc].device == DeviceKind::kCpu;
  }
  EXPECT_TRUE(copy_between);
}

// The seed MLP (dynamic batch): its three launches are one stretch. The first run of a batch
// size is eager, the second captures, later ones replay; each shape key has its own graph;
// every run equals a VM without graphs, bit for bit, and agrees with the ledger.
TEST(DeviceGraphs, CapturedOncePerShapeKeyAndReplayed) {
  VmProgram p = MustCompile(testing::SeedMlp("n"));
  auto [vm, eager] = LoadWithAndWithoutGraphs(p.executable);
  ASSERT_NE(vm, nullptr);
  ASSERT_NE(eager, nullptr);
  ASSERT_EQ(vm->GraphStats().size(), 1u);
  EXPECT_EQ(vm->GraphStats()[0].launches, 3);
  struct Step {
    int64_t n;
    int64_t captures, graph_launches, one_by_one;
  };
  const Step steps[] = {
      {4, 0, 0, 3},  // warm-up: eager
      {4, 1, 1, 0},  // captured and launched
      {4, 0, 1, 0},  // replayed
      {8, 0, 0, 3},  // a new key warms up
      {8, 1, 1, 0},
      {4, 0, 1, 0},  // the first key's graph is still cached
      {8, 0, 1, 0},
  };
  uint32_t seed = 1;
  for (const Step& s : steps) {
    SCOPED_TRACE(absl::StrCat("n = ", s.n, ", run ", seed));
    const Tensor x = RandomTensor(DType::kF32, {s.n, 1024}, seed++);
    auto out = vm->RunWithHostTensors("main", {x});
    ASSERT_TRUE(out.ok()) << out.status();
    auto want = eager->RunWithHostTensors("main", {x});
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(SameBytes((*out)[0], (*want)[0]));
    const runtime::DeviceCounters& c = vm->LastRunCounters();
    EXPECT_EQ(c.graph_captures, s.captures);
    EXPECT_EQ(c.graph_launches, s.graph_launches);
    EXPECT_EQ(c.graph_kernels, 3 * s.graph_launches);
    EXPECT_EQ(OneByOne(*vm), s.one_by_one);
    EXPECT_EQ(c.launches, eager->LastRunCounters().launches);
    const absl::Status agree = CompareWithLedger(p.ledger, c, {{"n", s.n}});
    EXPECT_TRUE(agree.ok()) << agree;
    EXPECT_EQ(eager->LastRunCounters().graph_launches, 0);
  }
  const GraphStretch st = vm->GraphStats()[0];
  EXPECT_EQ(st.eager, 2);
  EXPECT_EQ(st.captures, 2);
  EXPECT_EQ(st.replays, 3);
  EXPECT_EQ(st.fallbacks, 0);
  EXPECT_EQ(vm->GraphsCached(), 2);
}

// graph_cache_size bounds the keys kept, least recently used first out: with one slot, a
// second key's graph evicts the first, whose next run warms up again.
TEST(DeviceGraphs, TheCacheKeepsAtMostItsSize) {
  VmProgram p = MustCompile(testing::SeedMlp("n"));
  VmOptions options;
  options.graph_cache_size = 1;
  auto vm = MustLoad(p.executable, options);
  ASSERT_NE(vm, nullptr);
  auto run = [&](int64_t n) {
    auto out = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {n, 1024}, 5)});
    EXPECT_TRUE(out.ok()) << out.status();
    return vm->LastRunCounters();
  };
  for (int i = 0; i < 3; ++i) run(2);
  EXPECT_EQ(run(2).graph_launches, 1);
  EXPECT_EQ(vm->GraphsCached(), 1);
  run(6);
  EXPECT_EQ(run(6).graph_captures, 1);
  EXPECT_EQ(vm->GraphsCached(), 1);
  EXPECT_EQ(run(2).graph_launches, 0);  // evicted: warming up again
  EXPECT_EQ(run(2).graph_captures, 1);
  EXPECT_EQ(vm->GraphsCached(), 1);
}

// A result kept by the caller holds its block, so the next run's result lands elsewhere: the
// replay's last launch writes another address than its graph's node. The launches matched
// before it run from their nodes, the rest eagerly, the results stay right; after three such
// fallbacks the stretch runs eagerly for good, saying why.
TEST(DeviceGraphs, AReplayWhoseLaunchesDifferFallsBack) {
  // Inputs and results on sim (plan-devices' inputs/outputs=target), so the caller holds
  // device blocks.
  std::string pipeline = DefaultPipeline(DeviceKind::kSim);
  const std::string plan = "plan-devices{target=sim}";
  ASSERT_NE(pipeline.find(plan), std::string::npos) << pipeline;
  pipeline.replace(pipeline.find(plan), plan.size(), "plan-devices{target=sim,inputs=target,outputs=target}");
  auto compiled = CompileForVm(R"(
def @main(%x: f32[n, 64] @sim) {
  %w = constant<elided> : f32[32, 64]
  %h = nn.dense(%x, %w) @sim
  %s = nn.softmax(%h) @sim
  return %s
}
)", pipeline);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  VmProgram& p = *compiled;
  auto [vm, eager] = LoadWithAndWithoutGraphs(p.executable);
  ASSERT_NE(vm, nullptr);
  ASSERT_NE(eager, nullptr);
  ASSERT_EQ(vm->GraphStats().size(), 1u);
  const Tensor x = RandomTensor(DType::kF32, {3, 64}, 9);
  auto want = eager->RunWithHostTensors("main", {x});  // a warm-up: its allocations
  want = eager->RunWithHostTensors("main", {x});
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<std::vector<Object>> kept;
  // Runs: eager, capture, fallback, capture, fallback, capture, fallback (retired), eager.
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(absl::StrCat("run ", i));
    auto staged = runtime::FromHost(x, vm->pool(DeviceKind::kSim));
    ASSERT_TRUE(staged.ok()) << staged.status();
    auto out = vm->Run("main", {Object::FromTensor(*std::move(staged))});
    ASSERT_TRUE(out.ok()) << out.status();
    auto host = runtime::ToHost((*out)[0].tensor);
    ASSERT_TRUE(host.ok()) << host.status();
    EXPECT_TRUE(SameBytes(*host, (*want)[0]));
    kept.push_back(*std::move(out));  // the caller keeps every result
  }
  const GraphStretch st = vm->GraphStats()[0];
  EXPECT_EQ(st.captures, 3);
  EXPECT_EQ(st.fallbacks, 3);
  EXPECT_EQ(st.replays, 0);
  EXPECT_EQ(vm->LastRunCounters().graph_launches, 0);
  EXPECT_THAT(st.note, HasSubstr("is at another address"));
  EXPECT_THAT(st.note, HasSubstr("runs eagerly after 3 fallbacks"));
}

// Host values a launch reads by value (slice bounds) are part of what a replay checks: a run
// whose bounds differ but whose shapes (and so symbols, the key) do not falls back instead of
// replaying stale parameters.
TEST(DeviceGraphs, ByValueArgumentsThatChangeAreNotReplayed) {
  VmProgram p = MustCompile(testing::SliceChain());
  auto [vm, eager] = LoadWithAndWithoutGraphs(p.executable);
  ASSERT_NE(vm, nullptr);
  ASSERT_NE(eager, nullptr);
  auto i64 = [](std::vector<int64_t> v) {
    Tensor t = Tensor::Zeros(DType::kI64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.SetDouble(static_cast<int64_t>(i), static_cast<double>(v[i]));
    return t;
  };
  const Tensor x = RandomTensor(DType::kF32, {40, 64}, 4);
  const Tensor stride = i64({1, 1});
  // Rows to 40 and columns to 60 four times (warm-up, capture, two replays), then rows to 41,
  // which clamps to the 40 there are: the same 40 x 60 slices, other bounds.
  const std::vector<int64_t> begins[] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}};
  const std::vector<int64_t> ends[] = {{40, 60}, {40, 60}, {40, 60}, {40, 60}, {41, 60}};
  for (int run = 0; run < 5; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    const std::vector<Tensor> in = {x, i64(begins[run]), i64(ends[run]), stride};
    auto out = vm->RunWithHostTensors("main", in);
    ASSERT_TRUE(out.ok()) << out.status();
    auto want = eager->RunWithHostTensors("main", in);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(SameBytes((*out)[0], (*want)[0]));
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{40, 60}));
  }
  const GraphStretch st = vm->GraphStats()[0];
  EXPECT_EQ(st.replays, 2);
  EXPECT_EQ(st.fallbacks, 1);
  EXPECT_EQ(vm->LastRunCounters().graph_launches, 0);
  EXPECT_THAT(st.note, HasSubstr("by-value argument"));
}

// With device_graphs off every launch is made one by one.
TEST(DeviceGraphs, OffLaunchesEveryKernelOneByOne) {
  VmProgram p = MustCompile(testing::SeedMlp("n"));
  VmOptions off;
  off.device_graphs = false;
  auto vm = MustLoad(p.executable, off);
  ASSERT_NE(vm, nullptr);
  for (int i = 0; i < 3; ++i) {
    auto out = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {2, 1024}, 5)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(vm->LastRunCounters().graph_launches + vm->LastRunCounters().graph_captures, 0);
    EXPECT_EQ(OneByOne(*vm), 3);
  }
  EXPECT_EQ(vm->GraphsCached(), 0);
}

// maskrcnn_tiny (../shared/models): loops, branches, data-dependent counts, host scalars copied
// to the device between launches (copy nodes of the graphs, through staging). From the third
// run on, every launch on sim but the loop's scan stacking runs inside a graph, and the
// outputs equal a VM without graphs bit for bit, with the same copies.
TEST(DeviceGraphs, MaskRcnnReplaysMatchEagerRuns) {
  const std::string dir = testing::SharedModelDir("maskrcnn_tiny");
  auto exe = testing::CompileSharedModel(dir, DeviceKind::kSim);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto inputs = testing::ReadTestSetInputs(dir + "/test_data_set_0");
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  auto [vm, eager] = LoadWithAndWithoutGraphs(*exe);
  ASSERT_NE(vm, nullptr);
  ASSERT_NE(eager, nullptr);
  // Run by run against the eager VM's run of the same number: the first run of a VM lays its
  // buffers out apart from later ones (the pools' run-time plan), and a few mask values differ
  // in their last bits between the two layouts, graphs or not.
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    auto out = vm->RunWithHostTensors("main", *inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    auto want = eager->RunWithHostTensors("main", *inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(out->size(), want->size());
    for (size_t i = 0; i < out->size(); ++i) EXPECT_TRUE(SameBytes((*out)[i], (*want)[i])) << "output " << i;
    testing::ExpectSameCopies(vm->LastRunCounters(), eager->LastRunCounters());
    EXPECT_EQ(vm->LastRunCounters().launches, eager->LastRunCounters().launches);
  }
  const runtime::DeviceCounters& c = vm->LastRunCounters();
  EXPECT_EQ(c.graph_captures, 0);
  EXPECT_GT(c.graph_launches, 0);
  int64_t replays = 0;
  int copies_in_graphs = 0;  // host-to-device copies between a stretch's launches: graph nodes
  for (const GraphStretch& s : vm->GraphStats()) {
    replays += s.replays;
    EXPECT_EQ(s.fallbacks, 0) << s.function << " pc " << s.begin << ": " << s.note;
    const VmFunction& f = exe->functions[exe->FindFunction(s.function)];
    for (int32_t pc = s.begin; pc < s.end; ++pc) {
      copies_in_graphs += f.code[pc].op == Opcode::kDeviceCopy && f.code[pc].device == DeviceKind::kSim;
    }
  }
  EXPECT_GE(copies_in_graphs, 6);  // the anchor generator's and the RPN's host scalars
  // Only the last run replayed (the first warmed up, the second captured).
  EXPECT_EQ(replays, c.graph_launches);
  // Graph launches per inference on this test set (docs/runtime.md quotes it): 16 of them are
  // the loop's iterations ($loop2 = 16), whose body starts with a copy of the iteration number.
  EXPECT_EQ(vm->LastRunRecord().executions.at("main$loop2"), 16);
  EXPECT_EQ(c.graph_launches, 35);
  EXPECT_EQ(OneByOne(*vm), 1);  // the loop's scan stacking, after the last iteration
}

}  // namespace
}  // namespace hetpass::vm
