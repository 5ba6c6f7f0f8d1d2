// Soak: one VM runs a model many times on sim, alternating between its test sets (different
// input sizes, so the shapes and the data-dependent sizes change on every call), as a server
// would for days (issue 18). After the warm-up (each set run twice), every run must:
//   - make zero raw device allocations (the pools' run-time plans serve it), on every device;
//   - make exactly the copies, syncs and launches of its set's warm-up run (no drift);
//   - give its set's warm-up outputs bit for bit (FNV-1a over every output's bytes).
// Resident memory (VmRSS) is sampled after the warm-up and then at every tenth of the runs; it
// must stay flat: the last sample at most --rss-slack-mb above the first. Exit 1 on any
// violation, naming the run.
//
//   hetpass_soak MODEL_DIR [--runs N] [--guard]        (default 100000 runs, guard off)
//
// Guard pages are off by default: a server would not pay mprotect per launch; --guard checks
// that the guarded arena holds up too (slower).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"

namespace hetpass {
namespace {

int64_t RssKb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

uint64_t Fnv1a(const std::vector<Tensor>& ts) {
  uint64_t h = 1469598103934665603ull;
  for (const Tensor& t : ts) {
    const auto* p = static_cast<const unsigned char*>(t.data());
    for (size_t i = 0; i < t.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
    for (int64_t d : t.shape()) h = (h ^ static_cast<uint64_t>(d)) * 1099511628211ull;
  }
  return h;
}

struct SetTruth {
  std::vector<Tensor> inputs;
  uint64_t digest = 0;
  runtime::DeviceCounters counters;
};

bool SameWork(const runtime::DeviceCounters& a, const runtime::DeviceCounters& b) {
  return a.h2d_calls == b.h2d_calls && a.h2d_bytes == b.h2d_bytes && a.d2h_calls == b.d2h_calls &&
         a.d2h_bytes == b.d2h_bytes && a.d2d_calls == b.d2d_calls && a.d2d_bytes == b.d2d_bytes &&
         a.param_calls == b.param_calls && a.param_bytes == b.param_bytes && a.syncs == b.syncs &&
         a.launches == b.launches;
}

absl::Status Soak(const std::string& dir, int64_t runs, bool guard, int64_t rss_slack_mb) {
  ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ImportOnnxFile(dir + "/model.onnx"));
  ASSIGN_OR_RETURN(auto pm, ParsePipeline(vm::DefaultPipeline(DeviceKind::kSim), PassManagerOptions()));
  RETURN_IF_ERROR(pm->Run(*m).status());
  ASSIGN_OR_RETURN(vm::Executable exe, vm::CompileModule(*m));
  vm::VmOptions options;
  options.sim.guard = guard;
  ASSIGN_OR_RETURN(auto machine, vm::VirtualMachine::Load(std::move(exe), options));
  std::vector<SetTruth> sets;
  for (int k = 0; std::filesystem::exists(absl::StrCat(dir, "/test_data_set_", k)); ++k) {
    SetTruth s;
    for (int i = 0;; ++i) {
      const std::string path = absl::StrCat(dir, "/test_data_set_", k, "/input_", i, ".pb");
      if (!std::filesystem::exists(path)) break;
      ASSIGN_OR_RETURN(Tensor t, ReadOnnxTensorFile(path));
      s.inputs.push_back(std::move(t));
    }
    sets.push_back(std::move(s));
  }
  if (sets.size() < 2) return absl::NotFoundError(absl::StrCat(dir, ": needs two test sets"));
  // Warm-up: every set twice; the second run of each is its truth.
  for (int pass = 0; pass < 2; ++pass) {
    for (SetTruth& s : sets) {
      ASSIGN_OR_RETURN(std::vector<Tensor> out, machine->RunWithHostTensors("main", s.inputs));
      s.digest = Fnv1a(out);
      s.counters = machine->LastRunCounters();
    }
  }
  const int64_t rss_first = RssKb();
  std::vector<int64_t> samples = {rss_first};
  const auto t0 = std::chrono::steady_clock::now();
  int64_t allocs = 0;
  for (int64_t r = 0; r < runs; ++r) {
    const SetTruth& s = sets[r % sets.size()];
    ASSIGN_OR_RETURN(std::vector<Tensor> out, machine->RunWithHostTensors("main", s.inputs));
    const runtime::DeviceCounters& c = machine->LastRunCounters();
    allocs += c.allocs;
    if (c.allocs != 0) {
      return absl::InternalError(absl::StrCat("run ", r, ": ", c.allocs, " device allocations in the steady state"));
    }
    if (!SameWork(c, s.counters)) {
      return absl::InternalError(absl::StrCat("run ", r, ": counters drifted: ", c.ToString(),
                                              ", warm-up: ", s.counters.ToString()));
    }
    if (Fnv1a(out) != s.digest) {
      return absl::InternalError(absl::StrCat("run ", r, ": outputs differ from the warm-up's"));
    }
    if ((r + 1) % std::max<int64_t>(1, runs / 10) == 0) samples.push_back(RssKb());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t rss_last = RssKb();
  std::printf("soak: %s on sim (guard %s): %lld runs alternating %zu input sets in %.1f s (%.0f us/run)\n",
              dir.c_str(), guard ? "on" : "off", static_cast<long long>(runs), sets.size(), seconds,
              1e6 * seconds / static_cast<double>(std::max<int64_t>(1, runs)));
  std::printf("  steady-state device allocations: %lld; counters and outputs: identical to the warm-up, every run\n",
              static_cast<long long>(allocs));
  std::printf("  resident memory after warm-up %.1f MB, at the end %.1f MB; samples (MB):",
              rss_first / 1024.0, rss_last / 1024.0);
  for (int64_t s : samples) std::printf(" %.1f", s / 1024.0);
  std::printf("\n");
  if (rss_last - rss_first > rss_slack_mb * 1024) {
    return absl::InternalError(absl::StrCat("resident memory grew by ", (rss_last - rss_first) / 1024,
                                            " MB (allowed ", rss_slack_mb, " MB)"));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace hetpass

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hetpass_soak MODEL_DIR [--runs N] [--guard] [--rss-slack-mb M]\n");
    return 2;
  }
  int64_t runs = 100000, slack = 8;
  bool guard = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--guard") == 0) {
      guard = true;
    } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc && absl::SimpleAtoi(argv[i + 1], &runs)) {
      ++i;
    } else if (std::strcmp(argv[i], "--rss-slack-mb") == 0 && i + 1 < argc &&
               absl::SimpleAtoi(argv[i + 1], &slack)) {
      ++i;
    } else {
      std::fprintf(stderr, "hetpass_soak: unknown or incomplete argument %s\n", argv[i]);
      return 2;
    }
  }
  absl::Status s = hetpass::Soak(argv[1], runs, guard, slack);
  if (!s.ok()) {
    std::fprintf(stderr, "hetpass_soak: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
