// The VM on the cuda device (docs/cuda.md): a module whose inputs live on the GPU runs its
// elementwise and layout ops there as NVPTX kernels; the plan (made without a GPU) places them
// on cuda with exactly the copies the ledger lists, and on a GPU the run makes exactly those
// copies, computes what the reference computes and, once warm, allocates nothing.
#include <algorithm>

#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/vm/vm.h"
#include "support/cuda_test_util.h"
#include "support/runtime_test_util.h"
#include "support/seed_models.h"

namespace hetpass::vm {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::RandomTensor;
using ::hetpass::testing::ReferenceRun;
using ::hetpass::testing::TensorsNear;

constexpr char kOnGpu[] = R"(
def @main(%x: f32[n, 64] @cuda, %b: f32[64] @cuda) {
  %0 = add(%x, %b)
  %1 = nn.relu(%0)
  %2 = transpose(%1) {axes = [1, 0]}
  %3 = multiply(%2, %2)
  return %3
}
)";

// Tests the plan for target=cuda without a GPU: every op is placed on cuda (the NVPTX provider
// runs them), and the ledger has no copy at all inside the function: the inputs are declared on
// the device and the result is returned from there.
TEST(VmCuda, PlansElementwiseAndLayoutOpsOnTheGpu) {
  auto p = CompileForVm(kOnGpu, DefaultPipeline(DeviceKind::kCuda));
  ASSERT_TRUE(p.ok()) << p.status();
  int on_cuda = 0;
  for (const auto& f : p->compiled->functions()) {
    WalkNodes(f->body(), [&](Node& n) {
      if (n.kind() == NodeKind::kCall && n.device() == DeviceKind::kCuda) ++on_cuda;
    });
  }
  EXPECT_GT(on_cuda, 0);
  for (const LedgerEntry& e : p->ledger.entries) {
    EXPECT_NE(e.direction, CopyDirection::kHostToDevice) << e.value << ": " << e.reason;
  }
}

// The run on `target`: outputs equal the reference for several sizes, the device counters
// equal the ledger (one copy: the result read back), one fused kernel launch, and no raw device
// allocation once warm.
void RunAndCount(DeviceKind target) {
  std::string text = kOnGpu;
  if (target != DeviceKind::kCuda) {
    for (size_t at; (at = text.find("@cuda")) != std::string::npos;) text.replace(at, 5, "@sim");
  }
  auto p = CompileForVm(text, DefaultPipeline(target));
  ASSERT_TRUE(p.ok()) << p.status();
  auto vm = VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  for (int64_t n : {5, 1000, 3, 1000}) {
    SCOPED_TRACE(n);
    const Tensor x = RandomTensor(DType::kF32, {n, 64}, static_cast<uint32_t>(n));
    const Tensor b = RandomTensor(DType::kF32, {64}, 7);
    auto out = (*vm)->RunWithHostTensors("main", {x, b});
    ASSERT_TRUE(out.ok()) << out.status();
    auto ref = ReferenceRun(*p->source, {x, b});
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_TRUE(TensorsNear((*out)[0], (*ref)[0]));
    const runtime::DeviceCounters& c = (*vm)->LastRunCounters();
    // The inputs were staged onto the parameters' device before the run (not the program's
    // copies); the program makes one: the result read back.
    EXPECT_EQ(c.h2d_calls, 0);
    const absl::Status agree = CompareWithLedger(p->ledger, c, {{"n", n}});
    EXPECT_TRUE(agree.ok()) << agree;
    EXPECT_EQ(c.d2h_calls, 1);  // the result
    EXPECT_EQ(c.d2h_bytes, n * 64 * 4);
    EXPECT_EQ(c.syncs, 1);
    EXPECT_EQ(c.launches, 1);
    if (n == 3) {
      EXPECT_EQ(c.allocs, 0);  // smaller than an earlier run: served by the pool
    }
  }
}

// Tests the same program on sim, whose counters define what cuda's must be.
TEST(VmCuda, SimCountsTheSameProgram) { RunAndCount(DeviceKind::kSim); }

// Tests the run on a GPU.
TEST(VmCuda, RunsOnTheGpuWithTheSameCounts) {
  HETPASS_SKIP_WITHOUT_GPU();
  RunAndCount(DeviceKind::kCuda);
}

// The seed MLP for target=cuda: its three dense + bias (+ relu) groups are placed on cuda
// (cublaslt.dense), so the plan is sim's: the input copied in once, the result read back once.
// On a GPU the run matches the reference with exactly those copies, three launches and no raw
// allocation once warm (a batch no larger than an earlier one).
TEST(VmCuda, SeedMlpRunsItsGemmsOnTheGpu) {
  auto p = CompileForVm(testing::SeedMlp("n"), DefaultPipeline(DeviceKind::kCuda));
  ASSERT_TRUE(p.ok()) << p.status();
  int on_cuda = 0;
  WalkNodes(p->compiled->FindFunction("main")->body(), [&](Node& n) {
    if (n.kind() == NodeKind::kInvoke && n.device() == DeviceKind::kCuda) ++on_cuda;
  });
  EXPECT_EQ(on_cuda, 3);
  HETPASS_SKIP_WITHOUT_GPU();
  auto vm = VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  int64_t largest = 0;
  for (int64_t n : {16, 3, 1, 64, 16}) {
    SCOPED_TRACE(n);
    const Tensor x = RandomTensor(DType::kF32, {n, 1024}, static_cast<uint32_t>(n));
    auto out = (*vm)->RunWithHostTensors("main", {x});
    ASSERT_TRUE(out.ok()) << out.status();
    auto ref = ReferenceRun(*p->source, {x});
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_TRUE(TensorsNear((*out)[0], (*ref)[0]));
    const runtime::DeviceCounters& c = (*vm)->LastRunCounters();
    EXPECT_EQ(c.h2d_calls, 1);
    EXPECT_EQ(c.h2d_bytes, n * 1024 * 4);
    EXPECT_EQ(c.d2h_calls, 1);
    EXPECT_EQ(c.d2h_bytes, n * 128 * 4);
    EXPECT_EQ(c.syncs, 1);
    EXPECT_EQ(c.launches, 3);
    const absl::Status agree = CompareWithLedger(p->ledger, c, {{"n", n}});
    EXPECT_TRUE(agree.ok()) << agree;
    if (n <= largest) {
      EXPECT_EQ(c.allocs, 0);  // every buffer fits one cached by a larger run
    }
    largest = std::max(largest, n);
  }
}

// CUDA graphs (docs/runtime.md, "Device graphs") on the seed MLP: its three cuBLASLt launches
// are one stretch; the first run of a batch size is eager, the second captures a CUDA graph and
// launches it, later ones replay it with one graph launch, and every run computes what a VM
// without graphs computes, with the same copies.
TEST(VmCuda, SeedMlpReplaysACudaGraph) {
  auto p = CompileForVm(testing::SeedMlp("n"), DefaultPipeline(DeviceKind::kCuda));
  ASSERT_TRUE(p.ok()) << p.status();
  HETPASS_SKIP_WITHOUT_GPU();
  auto vm = VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  VmOptions off;
  off.device_graphs = false;
  auto eager = VirtualMachine::Load(p->executable, off);
  ASSERT_TRUE(eager.ok()) << eager.status();
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(run);
    const Tensor x = RandomTensor(DType::kF32, {8, 1024}, static_cast<uint32_t>(run + 1));
    auto out = (*vm)->RunWithHostTensors("main", {x});
    ASSERT_TRUE(out.ok()) << out.status();
    auto want = (*eager)->RunWithHostTensors("main", {x});
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(TensorsNear((*out)[0], (*want)[0]));
    const runtime::DeviceCounters& c = (*vm)->LastRunCounters();
    EXPECT_EQ(c.graph_captures, run == 1 ? 1 : 0);
    EXPECT_EQ(c.graph_launches, run >= 1 ? 1 : 0);
    EXPECT_EQ(c.graph_kernels, run >= 1 ? 3 : 0);
    EXPECT_EQ(c.launches, 3);
    const absl::Status agree = CompareWithLedger(p->ledger, c, {{"n", 8}});
    EXPECT_TRUE(agree.ok()) << agree;
  }
  const std::vector<GraphStretch> stats = (*vm)->GraphStats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].replays, 2) << stats[0].note;
  EXPECT_EQ(stats[0].fallbacks, 0) << stats[0].note;
}

// A loop whose body runs on the accelerator (its dense is a device op) and stacks a scan output
// there: the VM stacks the iterations' parts with a kernel on the parts' device, one
// Device::KernelCopy per part: an asynchronous device-to-device copy on cuda's stream (which
// CUPTI records), counted as a d2d copy on cuda and on sim alike, and listed in the ledger.
constexpr char kLoopOnDevice[] = R"(
def @main(%m: i64[], %c: bool[], %x: f32[n, 8] @DEV, %w: f32[8, 8] @DEV) {
  %r, %s = loop(%m, %c, %x) (%i: i64[], %ci: bool[], %acc: f32[n, 8]) {
    %e = nn.dense(%acc, %w)
    %t = nn.relu(%e)
    yield %ci, %e, %t
  }
  return %r, %s
}
)";

struct LoopRun {
  std::vector<Tensor> out;
  runtime::DeviceCounters counters;
  vm::LedgerComparison ledger;
};

absl::StatusOr<LoopRun> RunLoop(DeviceKind target) {
  std::string text = kLoopOnDevice;
  for (size_t at; (at = text.find("@DEV")) != std::string::npos;) text.replace(at, 4, absl::StrCat("@", DeviceName(target)));
  ASSIGN_OR_RETURN(auto p, CompileForVm(text, DefaultPipeline(target)));
  ASSIGN_OR_RETURN(auto vm, VirtualMachine::Load(p.executable));
  const Tensor m = Tensor::FromInt64s(DType::kI64, {}, {4});
  const Tensor c = Tensor::FromInt64s(DType::kBool, {}, {1});
  const Tensor x = RandomTensor(DType::kF32, {3, 8}, 11);
  Tensor w = Tensor::Zeros(DType::kF32, {8, 8});
  for (int i = 0; i < 8; ++i) w.mutable_data_as<float>()[i * 9] = 2.0f;  // dense(acc, w) = 2 acc
  ASSIGN_OR_RETURN(std::vector<Tensor> out, vm->RunWithHostTensors("main", {m, c, x, w}));
  // The reference interpreter has no loops: iteration i doubles the carried value, so r = 16 x
  // and scan part i = relu(2^(i+1) x), exactly (powers of two).
  if (out.size() != 2 || out[0].shape() != x.shape() || out[1].shape() != std::vector<int64_t>{4, 3, 8}) {
    return absl::InternalError("the loop's results have the wrong shapes");
  }
  for (int64_t j = 0; j < x.num_elements(); ++j) {
    const float v = x.data_as<float>()[j];
    if (out[0].data_as<float>()[j] != 16 * v) return absl::InternalError("the carried value is wrong");
    for (int64_t i = 0; i < 4; ++i) {
      const float want = std::max(0.0f, static_cast<float>(2 << i) * v);
      if (out[1].data_as<float>()[i * 24 + j] != want) return absl::InternalError("the scan output is wrong");
    }
  }
  return LoopRun{std::move(out), vm->LastRunCounters(),
                 vm::CompareLedgerToRun(p.ledger, vm->LastRunCounters(), vm->LastRunRecord())};
}

// Tests the loop on sim: results equal the reference, the scan output stacked on the device.
TEST(VmCuda, LoopScanOutputStacksOnSim) {
  absl::StatusOr<LoopRun> sim = RunLoop(DeviceKind::kSim);
  ASSERT_TRUE(sim.ok()) << sim.status();
  // Per iteration one dense launch and one relu launch, then the stacking kernel; the carried
  // result and the stacked scan output are read back.
  EXPECT_EQ(sim->counters.launches, 4 * 2 + 1) << sim->counters.ToString();
  EXPECT_EQ(sim->counters.d2h_calls, 2) << sim->counters.ToString();
  // The stacking: one device-to-device copy per iteration's 3x8 part, promised by the ledger.
  EXPECT_EQ(sim->counters.d2d_calls, 4) << sim->counters.ToString();
  EXPECT_EQ(sim->counters.d2d_bytes, 4 * 3 * 8 * 4) << sim->counters.ToString();
  // The stacked result (f32[?, n, 8]) crosses back as a copy of a run-time size: the
  // comparison agrees, with that copy's bytes reported apart, and the d2d row is exact.
  EXPECT_TRUE(sim->ledger.agrees()) << sim->ledger.Summary() << "\n" << sim->ledger.Table();
  for (const LedgerComparison::Row& r : sim->ledger.rows) {
    if (r.name != "d2d") continue;
    EXPECT_EQ(r.count.verdict, LedgerComparison::Verdict::kMatch) << sim->ledger.Table();
    EXPECT_EQ(r.bytes.verdict, LedgerComparison::Verdict::kMatch) << sim->ledger.Table();
    EXPECT_FALSE(r.runtime_sized) << sim->ledger.Table();
  }
}

// Tests the loop on a GPU: the same results and exactly sim's copies, syncs and launches.
TEST(VmCuda, LoopScanOutputStacksOnTheGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  absl::StatusOr<LoopRun> sim = RunLoop(DeviceKind::kSim);
  ASSERT_TRUE(sim.ok()) << sim.status();
  absl::StatusOr<LoopRun> gpu = RunLoop(DeviceKind::kCuda);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const runtime::DeviceCounters& a = sim->counters;
  const runtime::DeviceCounters& b = gpu->counters;
  EXPECT_EQ(b.h2d_calls, a.h2d_calls);
  EXPECT_EQ(b.d2h_calls, a.d2h_calls);
  EXPECT_EQ(b.d2d_calls, a.d2d_calls);
  EXPECT_EQ(b.d2d_bytes, a.d2d_bytes);
  EXPECT_EQ(b.d2d_calls, 4);
  EXPECT_TRUE(gpu->ledger.agrees()) << gpu->ledger.Summary() << "\n" << gpu->ledger.Table();
  EXPECT_EQ(b.syncs, a.syncs);
  EXPECT_EQ(b.launches, a.launches);
  EXPECT_TRUE(TensorsNear(gpu->out[1], sim->out[1]));
}

// A reduction whose prologue reads two tensors: fuse-ops cuts the group no cuda kernel takes
// (rule i) into the elementwise prologue and the reduction, so every group placed on cuda
// compiles (here, without a GPU) and, on a GPU, the run equals the reference.
constexpr char kSquaredDistance[] = R"(
def @main(%x: f32[n, 16] @cuda, %y: f32[n, 16] @cuda) {
  %d = subtract(%x, %y)
  %s = multiply(%d, %d)
  %r = sum(%s) {axis = [1]}
  return %r
}
)";

TEST(VmCuda, GroupsNoKernelTakesAreSplitAndRun) {
  auto p = CompileForVm(kSquaredDistance, DefaultPipeline(DeviceKind::kCuda));
  ASSERT_TRUE(p.ok()) << p.status();
  CompileEngine engine;
  int on_cuda = 0;
  for (const auto& f : p->compiled->functions()) {
    if (!IsPrimitive(*f) || f->body().nodes().empty() || f->body().nodes().front()->device() != DeviceKind::kCuda) {
      continue;
    }
    ++on_cuda;
    auto k = engine.Lower(*f, DeviceKind::kCuda);
    EXPECT_TRUE(k.ok()) << k.status();
  }
  EXPECT_EQ(on_cuda, 2);
  HETPASS_SKIP_WITHOUT_GPU();
  auto vm = VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  const Tensor x = RandomTensor(DType::kF32, {5, 16}, 1);
  const Tensor y = RandomTensor(DType::kF32, {5, 16}, 2);
  auto out = (*vm)->RunWithHostTensors("main", {x, y});
  ASSERT_TRUE(out.ok()) << out.status();
  auto ref = ReferenceRun(*p->source, {x, y});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(TensorsNear((*out)[0], (*ref)[0]));
}

}  // namespace
}  // namespace hetpass::vm
