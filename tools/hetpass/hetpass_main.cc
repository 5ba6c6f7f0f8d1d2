// `hetpass`: the user-facing driver.
//
//   hetpass run FILE.hir|FILE.hvm [--device=cpu|sim|cuda] [--input NAME=SPEC]... [--repeat N]
//               [--profile] [--flush-cache] [--json] [--output-dir DIR]
//     Compiles a module (the default pipeline for the device, or --passes), runs it on the
//     VM and prints each output's shape and checksums, the run-time counters next to the copy
//     ledger, and timings. SPEC is a shape (`16x1024`: uniform random data, seeded), a literal
//     1-D list (`[0,2,5]`) or a .npy/.pb file. A parameter without an --input is an error
//     unless --random-inputs gives the static ones seeded random data; every randomised input
//     is listed in the output.
//     --flush-cache evicts the caches (64 MiB written and read) before every repetition, so
//     cold and warm figures can be compared; --json prints one stable JSON object.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "common/command_line.h"
#include "common/huge_page_heap.h"
#include "common/small_object_heap.h"
#include "passes/analysis/baseline_masks.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/pass/verify_module.h"
#include "passes/support/json.h"
#include "passes/pass/pass_registry.h"
#include "passes/runtime/npy.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/file.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"

ABSL_FLAG(std::string, device, "sim", "device to run on: cpu, sim or cuda (cuda needs a GPU)");
ABSL_FLAG(std::string, passes, "", "pass pipeline (default: the standard one for --device)");
ABSL_FLAG(std::string, function, "main", "function to run");
ABSL_FLAG(int, repeat, 1, "number of runs (the first is reported as cold)");
ABSL_FLAG(bool, background_jit, true,
          "run: generate JIT kernels on a background thread; groups run on reference kernels "
          "until theirs is ready (the first run may), every run after the first uses the JIT "
          "code (docs/runtime.md, tiered compilation)");
ABSL_FLAG(int, compile_repeat, 1,
          "run: compile this many times in this process (the JSON's compile_repeats_ms; the "
          "first pays the process's one-time initialisation) and run the last");
ABSL_FLAG(bool, cupti, false,
          "run: count the last run's CUDA memcpys with CUPTI (the driver's view, next to the "
          "device counters; GPU only)");
ABSL_FLAG(bool, profile, false, "print a per-instruction time table");
ABSL_FLAG(bool, device_graphs, true,
          "capture each stretch of accelerator launches between host waits as a device graph "
          "(CUDA graphs on cuda) once per shape key and replay it (docs/runtime.md, \"Device "
          "graphs\"); false: every kernel is launched one by one");
ABSL_FLAG(bool, flush_cache, false, "evict CPU caches before every repetition");
ABSL_FLAG(bool, json, false, "print one JSON object instead of text");
ABSL_FLAG(std::string, output_dir, "", "write every output as DIR/output_<i>.npy");
ABSL_FLAG(uint32_t, seed, 0, "seed of random inputs");
ABSL_FLAG(bool, random_inputs, false,
          "run: give parameters without an --input seeded random data (static shapes only; "
          "each is listed in the output). Without it a missing input is an error");
ABSL_FLAG(bool, random_weights, false,
          "give elided (all-zero) floating-point constants random values");
ABSL_FLAG(bool, listing, false, "print the VM bytecode listing");
ABSL_FLAG(std::string, save_executable, "", "write the compiled executable to this file");
ABSL_FLAG(bool, no_guard, false, "sim: leave the device arena readable by the host (faster)");
ABSL_FLAG(std::string, device_memory_limit, "",
          "run, test-onnx: cap on the memory each accelerator device (sim, cuda) holds, in bytes "
          "or with a K, M or G suffix (powers of 1024); over it a run fails with "
          "RESOURCE_EXHAUSTED naming the value (docs/runtime.md)");
ABSL_FLAG(std::string, o, "-", "import: output file ('-' for stdout)");
ABSL_FLAG(std::string, baseline_masks, "",
          "for comparisons: single-flag or relay. Compiles with another system's dependence "
          "masks swapped in before manifest-alloc (placement and fusion stay ours), so the "
          "copies and the ledger are that baseline's");
ABSL_FLAG(bool, no_verify, false,
          "skip the IR verifier (by default it checks the module after loading and after "
          "the pipeline)");
ABSL_FLAG(bool, verify_each, false,
          "verify the module after every pass that changed it, so that a failure names the "
          "pass (for pass development: it costs a tenth to a fifth of the pipeline's time)");
ABSL_FLAG(std::string, copy_ledger, "",
          "run, test-onnx: print the copy ledger before running, as text or json (bare "
          "--copy-ledger: text), as in hetpass-opt");
ABSL_FLAG(double, rtol, 1e-3, "test-onnx: relative tolerance");
ABSL_FLAG(double, atol, 1e-4, "test-onnx: absolute tolerance");

namespace hetpass {
namespace {

constexpr char kUsage[] =
    "hetpass run FILE.hir|FILE.onnx|FILE.hvm [--device=cpu|sim|cuda]\n"
    "            [--input NAME|#POS=SHAPE|[v,...]|FILE.npy|FILE.pb]... [--repeat N] [--profile]\n"
    "            [--random-inputs] [--flush-cache] [--json] [--output-dir DIR]\n"
    "    compiles and runs a module on the VM; prints outputs (shape, checksums), the run-time\n"
    "    copy/sync/allocation counters next to the copy ledger, and timings\n"
    "hetpass import MODEL.onnx [-o FILE.hir]\n"
    "    writes the imported module as text IR\n"
    "hetpass test-onnx DIR [--device=cpu|sim|cuda] [--json] [--rtol R] [--atol A]\n"
    "    runs DIR/model.onnx (compiled once) on every DIR/test_data_set_N and compares each\n"
    "    output with output_*.pb (count, dtype, shape, values); prints pass/fail per set with\n"
    "    the ledger next to the counters; a set whose copies differ from the ledger fails\n"
    "common: [--passes=P] [--baseline-masks=single-flag|relay] [--copy-ledger] [--no-verify]\n"
    "    [--verify-each]\n"
    "exit status: 0 ok, 1 error or failed set, 2 usage, 3 unsupported by the importer,\n"
    "    4 a later stage failed (the message names it)";

struct Checksum {
  double sum = 0;
  double abs_sum = 0;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of the bytes
};

Checksum Check(const Tensor& t) {
  Checksum c;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = t.GetDouble(i);
    c.sum += v;
    c.abs_sum += std::abs(v);
  }
  for (size_t i = 0; i < t.nbytes(); ++i) {
    c.hash ^= t.data()[i];
    c.hash *= 1099511628211ull;
  }
  return c;
}

void FlushCaches() {
  static std::vector<uint8_t> buffer(64 << 20);
  static volatile uint64_t sink = 0;
  uint64_t s = 0;
  for (size_t i = 0; i < buffer.size(); i += 64) {
    buffer[i] = static_cast<uint8_t>(buffer[i] + 1);
    s += buffer[i];
  }
  sink = sink + s;
}

Tensor RandomInput(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  const bool is_float = IsFloat(dtype);
  for (double& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    x = is_float ? 2 * u - 1 : std::floor(u * 10);
  }
  return Tensor::FromDoubles(dtype, std::move(shape), v);
}

// A SHAPE spec (`16x1024`, `scalar`) asks for random data; lists and files do not.
bool IsRandomSpec(absl::string_view spec) {
  return !absl::EndsWith(spec, ".npy") && !absl::EndsWith(spec, ".pb") && !absl::StartsWith(spec, "[");
}

absl::StatusOr<Tensor> ParseInput(absl::string_view spec, const vm::ArgSpec& param, uint32_t seed) {
  if (absl::EndsWith(spec, ".npy")) {
    ASSIGN_OR_RETURN(Tensor t, runtime::ReadNpy(std::string(spec)));
    return t;
  }
  if (absl::EndsWith(spec, ".pb")) return ReadOnnxTensorFile(std::string(spec));
  if (absl::StartsWith(spec, "[")) {
    std::vector<double> values;
    absl::string_view inner = absl::StripSuffix(absl::StripPrefix(spec, "["), "]");
    for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
      double v;
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(part), &v)) {
        return absl::InvalidArgumentError(absl::StrCat("input %", param.name, ": bad value '", part, "'"));
      }
      // An integer or boolean parameter takes integers only: 0.5 is refused, not truncated.
      if (!IsFloat(param.dtype) && v != std::trunc(v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input %", param.name, ": '", absl::StripAsciiWhitespace(part), "' is not an integer, and %",
            param.name, " is ", param.type_text));
      }
      values.push_back(v);
    }
    return Tensor::FromDoubles(param.dtype, {static_cast<int64_t>(values.size())}, values);
  }
  std::vector<int64_t> shape;
  if (spec != "scalar") {
    for (absl::string_view part : absl::StrSplit(spec, 'x')) {
      int64_t d;
      if (!absl::SimpleAtoi(part, &d) || d < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input %", param.name, ": '", spec,
            "' is neither a shape (16x1024), a list ([1,2]) nor a .npy file"));
      }
      shape.push_back(d);
    }
  }
  return RandomInput(param.dtype, std::move(shape), seed);
}

// Every counter by its field name (runtime::kDeviceCounterFields), plus "device_allocs", the
// name reports and fixtures have used for `allocs` since before the table.
std::string CountersJson(const runtime::DeviceCounters& c) {
  std::string out = "{";
  for (const runtime::DeviceCounterField& f : runtime::kDeviceCounterFields) {
    absl::StrAppendFormat(&out, "\"%s\": %d, ", f.name, c.*f.member);
  }
  absl::StrAppendFormat(&out, "\"device_allocs\": %d}", c.allocs);
  return out;
}


// Device graphs (VmOptions::device_graphs) in text: the last run's launches; with `per_stretch`
// (--profile) one line per stretch with what its runs became (the runs the profile covers).
std::string GraphsText(const vm::VirtualMachine& machine, const runtime::DeviceCounters& last,
                       bool per_stretch) {
  const std::vector<vm::GraphStretch> stats = machine.GraphStats();
  if (stats.empty()) return "";
  // Launches one by one on the accelerators only (host kernels are launches of the cpu device).
  // The cpu's counters are the last run's; the accelerators' include the read-back of results,
  // which launches nothing.
  const int64_t host_launches = machine.device(DeviceKind::kCpu) != nullptr
                                    ? machine.CountersOf(DeviceKind::kCpu).launches
                                    : 0;
  std::string out = absl::StrFormat(
      "device graphs (%s): %d stretches; last run: %d graph launches running %d kernels, %d "
      "accelerator launches one by one, %d graphs captured; %d graphs cached\n",
      absl::GetFlag(FLAGS_device_graphs) ? "on" : "off: --device_graphs=false", stats.size(),
      last.graph_launches, last.graph_kernels, last.launches - last.graph_kernels - host_launches,
      last.graph_captures, machine.GraphsCached());
  if (!per_stretch) return out;
  for (const vm::GraphStretch& g : stats) {
    absl::StrAppendFormat(&out, "  @%s pcs %d..%d %s: %d launches; runs: eager %d, captured %d, replayed %d, fell back %d; %.1f us%s%s\n",
                          g.function, g.begin, g.end - 1, DeviceName(g.device), g.launches, g.eager,
                          g.captures, g.replays, g.fallbacks, g.graph_us, g.note.empty() ? "" : "; ",
                          g.note);
  }
  return out;
}

std::string GraphsJson(const vm::VirtualMachine& machine) {
  std::string out = absl::StrCat("{\"cached\": ", machine.GraphsCached(), ", \"stretches\": [");
  bool first = true;
  for (const vm::GraphStretch& g : machine.GraphStats()) {
    absl::StrAppend(&out, first ? "" : ", ", "{\"function\": ", JsonString(g.function), ", \"begin\": ", g.begin,
                    ", \"end\": ", g.end, ", \"device\": ", JsonString(DeviceName(g.device)),
                    ", \"launches\": ", g.launches, ", \"eager\": ", g.eager, ", \"captures\": ", g.captures,
                    ", \"replays\": ", g.replays, ", \"fallbacks\": ", g.fallbacks,
                    ", \"graph_us\": ", absl::StrFormat("%.3f", g.graph_us), ", \"note\": ", JsonString(g.note), "}");
    first = false;
  }
  return out + "]}";
}

// Per device: peak device bytes held and the liveness lower bound (docs/memory_planning.md).
std::string MemoryJson(const std::vector<vm::MemoryStats>& memory) {
  std::string out = "[";
  for (size_t i = 0; i < memory.size(); ++i) {
    const vm::MemoryStats& m = memory[i];
    absl::StrAppend(&out, i ? ", " : "", "{\"device\": ", JsonString(DeviceName(m.device)),
                    ", \"peak_bytes\": ", m.peak_bytes, ", \"liveness_lower_bound_bytes\": ",
                    m.liveness_lower_bound_bytes, ", \"constant_bytes\": ", m.constant_bytes, "}");
  }
  return out + "]";
}

// "  sim  peak 1234 B, liveness lower bound 1100 B (1.12x), constants 512 B" per device.
std::string MemoryText(const std::vector<vm::MemoryStats>& memory) {
  std::string out;
  for (const vm::MemoryStats& m : memory) {
    std::string ratio;
    if (m.liveness_lower_bound_bytes > 0) {
      ratio = absl::StrFormat(" (%.3fx)", static_cast<double>(m.peak_bytes) /
                                              static_cast<double>(m.liveness_lower_bound_bytes));
    }
    absl::StrAppendFormat(&out, "  %-5s peak %d B, liveness lower bound %d B%s, constants %d B\n",
                          DeviceName(m.device), m.peak_bytes, m.liveness_lower_bound_bytes, ratio,
                          m.constant_bytes);
  }
  return out;
}


// "symbols: n=16; regions: $loop0=12" (sorted), or "no symbols".
std::string BindingsText(const DimExpr::Bindings& bindings) {
  std::vector<std::string> symbols, regions;
  for (const auto& [k, v] : bindings) {
    (absl::StartsWith(k, "$") ? regions : symbols).push_back(absl::StrCat(k, "=", v));
  }
  std::sort(symbols.begin(), symbols.end());
  std::sort(regions.begin(), regions.end());
  std::string out = symbols.empty() ? "no symbols" : absl::StrCat("symbols: ", absl::StrJoin(symbols, ", "));
  if (!regions.empty()) absl::StrAppend(&out, "; region executions: ", absl::StrJoin(regions, ", "));
  return out;
}

std::string BindingsJson(const DimExpr::Bindings& bindings) {
  std::vector<std::string> items;
  for (const auto& [k, v] : bindings) items.push_back(absl::StrCat(JsonString(k), ": ", v));
  std::sort(items.begin(), items.end());
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

// Errors carry the stage that raised them (a status payload): only the importer's (or the
// parser's) Unimplemented means "this input uses something not supported yet" (exit status 3);
// Unimplemented from a pass, the VM compiler or a kernel is a failure like any other (exit 4
// names the stage), so a test runner cannot file a regression as unsupported.
constexpr char kStageUrl[] = "hetpass.dev/stage";

// A JSON number, or null where the value is not finite (JSON has no inf or nan): a model whose
// output overflows still gives a parseable report.
std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }

// Peak resident memory since the last ResetPeakRss (VmHWM of /proc/self/status), in KiB; -1
// where it cannot be read.
int64_t PeakRssKb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    int64_t kb = 0;
    if (absl::StartsWith(line, "VmHWM:") &&
        absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line.substr(6)), " kB"), &kb)) {
      return kb;
    }
  }
  return -1;
}
// Starts a new peak at the current resident size (Linux >= 4.0: "5" to clear_refs).
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Wall time and peak resident memory per compile stage, in the order the stages ended: each
// Stage() call closes the stage that began at the previous mark (`--json` reports them as
// compile_stages_ms and compile_stages_peak_rss_mb, so a user sees where compile time and memory
// go without a profiler; bench/scale/scale.sh reads them). A stage's peak is the process's
// highest resident size while it ran, everything held before it included.
// Only between Start() and Stop(): the stages of a run are not timed here.
struct StageTime {
  std::string name;
  double ms = 0;
  int64_t peak_rss_kb = -1;
};
struct StageClock {
  bool running = false;
  std::chrono::steady_clock::time_point mark;
  std::vector<StageTime> stages;
  void Start() {
    running = true;
    mark = std::chrono::steady_clock::now();
    stages.clear();
    ResetPeakRss();
  }
  std::vector<StageTime> Stop() {
    running = false;
    return std::move(stages);
  }
  void End(absl::string_view stage) {
    if (!running) return;
    const auto now = std::chrono::steady_clock::now();
    const double t = std::chrono::duration<double, std::milli>(now - mark).count();
    const int64_t peak = PeakRssKb();
    ResetPeakRss();
    mark = now;
    for (StageTime& s : stages) {
      if (s.name == stage) {
        s.ms += t;
        s.peak_rss_kb = std::max(s.peak_rss_kb, peak);
        return;
      }
    }
    stages.push_back({std::string(stage), t, peak});
  }
};
StageClock& Clock() {
  static StageClock clock;
  return clock;
}

absl::Status Stage(absl::string_view stage, absl::Status s) {
  Clock().End(stage);
  if (!s.ok() && !s.GetPayload(kStageUrl)) s.SetPayload(kStageUrl, absl::Cord(stage));
  return s;
}
template <typename T>
absl::StatusOr<T> Stage(absl::string_view stage, absl::StatusOr<T> s) {
  if (!s.ok()) return Stage(stage, s.status());
  Clock().End(stage);
  return s;
}

PassManagerOptions PipelineOptions() {
  PassManagerOptions o;
  // Once after the pipeline by default (Compile): the check the VM compiler relies on, without
  // a walk of the whole module per pass. After each pass with --verify-each, as hetpass-opt and
  // the tests do, where a failure must name its pass. An unchanged module was verified after
  // the pass before.
  o.verify_each = absl::GetFlag(FLAGS_verify_each) && !absl::GetFlag(FLAGS_no_verify);
  o.verify_unchanged = false;
  // Each pass's own postconditions right after it; the structural verifier once after the
  // pipeline (Compile).
  o.check_postconditions = !absl::GetFlag(FLAGS_no_verify);
  return o;
}

// The pipeline to run: --passes or the default for the device, with --baseline-masks applied.
// --device-memory-limit: "" is none (0); bytes, or a number with K, M or G (powers of 1024).
absl::StatusOr<int64_t> DeviceMemoryLimitFlag() {
  const std::string text = absl::GetFlag(FLAGS_device_memory_limit);
  if (text.empty()) return 0;
  absl::string_view digits = text;
  int64_t scale = 1;
  switch (text.back()) {
    case 'K': case 'k': scale = int64_t{1} << 10; break;
    case 'M': case 'm': scale = int64_t{1} << 20; break;
    case 'G': case 'g': scale = int64_t{1} << 30; break;
    default: break;
  }
  if (scale != 1) digits.remove_suffix(1);
  int64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n) || n <= 0 || n > INT64_MAX / scale) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device-memory-limit=", text, ": expected a positive byte count, optionally with a K, "
        "M or G suffix (e.g. 512M)"));
  }
  return n * scale;
}

absl::StatusOr<std::string> PipelineFlag(DeviceKind device) {
  std::string pipeline = absl::GetFlag(FLAGS_passes).empty() ? vm::DefaultPipeline(device)
                                                             : absl::GetFlag(FLAGS_passes);
  const std::string b = absl::GetFlag(FLAGS_baseline_masks);
  if (b.empty()) return pipeline;
  const std::optional<BaselineMasks> baseline = ParseBaselineMasks(b);
  if (!baseline) {
    return absl::InvalidArgumentError(
        absl::StrCat("--baseline-masks must be single-flag or relay, got '", b, "'"));
  }
  return PipelineWithBaseline(pipeline, *baseline);
}

// Text IR (.hir, elided constants allowed) or an ONNX model (.onnx), verified unless
// --no-verify.
absl::StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& path) {
  std::unique_ptr<Module> module;
  if (absl::EndsWith(path, ".onnx")) {
    ASSIGN_OR_RETURN(module, Stage("import", ImportOnnxFile(path, OnnxImportOptions())));
  } else {
    ReadFileOptions read;
    read.what = "text IR (.hir) or an ONNX model (.onnx)";
    ASSIGN_OR_RETURN(const std::string text, Stage("import", ReadRegularFile(path, read)));
    ParseOptions po;
    po.source_name = path;
    po.allow_elided_constants = true;
    int64_t elided = 0;
    po.elided_constants = &elided;
    ASSIGN_OR_RETURN(module, Stage("import", ParseModule(text, po)));
    // Elided constants are zeros: say so, or the user reads all-zero results as an answer.
    if (elided > 0 && !absl::GetFlag(FLAGS_random_weights)) {
      std::cerr << "warning: " << path << " has " << elided << " elided constant"
                << (elided == 1 ? "" : "s")
                << " (constant<elided>): all zeros here, so the outputs say nothing of the "
                   "model; give --random-weights for seeded random values\n";
    }
  }
  if (!absl::GetFlag(FLAGS_no_verify)) {
    RETURN_IF_ERROR(Stage("verify", VerifyModule(*module)));
  }
  return module;
}

// Runs `pipeline` on `module` (verified after it, or after each pass with --verify-each, unless
// --no-verify), then computes
// the ledger of `function` and compiles the module.
absl::Status Compile(Module& module, const std::string& pipeline, absl::string_view function,
                     CopyLedger& ledger, vm::Executable& exe,
                     std::vector<PassTiming>* pass_times = nullptr) {
  PassManagerOptions options = PipelineOptions();
  options.timing = pass_times != nullptr;
  ASSIGN_OR_RETURN(auto pm, Stage("pipeline", ParsePipeline(pipeline, options)));
  RETURN_IF_ERROR(Stage("passes", pm->Run(module).status()));
  if (pass_times != nullptr) *pass_times = pm->timings();
  if (!pm->options().verify_each && !absl::GetFlag(FLAGS_no_verify)) {
    // The structural check; each pass's own postconditions were checked right after it
    // (PassManagerOptions::check_postconditions).
    absl::Status v = VerifyModule(module);
    if (!v.ok()) {
      v = absl::InternalError(absl::StrCat(
          "verifier failed after the pipeline (a bug in one of its passes; --verify-each names "
          "it): ", v.message()));
    }
    RETURN_IF_ERROR(Stage("verify", std::move(v)));
  }
  ASSIGN_OR_RETURN(ledger, Stage("ledger", ComputeCopyLedger(module, function)));
  ASSIGN_OR_RETURN(exe, Stage("vm-compile", vm::CompileModule(module)));
  const std::string ledger_format = absl::GetFlag(FLAGS_copy_ledger);
  if (ledger_format == "text") {
    std::cout << ledger.ToText();
  } else if (ledger_format == "json") {
    std::cout << ledger.ToJson();
  } else if (!ledger_format.empty()) {
    return Stage("ledger", absl::InvalidArgumentError(absl::StrCat(
        "--copy-ledger must be text or json, got '", ledger_format, "'")));
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceKind> DeviceFlag() {
  const auto device = ParseDevice(absl::GetFlag(FLAGS_device));
  if (!device || *device == DeviceKind::kUnset) {
    return absl::InvalidArgumentError(absl::StrCat("--device must be cpu, sim or cuda, got '",
                                                   absl::GetFlag(FLAGS_device), "'"));
  }
  // A device this machine cannot run is refused up front with its reason (no GPU, a build
  // without CUDA), never by quietly running everything on the host.
  if (*device == DeviceKind::kCuda) {
    absl::StatusOr<std::unique_ptr<runtime::Device>> probe = runtime::MakeDevice(*device);
    if (!probe.ok()) {
      return absl::Status(probe.status().code(),
                          absl::StrCat("--device=cuda: ", probe.status().message()));
    }
  }
  return *device;
}

// What `run` compiles: the executable loaded into a VM, with the ledger when the input was a
// model (not an .hvm), and the wall time of each stage.
struct Compiled {
  std::unique_ptr<vm::VirtualMachine> machine;
  CopyLedger ledger;
  bool have_ledger = false;
  std::string pipeline;  // empty for an .hvm
  int64_t instructions = 0;
  std::string listing;
  double ms = 0;
  std::chrono::steady_clock::time_point start;
  std::vector<StageTime> stages;
  std::vector<PassTiming> passes;  // the "passes" stage, per pass
};

// Import (or load), the pass pipeline, the ledger, the VM compiler and the VM load with every
// kernel compiled: what `compile_ms` measures.
absl::StatusOr<Compiled> CompileForRun(const std::string& path, DeviceKind device) {
  const auto t0 = std::chrono::steady_clock::now();
  Clock().Start();
  Compiled c;
  c.start = t0;
  vm::Executable exe;
  if (absl::EndsWith(path, ".hvm")) {
    ASSIGN_OR_RETURN(exe, Stage("import", vm::Executable::LoadFromFile(path)));
  } else {
    ASSIGN_OR_RETURN(auto module, LoadModule(path));
    if (absl::GetFlag(FLAGS_random_weights)) {
      uint32_t seed = 1000;
      for (const auto& fn : module->functions()) {
        WalkNodes(fn->body(), [&](Node& n) {
          if (n.kind() != NodeKind::kConstant || !IsFloat(n.constant_value().dtype())) return;
          const Tensor& t = n.constant_value();
          for (int64_t i = 0; i < t.num_elements(); ++i) {
            if (t.GetDouble(i) != 0) return;
          }
          Tensor r = RandomInput(t.dtype(), t.shape(), seed++);
          for (int64_t i = 0; i < r.num_elements(); ++i) r.SetDouble(i, r.GetDouble(i) * 0.1);
          n.set_constant_value(std::move(r));
        });
      }
      // Its own stage: drawing 27M numbers at 100k ops is not the pipeline's time.
      RETURN_IF_ERROR(Stage("random-weights", absl::OkStatus()));
    }
    ASSIGN_OR_RETURN(c.pipeline, PipelineFlag(device));
    RETURN_IF_ERROR(
        Compile(*module, c.pipeline, absl::GetFlag(FLAGS_function), c.ledger, exe, &c.passes));
    c.have_ledger = true;
  }
  if (!absl::GetFlag(FLAGS_save_executable).empty()) {
    RETURN_IF_ERROR(exe.SaveToFile(absl::GetFlag(FLAGS_save_executable)));
  }
  const std::string function = absl::GetFlag(FLAGS_function);
  if (exe.FindFunction(function) < 0) return absl::NotFoundError(absl::StrCat("no function @", function));
  vm::VmOptions options;
  ASSIGN_OR_RETURN(options.device_memory_limit, DeviceMemoryLimitFlag());
  options.profile = absl::GetFlag(FLAGS_profile);
  options.device_graphs = absl::GetFlag(FLAGS_device_graphs);
  options.trace_memory = false;  // only the last run is traced (Run)
  options.sim.guard = !absl::GetFlag(FLAGS_no_guard);
  options.engine.background_jit = absl::GetFlag(FLAGS_background_jit);
  c.instructions = exe.InstructionCount(function);
  if (absl::GetFlag(FLAGS_listing)) c.listing = exe.ToListing();
  ASSIGN_OR_RETURN(c.machine, Stage("vm-load", vm::VirtualMachine::Load(std::move(exe), options)));
  c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  c.stages = Clock().Stop();
  return c;
}

absl::Status Run(const std::string& path, const std::vector<std::string>& input_specs) {
  ASSIGN_OR_RETURN(const DeviceKind device_kind, DeviceFlag());
  const std::optional<DeviceKind> device = device_kind;
  // --compile-repeat: the first compile of a process pays its one-time initialisation (LLVM's
  // targets, oneDNN's CPU dispatch, the allocator's first pages); later ones are what a process
  // that compiles several models pays, the figure ONNX Runtime's repeated session creation is
  // compared with (bench/compile_time.sh).
  std::vector<double> compile_repeats_ms;
  ASSIGN_OR_RETURN(Compiled compiled, CompileForRun(path, device_kind));
  compile_repeats_ms.push_back(compiled.ms);
  for (int k = 1; k < absl::GetFlag(FLAGS_compile_repeat); ++k) {
    compiled.machine.reset();
    ASSIGN_OR_RETURN(compiled, CompileForRun(path, device_kind));
    compile_repeats_ms.push_back(compiled.ms);
  }
  const double compile_ms = compile_repeats_ms.front();
  const std::vector<StageTime>& compile_stages = compiled.stages;
  std::unique_ptr<vm::VirtualMachine>& machine = compiled.machine;
  CopyLedger& ledger = compiled.ledger;
  const bool have_ledger = compiled.have_ledger;
  const int64_t instructions = compiled.instructions;
  const std::string& listing = compiled.listing;
  const std::string function = absl::GetFlag(FLAGS_function);
  const vm::Executable& exe = machine->executable();
  const vm::VmFunction& fn = exe.functions[exe.FindFunction(function)];

  // Inputs: NAME=SPEC, matched to parameters by name or position. Random data is made only
  // where asked (a SHAPE spec, or --random-inputs for the parameters not given), and every
  // randomised input is listed in the output.
  std::vector<std::optional<Tensor>> inputs(fn.params.size());
  std::vector<std::string> given(fn.params.size());  // the --input that set each parameter
  std::vector<std::string> randomised;               // "%x f32[16, 32, 32] (seed 0)"
  for (const std::string& spec : input_specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--input '", spec, "' is not NAME=SPEC"));
    }
    const std::string name(absl::StripPrefix(spec.substr(0, eq), "%"));
    auto it = std::find_if(fn.params.begin(), fn.params.end(),
                           [&](const vm::ArgSpec& a) { return a.name == name; });
    int64_t position = -1;
    if (absl::StartsWith(name, "#") && absl::SimpleAtoi(name.substr(1), &position)) {
      if (position < 0 || position >= static_cast<int64_t>(fn.params.size())) {
        return absl::InvalidArgumentError(absl::StrCat("--input ", name, ": @", function, " has ",
                                                       fn.params.size(), " parameters"));
      }
      it = fn.params.begin() + position;
    }
    if (it == fn.params.end()) {
      std::vector<std::string> names;
      for (const auto& a : fn.params) names.push_back("%" + a.name);
      return absl::InvalidArgumentError(absl::StrCat("--input names %", name, ", @", function,
                                                     " has parameters ", absl::StrJoin(names, ", ")));
    }
    const size_t i = it - fn.params.begin();
    if (!given[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--input ", spec, ": %", it->name,
                                                     " was already given by --input ", given[i]));
    }
    given[i] = spec;
    const uint32_t seed = absl::GetFlag(FLAGS_seed) + static_cast<uint32_t>(i);
    ASSIGN_OR_RETURN(inputs[i], ParseInput(spec.substr(eq + 1), *it, seed));
    if (IsRandomSpec(spec.substr(eq + 1))) {
      randomised.push_back(absl::StrCat("%", it->name, " ", inputs[i]->type().ToString(),
                                        " (seed ", seed, ")"));
    }
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    // "f32[n, 32, 32]": the parameter's type without its device annotation.
    const absl::string_view type = fn.params[i].type_text;
    if (!inputs[i]) missing.push_back(absl::StrCat("%", fn.params[i].name, ": ", type.substr(0, type.find(" @"))));
  }
  if (!missing.empty() && !absl::GetFlag(FLAGS_random_inputs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "@", function, " needs ", missing.size() == 1 ? "an input" : "inputs",
        " not given: ", absl::StrJoin(missing, ", "),
        ". Give each with --input NAME=SHAPE|[v,...]|FILE.npy|FILE.pb, or --random-inputs to "
        "run the static ones on seeded random data"));
  }
  std::vector<Tensor> args;
  DimExpr::Bindings bindings;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const vm::ArgSpec& p = fn.params[i];
    if (!inputs[i]) {
      std::vector<int64_t> shape;
      for (const vm::ArgDim& d : p.dims) {
        if (d.kind != vm::ArgDim::kStatic) {
          return absl::InvalidArgumentError(absl::StrCat("input %", p.name, " (", p.type_text,
                                                         ") has dynamic dims: give --input ", p.name,
                                                         "=SHAPE|[values]|FILE.npy"));
        }
        shape.push_back(d.value);
      }
      const uint32_t seed = absl::GetFlag(FLAGS_seed) + static_cast<uint32_t>(i);
      inputs[i] = RandomInput(p.dtype, shape, seed);
      randomised.push_back(absl::StrCat("%", p.name, " ", inputs[i]->type().ToString(), " (seed ",
                                        seed, ", --random-inputs)"));
      // Said at once, so that a run that then fails on made-up values says what it made up.
      std::cerr << "hetpass run: random data for " << randomised.back() << "\n";
    }
    for (size_t k = 0; k < p.dims.size() && k < inputs[i]->shape().size(); ++k) {
      if (p.dims[k].kind == vm::ArgDim::kBind) bindings[exe.symbols[p.dims[k].value]] = inputs[i]->shape()[k];
    }
    args.push_back(*inputs[i]);
  }

  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat));
  std::vector<double> times_us;
  std::vector<Tensor> outputs;
  std::vector<runtime::DeviceCounters> counters;
  // CUPTI traces the last run only: the one whose counters are reported.
  const bool cupti = absl::GetFlag(FLAGS_cupti);
  absl::StatusOr<runtime::CuptiTrace> cupti_counts = absl::UnknownError("not traced");
  double kernels_final_ms = compiled.ms;
  ResetPeakRss();  // the runs' peak resident memory (run_peak_rss_mb)
  for (int r = 0; r < repeat; ++r) {
    if (absl::GetFlag(FLAGS_flush_cache)) FlushCaches();
    // The last run's memory (peak, liveness lower bound) is reported: only it is traced.
    machine->SetTraceMemory(r == repeat - 1);
    const bool traced = cupti && r == repeat - 1;
    const absl::Status started = traced ? runtime::StartCuptiTrace() : absl::OkStatus();
    const auto a = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(outputs, Stage("run", machine->RunWithHostTensors(function, args)));
    const auto b = std::chrono::steady_clock::now();
    if (traced) cupti_counts = started.ok() ? runtime::StopCuptiTrace() : started;
    times_us.push_back(std::chrono::duration<double, std::micro>(b - a).count());
    counters.push_back(machine->LastRunCounters());
    if (r == 0 && absl::GetFlag(FLAGS_background_jit)) {
      // Tiered compilation: the later runs (and the outputs reported, the last run's) use the
      // final kernels. The time is exact when compiles were still pending after the first
      // run, else at most (they ended during it).
      RETURN_IF_ERROR(Stage("jit", machine->WaitForKernels()));
      kernels_final_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                                   compiled.start).count();
    }
    // The table shows the runs after the first: the first pays one-time set-up (library plans,
    // module loads, first-touch allocations) that would hide what a warm call costs the host.
    if (r == 0 && repeat > 1) machine->ResetProfile();
  }
  const int64_t run_peak_rss_kb = PeakRssKb();
  std::vector<double> warm(times_us.begin() + (repeat > 1 ? 1 : 0), times_us.end());
  std::sort(warm.begin(), warm.end());
  const double median = warm[warm.size() / 2];
  const runtime::DeviceCounters& last = counters.back();
  int64_t steady_allocs = 0;
  for (size_t i = 1; i < counters.size(); ++i) steady_allocs += counters[i].allocs;

  if (!absl::GetFlag(FLAGS_output_dir).empty()) {
    std::filesystem::create_directories(absl::GetFlag(FLAGS_output_dir));
    for (size_t i = 0; i < outputs.size(); ++i) {
      RETURN_IF_ERROR(runtime::WriteNpy(
          absl::StrCat(absl::GetFlag(FLAGS_output_dir), "/output_", i, ".npy"), outputs[i]));
    }
  }
  // The ledger's symbols bound by the run: the input symbols and how often each region ran.
  const vm::RunRecord& record = machine->LastRunRecord();
  if (have_ledger) bindings = record.LedgerBindings(ledger);
  const vm::LedgerComparison comparison =
      have_ledger ? vm::CompareLedgerToRun(ledger, last, record) : vm::LedgerComparison();
  const absl::Status agree = comparison.ToStatus();

  if (absl::GetFlag(FLAGS_json)) {
    std::string out = "{";
    absl::StrAppend(&out, "\"module\": ", JsonString(path), ", \"device\": ",
                    JsonString(DeviceName(*device)), ", \"function\": ", JsonString(function),
                    ", \"pipeline\": ", JsonString(compiled.pipeline), ", \"instructions\": ", instructions, ", \"compile_ms\": ",
                    absl::StrFormat("%.3f", compile_ms), ", \"compile_repeats_ms\": [",
                    absl::StrJoin(compile_repeats_ms, ", ",
                                  [](std::string* o, double ms) { absl::StrAppendFormat(o, "%.3f", ms); }),
                    "], \"kernels_final_ms\": ", absl::StrFormat("%.3f", kernels_final_ms),
                    ", \"background_jit\": ", absl::GetFlag(FLAGS_background_jit) ? "true" : "false",
                    ", \"small_object_heap\": ", JsonString(tools::SmallObjectHeapStatus()),
                    ", \"compile_stages_ms\": {");
    for (size_t i = 0; i < compile_stages.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", JsonString(compile_stages[i].name), ": ",
                      absl::StrFormat("%.3f", compile_stages[i].ms));
    }
    absl::StrAppend(&out, "}, \"compile_passes_ms\": {");
    std::vector<std::pair<std::string, double>> pass_ms;  // a pass that runs twice: its sum
    for (const PassTiming& t : compiled.passes) {
      auto it = std::find_if(pass_ms.begin(), pass_ms.end(),
                             [&](const auto& p) { return p.first == t.pass; });
      if (it == pass_ms.end()) it = pass_ms.insert(pass_ms.end(), {t.pass, 0.0});
      it->second += t.seconds * 1000;
    }
    for (size_t i = 0; i < pass_ms.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", JsonString(pass_ms[i].first), ": ",
                      absl::StrFormat("%.3f", pass_ms[i].second));
    }
    // The checks after the passes (postconditions; with --verify-each the verifier too), which
    // the passes stage includes and compile_passes_ms does not.
    double checks_ms = 0;
    for (const PassTiming& t : compiled.passes) checks_ms += t.check_seconds * 1000;
    absl::StrAppend(&out, "}, \"compile_checks_ms\": ", absl::StrFormat("%.3f", checks_ms));
    absl::StrAppend(&out, ", \"compile_stages_peak_rss_mb\": {");
    for (size_t i = 0; i < compile_stages.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", JsonString(compile_stages[i].name), ": ",
                      absl::StrFormat("%.1f", compile_stages[i].peak_rss_kb / 1024.0));
    }
    absl::StrAppend(&out, "}, \"outputs\": [");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Checksum c = Check(outputs[i]);
      absl::StrAppend(&out, i ? ", " : "", "{\"dtype\": ", JsonString(DTypeName(outputs[i].dtype())),
                      ", \"shape\": [", absl::StrJoin(outputs[i].shape(), ", "), "], \"sum\": ",
                      JsonNumber(c.sum), ", \"abs_sum\": ", JsonNumber(c.abs_sum),
                      ", \"fnv1a\": \"", absl::StrFormat("%016x", c.hash), "\"}");
    }
    absl::StrAppend(&out, "], \"counters\": ", CountersJson(last), ", \"memory\": ",
                    MemoryJson(machine->LastRunMemory()), ", \"steady_state_device_allocs\": ",
                    steady_allocs, ", \"times_us\": {\"cold\": ", absl::StrFormat("%.3f", times_us[0]),
                    ", \"median\": ", absl::StrFormat("%.3f", median), ", \"min\": ",
                    absl::StrFormat("%.3f", warm.front()), ", \"runs\": ", repeat, "}",
                    ", \"run_peak_rss_mb\": ", absl::StrFormat("%.1f", run_peak_rss_kb / 1024.0));
    if (cupti && cupti_counts.ok()) {
      absl::StrAppend(&out, ", \"cupti\": {\"h2d\": ", cupti_counts->h2d, ", \"d2h\": ", cupti_counts->d2h,
                      ", \"d2d\": ", cupti_counts->d2d, ", \"other\": ", cupti_counts->other,
                      ", \"h2d_bytes\": ", cupti_counts->h2d_bytes, ", \"d2h_bytes\": ", cupti_counts->d2h_bytes,
                      ", \"d2d_bytes\": ", cupti_counts->d2d_bytes, ", \"other_bytes\": ",
                      cupti_counts->other_bytes, ", \"kernels\": ", cupti_counts->kernels,
                      ", \"kernel_us\": ", absl::StrFormat("%.3f", cupti_counts->kernel_ns / 1e3),
                      ", \"memcpy_us\": ", absl::StrFormat("%.3f", cupti_counts->memcpy_ns / 1e3),
                      ", \"span_us\": ", absl::StrFormat("%.3f", cupti_counts->span_ns / 1e3));
      if (!cupti_counts->kernel_error.empty()) {
        absl::StrAppend(&out, ", \"kernel_error\": ", JsonString(cupti_counts->kernel_error));
      }
      absl::StrAppend(&out, ", \"top_kernels\": [");
      for (size_t i = 0; i < cupti_counts->top_kernels.size(); ++i) {
        const runtime::CuptiKernelTime& k = cupti_counts->top_kernels[i];
        absl::StrAppend(&out, i ? ", " : "", "{\"name\": ", JsonString(k.name), ", \"calls\": ", k.calls,
                        ", \"us\": ", absl::StrFormat("%.3f", k.ns / 1e3), "}");
      }
      absl::StrAppend(&out, "]}");
    } else if (cupti) {
      absl::StrAppend(&out, ", \"cupti_error\": ", JsonString(cupti_counts.status().ToString()));
    }
    if (have_ledger) {
      absl::StrAppend(&out, ", \"ledger\": ", ledger.ToJson(), ", \"ledger_agrees\": ",
                      agree.ok() ? "true" : "false", ", \"ledger_exact\": ",
                      comparison.exact() ? "true" : "false", ", \"ledger_summary\": ",
                      JsonString(comparison.Summary()), ", \"bindings\": ",
                      BindingsJson(bindings));
    }
    if (absl::GetFlag(FLAGS_profile)) {
      // How many runs the table sums: every run after the first, or the only one.
      absl::StrAppend(&out, ", \"profile_runs\": ", repeat > 1 ? repeat - 1 : 1, ", \"profile\": [");
      bool first = true;
      for (const vm::ProfileEntry& e : machine->Profile()) {
        absl::StrAppend(&out, first ? "" : ", ", "{\"function\": ", JsonString(e.function), ", \"pc\": ", e.pc,
                        ", \"opcode\": ", JsonString(e.opcode), ", \"what\": ", JsonString(e.what),
                        ", \"calls\": ", e.calls, ", \"total_us\": ", absl::StrFormat("%.3f", e.total_us), "}");
        first = false;
      }
      absl::StrAppend(&out, "]");
    }
    absl::StrAppend(&out, ", \"graphs\": ", GraphsJson(*machine));
    absl::StrAppend(&out, ", \"random_inputs\": [",
                    absl::StrJoin(randomised, ", ",
                                  [](std::string* o, const std::string& r) { o->append(JsonString(r)); }),
                    "]");
    std::cout << out << "}\n";
    // The report is printed either way; a run whose copies differ from the ledger still fails.
    return Stage("ledger-check", agree);
  }

  std::cout << "module   " << path << "\n";
  std::cout << "device   " << DeviceName(*device) << "\n";
  if (!compiled.pipeline.empty()) std::cout << "pipeline " << compiled.pipeline << "\n";
  std::cout << absl::StrFormat("compiled in %.1f ms: %d instructions in @%s\n", compile_ms,
                               instructions, function);
  if (absl::GetFlag(FLAGS_background_jit) && kernels_final_ms > compile_ms + 0.05) {
    std::cout << absl::StrFormat(
        "JIT kernels generated in the background: all final %.1f ms after the compile began\n",
        kernels_final_ms);
  }
  for (const std::string& k : machine->KernelDescriptions()) std::cout << "  " << k << "\n";
  if (!listing.empty()) std::cout << listing;
  std::cout << "inputs\n";
  for (size_t i = 0; i < args.size(); ++i) {
    std::cout << absl::StrFormat("  %%%-10s %s\n", fn.params[i].name, args[i].type().ToString());
  }
  for (const std::string& r : randomised) std::cout << "  random data: " << r << "\n";
  std::cout << "outputs\n";
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Checksum c = Check(outputs[i]);
    std::cout << absl::StrFormat("  %d  %-18s sum=%.6g abs_sum=%.6g fnv1a=%016x\n", i,
                                 outputs[i].type().ToString(), c.sum, c.abs_sum, c.hash);
  }
  std::cout << "copies and syncs of one run (" << BindingsText(bindings) << ")\n";
  if (have_ledger) {
    std::cout << comparison.Table() << "  " << comparison.Summary() << "\n";
  } else {
    std::cout << "  " << last.ToString() << "\n";
  }
  if (cupti && cupti_counts.ok()) {
    std::cout << absl::StrFormat(
        "CUPTI memcpy records of the last run: h2d %d (%d B), d2h %d (%d B), d2d %d (%d B), other %d (%d B)\n",
        cupti_counts->h2d, cupti_counts->h2d_bytes, cupti_counts->d2h, cupti_counts->d2h_bytes, cupti_counts->d2d,
        cupti_counts->d2d_bytes, cupti_counts->other, cupti_counts->other_bytes);
    if (cupti_counts->kernel_error.empty()) {
      std::cout << absl::StrFormat(
          "CUPTI kernels of the last run: %d, %.1f us of GPU time; memcpys %.1f us; first record to last %.1f us\n",
          cupti_counts->kernels, cupti_counts->kernel_ns / 1e3, cupti_counts->memcpy_ns / 1e3,
          cupti_counts->span_ns / 1e3);
      for (const runtime::CuptiKernelTime& k : cupti_counts->top_kernels) {
        std::cout << absl::StrFormat("  %10.1f us %5d x  %s\n", k.ns / 1e3, k.calls, k.name);
      }
    } else {
      std::cout << "CUPTI kernels: " << cupti_counts->kernel_error << "\n";
    }
  } else if (cupti) {
    std::cout << "CUPTI: " << cupti_counts.status().message() << "\n";
  }
  std::cout << absl::StrFormat("device allocations: first run %d, later runs %d; kernel launches %d\n",
                               counters[0].allocs, steady_allocs, last.launches);
  std::cout << GraphsText(*machine, last, absl::GetFlag(FLAGS_profile));
  std::cout << "device memory of the last run\n" << MemoryText(machine->LastRunMemory());
  std::cout << absl::StrFormat("time     first run %.1f us, then median %.1f us, min %.1f us (%d runs%s)\n",
                               times_us[0], median, warm.front(), repeat,
                               absl::GetFlag(FLAGS_flush_cache) ? ", caches flushed before each" : ", warm caches");
  if (absl::GetFlag(FLAGS_profile)) {
    std::cout << (repeat > 1 ? "profile (the runs after the first)\n" : "profile (the only run)\n");
    std::cout << absl::StrFormat("  %-10s %4s %-16s %8s %12s %10s  %s\n", "function", "pc", "opcode",
                                 "calls", "total us", "us/call", "binding");
    for (const vm::ProfileEntry& e : machine->Profile()) {
      std::cout << absl::StrFormat("  %-10s %4d %-16s %8d %12.1f %10.2f  %s\n", e.function, e.pc,
                                   e.opcode, e.calls, e.total_us, e.total_us / e.calls, e.what);
    }
  }
  return Stage("ledger-check", agree);
}

absl::Status Import(const std::string& path) {
  ASSIGN_OR_RETURN(auto module, ImportOnnxFile(path));
  const std::string text = PrintModule(*module);
  const std::string out = absl::GetFlag(FLAGS_o);
  if (out == "-") {
    std::cout << text;
    return absl::OkStatus();
  }
  std::ofstream f(out);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", out, " for writing"));
  f << text;
  return f ? absl::OkStatus() : absl::DataLossError(absl::StrCat("cannot write ", out));
}

// Largest |got - want| and whether every element is within atol + rtol * |want| (NaN == NaN).
struct Comparison {
  bool ok = true;
  double max_abs_err = 0;
  std::string why;
};
Comparison Compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Comparison c;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    c.ok = false;
    c.why = absl::StrCat("shape ", got.type().ToString(), " vs expected ", want.type().ToString());
    return c;
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    if ((std::isnan(a) && std::isnan(b)) || a == b) continue;  // equal infinities included
    const double err = std::abs(a - b);
    c.max_abs_err = std::max(c.max_abs_err, std::isnan(err) ? INFINITY : err);
    if (!(err <= atol + rtol * std::abs(b)) && c.ok) {
      c.ok = false;
      c.why = absl::StrFormat("element %d: got %.9g, expected %.9g", i, a, b);
    }
  }
  return c;
}

// ONNX's test generator stores bfloat16 tensors as UINT16 bit patterns (numpy has no bf16):
// read such a tensor as the bf16 the model declares, as ONNX's own backend test runner does.
Tensor AsDeclaredBFloat16(Tensor t, DType declared) {
  if (declared != DType::kBF16 || t.dtype() != DType::kU16) return t;
  auto bits = Tensor::FromBytes(DType::kBF16, t.shape(),
                                absl::string_view(reinterpret_cast<const char*>(t.data()), t.nbytes()));
  return bits.ok() ? *std::move(bits) : t;
}

vm::HostValue ToHostValue(OnnxValue v, DType declared) {
  vm::HostValue h;
  h.kind = v.kind == OnnxValue::Kind::kTensor     ? vm::HostValue::Kind::kTensor
           : v.kind == OnnxValue::Kind::kSequence ? vm::HostValue::Kind::kSequence
                                                  : vm::HostValue::Kind::kOptional;
  h.tensor = AsDeclaredBFloat16(std::move(v.tensor), declared);
  for (OnnxValue& e : v.elements) h.elements.push_back(ToHostValue(std::move(e), declared));
  return h;
}

// What a test-data file of parameter `spec` holds.
OnnxValue::Kind FileKind(const vm::ArgSpec& spec) {
  switch (spec.container) {
    case vm::ArgSpec::kTensor: return OnnxValue::Kind::kTensor;
    case vm::ArgSpec::kSequence: return OnnxValue::Kind::kSequence;
    default: return OnnxValue::Kind::kOptional;
  }
}

OnnxValue::Kind FileKind(const vm::HostValue& got) {
  switch (got.kind) {
    case vm::HostValue::Kind::kTensor: return OnnxValue::Kind::kTensor;
    case vm::HostValue::Kind::kSequence: return OnnxValue::Kind::kSequence;
    default: return OnnxValue::Kind::kOptional;
  }
}

// Sequences element by element, optionals by presence then value.
Comparison CompareValues(const vm::HostValue& got, const vm::HostValue& want, double rtol, double atol) {
  if (got.kind == vm::HostValue::Kind::kTensor && want.kind == vm::HostValue::Kind::kTensor) {
    return Compare(got.tensor, want.tensor, rtol, atol);
  }
  Comparison c;
  if (got.kind != want.kind || got.elements.size() != want.elements.size()) {
    c.ok = false;
    c.why = absl::StrCat(got.kind == vm::HostValue::Kind::kOptional ? "optional" : "sequence", " of ",
                         got.elements.size(), " values, expected ", want.elements.size());
    return c;
  }
  for (size_t i = 0; i < got.elements.size(); ++i) {
    Comparison e = CompareValues(got.elements[i], want.elements[i], rtol, atol);
    c.max_abs_err = std::max(c.max_abs_err, e.max_abs_err);
    if (!e.ok && c.ok) {
      c.ok = false;
      c.why = absl::StrCat("element ", i, ": ", e.why);
    }
  }
  return c;
}

absl::Status TestOnnx(const std::string& dir) {
  ASSIGN_OR_RETURN(const DeviceKind device, DeviceFlag());
  if (!std::filesystem::is_directory(dir)) {
    return Stage("import", absl::InvalidArgumentError(absl::StrCat(
        "'", dir, "' is not a directory: test-onnx takes a folder holding model.onnx and "
        "test_data_set_N/ (`hetpass run` takes a model file)")));
  }
  const std::string model_path = dir + "/model.onnx";
  ASSIGN_OR_RETURN(auto module, LoadModule(model_path));
  ASSIGN_OR_RETURN(const std::string pipeline, PipelineFlag(device));
  CopyLedger ledger;
  vm::Executable exe;
  RETURN_IF_ERROR(Compile(*module, pipeline, "main", ledger, exe));
  const vm::VmFunction fn = exe.functions[exe.FindFunction("main")];
  vm::VmOptions options;
  ASSIGN_OR_RETURN(options.device_memory_limit, DeviceMemoryLimitFlag());
  options.trace_memory = true;
  ASSIGN_OR_RETURN(auto machine, Stage("vm-load", vm::VirtualMachine::Load(std::move(exe), options)));

  std::vector<std::string> sets;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory() && absl::StartsWith(entry.path().filename().string(), "test_data_set_")) {
      sets.push_back(entry.path().string());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return absl::NotFoundError(absl::StrCat(dir, " has no test_data_set_* folder"));
  const double rtol = absl::GetFlag(FLAGS_rtol), atol = absl::GetFlag(FLAGS_atol);
  const bool json = absl::GetFlag(FLAGS_json);
  int failed = 0;
  std::string json_sets;
  if (!json) {
    std::cout << "model    " << model_path << "\ndevice   " << DeviceName(device)
              << " (one compilation for " << sets.size() << " sets), rtol " << rtol << ", atol " << atol << "\n"
              << "pipeline " << pipeline << "\n";
  }
  for (const std::string& set : sets) {
    const std::string name = std::filesystem::path(set).filename().string();
    std::vector<vm::HostValue> inputs;
    for (size_t i = 0; i < fn.params.size(); ++i) {
      ASSIGN_OR_RETURN(OnnxValue v, Stage("import", ReadOnnxValueFile(absl::StrCat(set, "/input_", i, ".pb"),
                                                                      FileKind(fn.params[i]))));
      inputs.push_back(ToHostValue(std::move(v), fn.params[i].dtype));
    }
    size_t expected_outputs = 0;
    while (std::filesystem::exists(absl::StrCat(set, "/output_", expected_outputs, ".pb"))) {
      ++expected_outputs;
    }
    auto outputs = machine->RunWithHostValues("main", inputs);
    std::string verdict;
    bool pass = outputs.ok();
    double max_err = 0;
    if (!outputs.ok()) {
      verdict = std::string(outputs.status().message());
    } else if (outputs->size() != expected_outputs) {
      pass = false;
      verdict = absl::StrCat(outputs->size(), " outputs, expected ", expected_outputs);
    } else {
      for (size_t j = 0; j < outputs->size(); ++j) {
        const vm::HostValue& got = (*outputs)[j];
        auto want = ReadOnnxValueFile(absl::StrCat(set, "/output_", j, ".pb"), FileKind(got));
        // Reference data we cannot read (strings): the test is unsupported.
        if (absl::IsUnimplemented(want.status())) return Stage("import", want.status());
        if (!want.ok()) {
          pass = false;
          verdict = std::string(want.status().message());
          break;
        }
        const DType declared = got.kind == vm::HostValue::Kind::kTensor ? got.tensor.dtype() : DType::kF32;
        const Comparison c = CompareValues(got, ToHostValue(*std::move(want), declared), rtol, atol);
        max_err = std::max(max_err, c.max_abs_err);
        if (!c.ok) {
          pass = false;
          verdict = absl::StrCat("output ", j, ": ", c.why);
          break;
        }
      }
    }
    const runtime::DeviceCounters& counters = machine->LastRunCounters();
    const DimExpr::Bindings bindings = machine->LastRunRecord().LedgerBindings(ledger);
    const vm::LedgerComparison comparison =
        vm::CompareLedgerToRun(ledger, counters, machine->LastRunRecord());
    const absl::Status agree = comparison.ToStatus();
    // A run whose copies differ from the ledger's promise fails like a wrong output.
    if (pass && !agree.ok()) {
      pass = false;
      verdict = comparison.Summary();
    }
    failed += !pass;
    if (json) {
      absl::StrAppend(&json_sets, json_sets.empty() ? "" : ", ", "{\"set\": ", JsonString(name),
                      ", \"pass\": ", pass ? "true" : "false", ", \"max_abs_err\": ",
                      absl::StrFormat("%.3g", max_err), ", \"message\": ", JsonString(verdict),
                      ", \"counters\": ", CountersJson(counters), ", \"memory\": ",
                      MemoryJson(machine->LastRunMemory()), ", \"ledger_agrees\": ",
                      agree.ok() ? "true" : "false", ", \"ledger_exact\": ",
                      comparison.exact() ? "true" : "false", ", \"ledger_summary\": ",
                      JsonString(comparison.Summary()), ", \"bindings\": ", BindingsJson(bindings),
                      "}");
    } else {
      std::cout << absl::StrFormat("%s: %s (max abs err %.3g)%s\n", name, pass ? "PASS" : "FAIL", max_err,
                                   verdict.empty() ? "" : absl::StrCat(": ", verdict));
      std::cout << "  " << BindingsText(bindings) << "\n"
                << comparison.Table() << "  " << comparison.Summary() << "\n"
                << MemoryText(machine->LastRunMemory());
    }
  }
  if (json) {
    std::cout << "{\"model\": " << JsonString(model_path) << ", \"device\": " << JsonString(DeviceName(device))
              << ", \"ledger\": " << ledger.ToJson() << ", \"sets\": [" << json_sets << "], \"passed\": "
              << sets.size() - failed << ", \"total\": " << sets.size() << "}\n";
  } else {
    std::cout << absl::StrFormat("%d/%d sets passed\n", sets.size() - failed, sets.size());
  }
  if (failed > 0) return absl::FailedPreconditionError(absl::StrCat(failed, " of ", sets.size(), " sets failed"));
  return absl::OkStatus();
}

}  // namespace
}  // namespace hetpass

int main(int argc, char** argv) {
  // A process policy the tool chooses for itself, before its heap holds anything large.
  hetpass::tools::UseHugePageHeap();
  // --input may repeat and its values contain commas: take them out before absl parses the rest.
  std::vector<std::string> input_specs;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const absl::string_view a = argv[i];
    if (a == "--input" && i + 1 < argc) {
      input_specs.push_back(argv[++i]);
    } else if (absl::StartsWith(a, "--input=")) {
      input_specs.emplace_back(a.substr(8));
    } else {
      rest.push_back(argv[i]);
    }
  }
  const std::vector<std::string> args = hetpass::tools::ParseToolCommandLine(
      static_cast<int>(rest.size()), rest.data(),
      {.name = "hetpass",
       .usage = hetpass::kUsage,
       .main_file = "tools/hetpass/",
       .bare_values = {{"--copy-ledger", "text"}}});
  const std::string command = args.size() >= 2 ? args[1] : "";
  if (!command.empty() && command != "run" && command != "import" && command != "test-onnx") {
    std::fprintf(stderr, "hetpass: unknown command '%s' (the commands are run, import and "
                 "test-onnx; `hetpass --help` lists them with their flags)\n", command.c_str());
    return 2;
  }
  if (args.size() != 3) {
    std::fprintf(stderr, "%s\nusage: %s\n(run `hetpass --help` for the flags)\n",
                 command.empty() ? "hetpass: no command given"
                                 : absl::StrCat("hetpass ", command, " takes exactly one ",
                                                command == "test-onnx" ? "model directory"
                                                                       : "file", ", got ",
                                                args.size() - 2).c_str(),
                 hetpass::kUsage);
    return 2;
  }
  const absl::Status st = command == "run"      ? hetpass::Run(args[2], input_specs)
                          : command == "import" ? hetpass::Import(args[2])
                                                : hetpass::TestOnnx(args[2]);
  if (!st.ok()) {
    const auto stage = st.GetPayload(hetpass::kStageUrl);
    const std::string stage_name = stage ? std::string(*stage) : "";
    std::fprintf(stderr, "hetpass %s: %s%s\n", command.c_str(),
                 stage_name.empty() || stage_name == "import" ? "" : (stage_name + ": ").c_str(),
                 std::string(st.message()).c_str());
    // 3: the input uses something not supported yet (an ONNX op, attribute or opset; only the
    // importer says so), so test runners can list it as unsupported rather than failed.
    if (absl::IsUnimplemented(st) && (stage_name.empty() || stage_name == "import")) return 3;
    // 4: a later stage failed (a pass, the verifier, the VM compiler or loader, a kernel, the
    // ledger check): a failure, never "unsupported".
    return stage_name.empty() || stage_name == "import" ? 1 : 4;
  }
  return 0;
}
