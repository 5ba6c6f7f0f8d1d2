// Concurrent inference (docs/runtime.md, "Threading"): one compiled Program per model and device,
// shared by 8 threads through a VmPool, each thread running 500 inferences that switch model and
// input sizes on every call. Every run must give bit-identical outputs to the single-threaded run
// of the same inputs, and its own counters (one VM's, taken before the VM goes back to the pool)
// must equal the single-threaded run's copies and agree exactly with the copy ledger. The models
// are PyTorch exports from ../shared: the dynamic-batch MLP (oneDNN dense), nonzero_gather
// (NonZero, TopK with a computed k: data-dependent shapes, a device-to-host copy per run) and
// Mask R-CNN (If/Loop, NMS, RoiAlign, resizes whose sizes come from box values).
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm_pool.h"
#include "support/runtime_test_util.h"
#include "support/shared_models.h"

namespace hetpass {
namespace {

constexpr int kThreads = 8;
#ifdef HETPASS_TSAN_BUILD
// The ThreadSanitizer build (cmake/tsan.cmake) has only the reference kernels, and TSan
// instruments every access: Mask R-CNN is left out and the runs are fewer. What is checked is
// the same: shared Programs, pooled VMs, per-VM counters, under the race detector.
constexpr const char* kModels[] = {"mlp_dynamic_batch", "nonzero_gather"};
constexpr int kRunScale = 10;  // runs per thread divided by
#else
constexpr const char* kModels[] = {"mlp_dynamic_batch", "nonzero_gather", "maskrcnn_tiny"};
constexpr int kRunScale = 1;
#endif

struct RunSetup {
  DeviceKind device;
  // sim's guard pages (device.h): every launch and copy mprotects its VM's arena. mprotect takes
  // the process's memory-map lock, so 8 guarded VMs serialise on it (~20x slower here): the
  // 500-run tests leave the guard off, and a shorter guarded run shows it holds under threads.
  bool guard;
  int runs_per_thread;
  std::string name;
};
void PrintTo(const RunSetup& s, std::ostream* os) { *os << s.name; }

struct Expected {
  std::vector<Tensor> inputs;
  std::vector<std::string> output_bytes;  // per output: shape text and raw bytes
  runtime::DeviceCounters counters;
};

struct Model {
  std::string name;
  CopyLedger ledger;
  std::unique_ptr<vm::VmPool> pool;
  std::vector<Expected> cases;  // one per input set, sizes differing
};

std::string Bytes(const Tensor& t) {
  return absl::StrCat(t.type().ToString(), ":",
                      std::string(reinterpret_cast<const char*>(t.data()), t.nbytes()));
}

// The model imported and compiled once for `device`; its input sets: the two test sets, plus for
// the MLP random batches of other sizes.
absl::StatusOr<Model> Prepare(const std::string& name, DeviceKind device, bool guard) {
  const std::string dir = testing::SharedModelDir(name);
  if (!std::filesystem::exists(dir + "/model.onnx")) {
    return absl::NotFoundError(absl::StrCat("missing shared model ", dir));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ImportOnnxFile(dir + "/model.onnx"));
  ASSIGN_OR_RETURN(auto pm, ParsePipeline(vm::DefaultPipeline(device), PassManagerOptions()));
  RETURN_IF_ERROR(pm->Run(*m).status());
  Model model;
  model.name = absl::StrCat(name, " on ", DeviceName(device));
  ASSIGN_OR_RETURN(model.ledger, ComputeCopyLedger(*m));
  ASSIGN_OR_RETURN(vm::Executable exe, vm::CompileModule(*m));
  ASSIGN_OR_RETURN(std::shared_ptr<const vm::Program> program, vm::Program::Compile(std::move(exe)));
  vm::VmOptions options;
  options.sim.guard = guard;
  model.pool = std::make_unique<vm::VmPool>(program, options);
  for (int set = 0; set < 2; ++set) {
    Expected e;
    ASSIGN_OR_RETURN(e.inputs, testing::ReadTestSetInputs(absl::StrCat(dir, "/test_data_set_", set)));
    model.cases.push_back(std::move(e));
  }
  if (name == "mlp_dynamic_batch") {
    const Tensor& x = model.cases[0].inputs[0];
    for (int64_t batch : {1, 3, 7, 16}) {
      Expected e;
      e.inputs.push_back(testing::RandomTensor(x.dtype(), {batch, x.shape()[1]},
                                               static_cast<uint32_t>(batch)));
      model.cases.push_back(std::move(e));
    }
  }
  // The single-threaded truth, on a VM of its own (not one of the pool's), in the steady state:
  // a convolution shape's first run on a VM is direct and its later runs Winograd, whose
  // rounding differs in the last bits (docs/runtime.md), so each case runs twice and the
  // second run is the truth.
  ASSIGN_OR_RETURN(auto reference, vm::VirtualMachine::Load(program, options));
  for (int pass = 0; pass < 2; ++pass) {
    for (Expected& e : model.cases) {
      ASSIGN_OR_RETURN(std::vector<Tensor> out, reference->RunWithHostTensors("main", e.inputs));
      e.output_bytes.clear();
      for (const Tensor& t : out) e.output_bytes.push_back(Bytes(t));
      e.counters = reference->LastRunCounters();
    }
  }
  // The pool's VMs warmed the same way: kThreads leased at once (so kThreads VMs exist), each
  // running every case twice. No thread below ever needs a ninth VM.
  std::vector<vm::VmPool::Lease> leases;
  for (int t = 0; t < kThreads; ++t) {
    ASSIGN_OR_RETURN(vm::VmPool::Lease vm, model.pool->Acquire());
    for (int pass = 0; pass < 2; ++pass) {
      for (const Expected& e : model.cases) {
        RETURN_IF_ERROR(vm->RunWithHostTensors("main", e.inputs).status());
      }
    }
    leases.push_back(std::move(vm));
  }
  return model;
}

// What differs between a concurrent run and its single-threaded truth; empty when nothing.
std::string Check(const Model& model, const Expected& want, const vm::VmPool::RunResult& got) {
  if (got.values.size() != want.output_bytes.size()) return "wrong number of outputs";
  for (size_t i = 0; i < got.values.size(); ++i) {
    if (got.values[i].kind != vm::HostValue::Kind::kTensor ||
        Bytes(got.values[i].tensor) != want.output_bytes[i]) {
      return absl::StrCat("output ", i, " differs from the single-threaded run");
    }
  }
  const runtime::DeviceCounters& a = got.counters;
  const runtime::DeviceCounters& b = want.counters;
  if (a.h2d_calls != b.h2d_calls || a.h2d_bytes != b.h2d_bytes || a.d2h_calls != b.d2h_calls ||
      a.d2h_bytes != b.d2h_bytes || a.d2d_calls != b.d2d_calls || a.d2d_bytes != b.d2d_bytes ||
      a.param_calls != b.param_calls || a.param_bytes != b.param_bytes || a.syncs != b.syncs ||
      a.launches != b.launches) {
    return absl::StrCat("counters ", a.ToString(), ", single-threaded ", b.ToString());
  }
  const vm::LedgerComparison cmp =
      vm::CompareLedgerToRun(model.ledger, got.counters, got.record);
  if (!cmp.agrees()) return absl::StrCat("ledger: ", cmp.Summary());
  return "";
}

class ConcurrentInference : public ::testing::TestWithParam<RunSetup> {};

// Tests that 8 threads x 500 inferences (40 with sim's guard pages) over three shared models, sizes changing per call, give
// the single-threaded outputs bit for bit and exact per-VM counters.
TEST_P(ConcurrentInference, EightThreadsMatchTheSingleThreadedRunExactly) {
  const RunSetup& setup = GetParam();
  std::vector<Model> models;
  for (const char* name : kModels) {
    auto m = Prepare(name, setup.device, setup.guard);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    models.push_back(*std::move(m));
  }
  const int runs_per_thread = setup.runs_per_thread / kRunScale;
  std::atomic<int64_t> runs{0};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint32_t state = 2654435761u * static_cast<uint32_t>(t + 1);
      for (int i = 0; i < runs_per_thread; ++i) {
        state = state * 1664525u + 1013904223u;  // a per-thread sequence of (model, case)
        // Mask R-CNN costs ~30x the others: one call in 16 keeps the test to seconds.
        const size_t mi = (state >> 8) % 16 == 0 ? models.size() - 1 : (state >> 12) % 2;
        const Model& model = models[mi];
        const Expected& want = model.cases[(state >> 16) % model.cases.size()];
        auto got = model.pool->RunWithHostValues("main", [&] {
          std::vector<vm::HostValue> in;
          for (const Tensor& x : want.inputs) in.push_back(vm::HostValue::FromTensor(x));
          return in;
        }());
        std::string why = got.ok() ? Check(model, want, *got) : got.status().ToString();
        if (!why.empty()) {
          failures[t] = absl::StrCat(model.name, ", thread ", t, " run ", i, ": ", why);
          return;
        }
        runs.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(runs.load(), int64_t{kThreads} * runs_per_thread);
  for (const Model& m : models) {
    // One VM per thread, all made while warming: a lease is returned after every run.
    EXPECT_EQ(m.pool->vms_created(), kThreads) << m.name;
    EXPECT_EQ(m.pool->vms_idle(), m.pool->vms_created()) << m.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ConcurrentInference,
                         ::testing::Values(RunSetup{DeviceKind::kCpu, true, 500, "cpu"},
                                           RunSetup{DeviceKind::kSim, false, 500, "sim"},
                                           RunSetup{DeviceKind::kSim, true, 40, "sim_guarded"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace hetpass
