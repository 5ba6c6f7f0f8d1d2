// Device faults (docs/runtime.md, "Faults and memory limits"): the sim device is told to fail
// its k-th allocation, copy or launch, for every k one inference reaches, on two PyTorch exports
// from ../shared compiled for sim: the dynamic-batch MLP and nonzero_gather (data-dependent
// shapes: a device-to-host copy of a count, an allocation sized by it). Each injected fault must
// come back as the run's Status naming where it happened (the instruction and its IR binding, or
// the argument being staged, or the result being read back) and the device; every pool block
// the run took must be back in the pool (the ASan+UBSan build's LeakSanitizer checks host
// memory), and the same VM must then run the next inference with the exact outputs and copies
// of a run that never failed. Then the device memory limit: over it is ResourceExhausted naming
// the request, what is available and the value, and TrimMemory gives the pools' memory back.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"
#include "support/shared_models.h"

namespace hetpass {
namespace {

using runtime::FaultSite;

struct Compiled {
  std::shared_ptr<const vm::Program> program;
  CopyLedger ledger;
  std::vector<Tensor> inputs;
};

absl::StatusOr<Compiled> Compile(const std::string& name) {
  const std::string dir = testing::SharedModelDir(name);
  if (!std::filesystem::exists(dir + "/model.onnx")) {
    return absl::NotFoundError(absl::StrCat("missing shared model ", dir));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ImportOnnxFile(dir + "/model.onnx"));
  ASSIGN_OR_RETURN(auto pm, ParsePipeline(vm::DefaultPipeline(DeviceKind::kSim), PassManagerOptions()));
  RETURN_IF_ERROR(pm->Run(*m).status());
  Compiled c;
  ASSIGN_OR_RETURN(c.ledger, ComputeCopyLedger(*m));
  ASSIGN_OR_RETURN(vm::Executable exe, vm::CompileModule(*m));
  ASSIGN_OR_RETURN(c.program, vm::Program::Compile(std::move(exe)));
  ASSIGN_OR_RETURN(c.inputs, testing::ReadTestSetInputs(dir + "/test_data_set_0"));
  return c;
}

std::vector<std::string> Bytes(const std::vector<Tensor>& ts) {
  std::vector<std::string> out;
  for (const Tensor& t : ts) {
    out.push_back(absl::StrCat(t.type().ToString(), ":",
                               std::string(reinterpret_cast<const char*>(t.data()), t.nbytes())));
  }
  return out;
}

// Blocks every pool of the VM has handed out and not had back.
int64_t BlocksInUse(const vm::VirtualMachine& vm) {
  int64_t n = 0;
  for (DeviceKind k : {DeviceKind::kCpu, DeviceKind::kSim}) {
    if (vm.pool(k) != nullptr) n += vm.pool(k)->blocks_in_use();
  }
  return n;
}

// What a failed run's status must say: where (an instruction with its IR binding, or the
// argument staged, or the result read back), which device, what failed.
::testing::AssertionResult NamesTheFault(const absl::Status& s, absl::string_view what) {
  const std::string m(s.message());
  const bool where = absl::StartsWith(m, "@") &&
                     (absl::StrContains(m, " pc ") || absl::StrContains(m, "staging argument") ||
                      absl::StrContains(m, "reading result"));
  if (s.code() == absl::StatusCode::kUnavailable && where &&
      absl::StrContains(m, absl::StrCat("sim: injected fault: ", what))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "status does not name the fault: " << s;
}

// One clean run: the outputs, the ledger's exact agreement.
::testing::AssertionResult RunsCleanly(vm::VirtualMachine& vm, const Compiled& c,
                                       const std::vector<std::string>& want) {
  auto out = vm.RunWithHostTensors("main", c.inputs);
  if (!out.ok()) return ::testing::AssertionFailure() << "the next run failed: " << out.status();
  if (Bytes(*out) != want) return ::testing::AssertionFailure() << "the next run's outputs differ";
  const vm::LedgerComparison cmp =
      vm::CompareLedgerToRun(c.ledger, vm.LastRunCounters(), vm.LastRunRecord());
  if (!cmp.agrees()) return ::testing::AssertionFailure() << "ledger: " << cmp.Summary();
  return ::testing::AssertionSuccess();
}

class FaultSweep : public ::testing::TestWithParam<const char*> {};

// Tests every copy and launch of a warm VM's inference (staging and read-back included) failing
// in turn, then every allocation of a fresh VM's first inference (a warm one allocates nothing).
TEST_P(FaultSweep, EveryAllocationCopyAndLaunchFailsCleanly) {
  auto c = Compile(GetParam());
  ASSERT_TRUE(c.ok()) << c.status();
  auto reference = vm::VirtualMachine::Load(c->program);
  ASSERT_TRUE(reference.ok()) << reference.status();
  auto want_or = (*reference)->RunWithHostTensors("main", c->inputs);
  ASSERT_TRUE(want_or.ok()) << want_or.status();
  const std::vector<std::string> want = Bytes(*want_or);
  const int64_t blocks = BlocksInUse(**reference);

  struct Swept {
    FaultSite site;
    const char* what;
    int64_t faults = 0;
    int64_t absorbed = 0;
  } swept[] = {{FaultSite::kCopy, "copy"}, {FaultSite::kLaunch, "launch"}, {FaultSite::kAlloc, "allocation"}};
  for (Swept& s : swept) {
    std::unique_ptr<vm::VirtualMachine> fresh;
    for (int64_t k = 1;; ++k) {
      ASSERT_LT(k, 10000) << "the fault never stopped firing";
      vm::VirtualMachine* vm = reference->get();
      if (s.site == FaultSite::kAlloc) {  // a fresh VM: its first run allocates
        auto loaded = vm::VirtualMachine::Load(c->program);
        ASSERT_TRUE(loaded.ok()) << loaded.status();
        fresh = *std::move(loaded);
        vm = fresh.get();
      }
      runtime::Device* sim = vm->device(DeviceKind::kSim);
      ASSERT_NE(sim, nullptr);
      ASSERT_TRUE(runtime::InjectSimFault(sim, s.site, k).ok());
      auto out = vm->RunWithHostTensors("main", c->inputs);
      if (out.ok()) {
        EXPECT_EQ(Bytes(*out), want) << s.what << " #" << k;
        // Past the last operation of the kind: the fault never fired.
        if (runtime::SimFaultPending(sim, s.site)) {
          ASSERT_TRUE(runtime::InjectSimFault(sim, s.site, 0).ok());
          break;
        }
        // It fired where the runtime may do without: the pool's run-time plan could not
        // allocate its arena, so the cache serves the runs (pooling_allocator.cc). Only an
        // allocation may be absorbed: a copy or launch that failed while the run succeeded was
        // swallowed, and the test says so.
        ++s.absorbed;
        EXPECT_EQ(s.site, FaultSite::kAlloc) << "a " << s.what << " fault (#" << k
                                             << ") fired and the run still succeeded: swallowed";
        continue;
      }
      ++s.faults;
      EXPECT_TRUE(NamesTheFault(out.status(), absl::StrCat(s.what, " #", k))) << s.what << " #" << k;
      if (k == 1) std::printf("[ fault    ] %s: %s\n", GetParam(), out.status().ToString().c_str());
      EXPECT_FALSE(runtime::SimFaultPending(sim, s.site));
      if (s.site != FaultSite::kAlloc) EXPECT_EQ(BlocksInUse(*vm), blocks) << s.what << " #" << k;
      EXPECT_TRUE(RunsCleanly(*vm, *c, want)) << "after " << s.what << " #" << k;
      EXPECT_EQ(BlocksInUse(*vm), blocks) << "after " << s.what << " #" << k;
    }
    std::printf("[ fault    ] %s: %lld %s faults reported and recovered from, %lld absorbed\n",
                GetParam(), static_cast<long long>(s.faults), s.what,
                static_cast<long long>(s.absorbed));
    // Every kind happens in these models: a sweep that injected nothing tested nothing.
    EXPECT_GT(s.faults, 0) << s.what;
    if (s.site != FaultSite::kAlloc) EXPECT_EQ(s.absorbed, 0) << s.what << " faults swallowed";
  }
}

// Tests that arming a fault anywhere but on a sim device, or with a negative k, is refused.
TEST(FaultInjection, RefusesOtherDevicesAndNegativeCounts) {
  std::unique_ptr<runtime::Device> cpu = runtime::MakeCpuDevice();
  const absl::Status on_cpu = runtime::InjectSimFault(cpu.get(), FaultSite::kCopy, 1);
  EXPECT_EQ(on_cpu.code(), absl::StatusCode::kInvalidArgument) << on_cpu;
  EXPECT_TRUE(absl::StrContains(on_cpu.message(), "sim device feature; got cpu")) << on_cpu;
  EXPECT_FALSE(runtime::SimFaultPending(cpu.get(), FaultSite::kCopy));
  auto sim = runtime::MakeSimDevice();
  ASSERT_TRUE(sim.ok()) << sim.status();
  const absl::Status negative = runtime::InjectSimFault(sim->get(), FaultSite::kLaunch, -1);
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument) << negative;
  EXPECT_TRUE(absl::StrContains(negative.message(), "k must be >= 0, got -1")) << negative;
  EXPECT_FALSE(runtime::SimFaultPending(sim->get(), FaultSite::kLaunch));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, FaultSweep,
                         ::testing::Values("mlp_dynamic_batch", "nonzero_gather"));

// Tests the device memory limit: a limit below what an inference needs is ResourceExhausted
// naming the value, the request and what is available; the same VM with its pools trimmed runs
// a smaller batch within the limit; raised, the big one.
TEST(DeviceMemoryLimit, OverTheLimitIsResourceExhaustedNamingTheValue) {
  auto c = Compile("mlp_dynamic_batch");
  ASSERT_TRUE(c.ok()) << c.status();
  // The unlimited VM's peak for batch 64 and for batch 1.
  const int64_t features = c->inputs[0].shape()[1];
  const std::vector<Tensor> big = {testing::RandomTensor(DType::kF32, {64, features}, 1)};
  const std::vector<Tensor> small = {testing::RandomTensor(DType::kF32, {1, features}, 2)};
  auto unlimited = vm::VirtualMachine::Load(c->program);
  ASSERT_TRUE(unlimited.ok());
  ASSERT_TRUE((*unlimited)->RunWithHostTensors("main", small).ok());
  const int64_t small_peak = (*unlimited)->CountersOf(DeviceKind::kSim).peak_held_bytes;
  auto want_big = (*unlimited)->RunWithHostTensors("main", big);
  ASSERT_TRUE(want_big.ok());
  const int64_t big_peak = (*unlimited)->CountersOf(DeviceKind::kSim).peak_held_bytes;
  ASSERT_LT(small_peak, big_peak);

  vm::VmOptions options;
  options.device_memory_limit = (small_peak + big_peak) / 2;
  auto vm = vm::VirtualMachine::Load(c->program, options);
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto over = (*vm)->RunWithHostTensors("main", big);
  ASSERT_FALSE(over.ok());
  const std::string m(over.status().message());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_TRUE(absl::StartsWith(m, "@main")) << m;  // the instruction and its IR binding
  EXPECT_TRUE(absl::StrContains(m, "sim: device memory limit: requested ")) << m;
  EXPECT_TRUE(absl::StrContains(m, " available (limit ")) << m;
  std::printf("[ limit    ] %s\n", over.status().ToString().c_str());

  (*vm)->TrimMemory();
  const int64_t held_after_trim = (*vm)->CountersOf(DeviceKind::kSim).held_bytes;
  auto ok_small = (*vm)->RunWithHostTensors("main", small);
  EXPECT_TRUE(ok_small.ok()) << ok_small.status();
  EXPECT_LE((*vm)->CountersOf(DeviceKind::kSim).peak_held_bytes, options.device_memory_limit);
  // Trimmed, the pools hold nothing but the constants: less than before the small run grew them.
  (*vm)->TrimMemory();
  EXPECT_EQ((*vm)->CountersOf(DeviceKind::kSim).held_bytes, held_after_trim);

  (*vm)->device(DeviceKind::kSim)->SetMemoryLimit(0);  // no limit: the big batch runs exactly
  auto again = (*vm)->RunWithHostTensors("main", big);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Bytes(*again), Bytes(*want_big));
}

}  // namespace
}  // namespace hetpass
