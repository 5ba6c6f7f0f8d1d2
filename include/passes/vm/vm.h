// The virtual machine: loads an Executable (verify once, compile its kernels, place constants
// on their devices) and runs its functions.
//
// Counters: every device counts its transfers, syncs, raw allocations and launches; Counters()
// sums them. Run() measures exactly the function's own work: tensors the caller hands in must
// already live on the parameter's device (RunWithHostTensors stages host tensors there first
// and resets the counters after staging, and reads results back only after taking the
// counters), so the counters are comparable with the copy ledger.
//
// Memory: every device has a pooling allocator; storage is released when its last register
// reference dies, so a second call with the same or smaller shapes makes zero raw allocations.
#ifndef HETPASS_VM_VM_H_
#define HETPASS_VM_VM_H_

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/runtime/device.h"
#include "passes/runtime/ndarray.h"
#include "passes/vm/executable.h"

namespace hetpass::vm {

// A register's contents. A tuple's and a sequence's values are `fields` (a sequence's length is
// its size); an optional holds its value in `fields` (one entry) or nothing (empty). Builtins
// build new containers sharing the element objects, so containers are immutable once made.
struct Object {
  enum class Kind : uint8_t { kNone, kTensor, kStorage, kTuple, kSequence, kOptional };
  Kind kind = Kind::kNone;
  runtime::NDArray tensor;
  std::shared_ptr<runtime::Storage> storage;
  std::shared_ptr<std::vector<Object>> fields;

  static Object FromTensor(runtime::NDArray t) {
    Object o;
    o.kind = Kind::kTensor;
    o.tensor = std::move(t);
    return o;
  }
};

// A value on the host for RunWithHostValues: a tensor, a sequence of values, or an optional
// (`elements` holds its value, or nothing). What ONNX calls TensorProto, SequenceProto and
// OptionalProto.
struct HostValue {
  enum class Kind : uint8_t { kTensor, kSequence, kOptional };
  Kind kind = Kind::kTensor;
  Tensor tensor;
  std::vector<HostValue> elements;

  static HostValue FromTensor(Tensor t) {
    HostValue v;
    v.tensor = std::move(t);
    return v;
  }
};

struct VmOptions {
  CompileEngineOptions engine;
  runtime::SimDeviceOptions sim;
  bool profile = false;  // per-instruction times (Profile())
  // Records the device byte ranges every instruction reads and writes, so RunWithHostTensors
  // can report the run's liveness lower bound (LastRunMemory). Costs one vector append per
  // tensor an instruction touches; off by default.
  bool trace_memory = false;
  // Device memory limit in bytes for each accelerator device of the VM (sim, cuda), 0 for none:
  // an allocation that would go over it is ResourceExhausted naming the instruction and value
  // that asked, the bytes requested and those available (Device::SetMemoryLimit); the pool
  // first gives back its cache and idle arena and retries. The VM then runs the next call.
  int64_t device_memory_limit = 0;
  // Device graphs (docs/runtime.md, "Device graphs"; vm.cc explains the algorithm): every
  // stretch of launches on an accelerator between two host waits is captured once per shape key
  // (the values of the symbols), after `graph_warmup` eager runs of that key, and replayed as
  // one graph launch (CUDA graphs on cuda; sim keeps and runs the nodes, counting them as
  // graph kernels). The cache keeps `graph_cache_size` keys, least recently used evicted.
  // Stretches of fewer than `graph_min_launches` launches run eagerly. No effect on cpu.
  bool device_graphs = true;
  int graph_warmup = 1;
  int graph_cache_size = 256;
  int graph_min_launches = 1;
  // Replaces the compile engine for kernels (benchmarks of the dispatch loop use no-op kernels).
  std::function<absl::StatusOr<std::shared_ptr<const CompiledKernel>>(const Function&, DeviceKind)>
      kernel_factory;
};

// What one run did besides its results (RunWithHostTensors records it): the symbols the
// arguments bound and how many times each VM function ran (the entry, every if branch and loop
// body, callees). With the device counters this binds every term of the copy ledger.
struct RunRecord {
  DimExpr::Bindings symbols;                             // "n" -> 16
  absl::flat_hash_map<std::string, int64_t> executions;  // "main$loop0" -> 12
  // Copies whose compile-time type has a `?` dim, indexed by CopyDirection: the ledger promises
  // how many there are but not their bytes, so the comparison takes their bytes out of the
  // device's totals, checks every other byte exactly and reports these apart.
  struct RuntimeSized {
    int64_t calls = 0;
    int64_t bytes = 0;
  };
  std::array<RuntimeSized, 4> runtime_sized{};
  // How many assumption checks (kAssume) the call ran: each of the function's assumptions once
  // per call where its symbols are bound, once per iteration inside a loop body.
  int64_t assumption_checks = 0;
  // The ledger's symbols bound: the input symbols, and each region symbol to the executions of
  // its VM function (0 when it never ran).
  DimExpr::Bindings LedgerBindings(const CopyLedger& ledger) const;
  // "$loop0=12, $if1_then=1" for the ledger's regions.
  std::string RegionsText(const CopyLedger& ledger) const;
};

// Device memory of one run (RunWithHostTensors), per device the run used. Definitions in
// docs/memory_planning.md.
struct MemoryStats {
  DeviceKind device = DeviceKind::kCpu;
  // Device memory held by the device's allocators at its highest during the run: raw
  // allocations not yet freed, blocks cached by the pools, constants and staged arguments
  // included (DeviceCounters::peak_held_bytes).
  int64_t peak_bytes = 0;
  // The largest sum of bytes holding live values at any program point of the run, each byte
  // counted once (memory_trace.h); constants count for the whole run. -1 without
  // VmOptions::trace_memory.
  int64_t liveness_lower_bound_bytes = -1;
  // Bytes of the constants placed on the device at load (part of both figures above).
  int64_t constant_bytes = 0;
};

struct ProfileEntry {
  std::string function;
  int pc = 0;
  std::string opcode;
  std::string what;  // the IR binding, and for kernels the implementation
  int64_t calls = 0;
  double total_us = 0;
};

// One stretch of device-graph work (VmOptions::device_graphs) and what became of it.
struct GraphStretch {
  std::string function;
  int32_t begin = 0;  // first instruction (a launch)
  int32_t end = 0;    // one past the last launch
  DeviceKind device = DeviceKind::kUnset;
  int32_t launches = 0;  // launch instructions inside
  // Runs of the stretch since the last ResetProfile: eagerly (warm-up, or retired), captured
  // into a graph and launched, replayed from a graph, and fallen back (a launch differed from
  // its graph's node: the stretch ran eagerly from there).
  int64_t eager = 0, captures = 0, replays = 0, fallbacks = 0;
  double graph_us = 0;  // host time of captures and graph launches
  std::string note;     // why it last ran eagerly after warm-up (capture refused, a divergence)
};

// An executable compiled once for any number of VMs: verified, its primitives parsed, one
// kernel compiled per site (structurally equal primitives share one), its shape functions
// lowered. Immutable once made, so VMs on any threads share it (docs/runtime.md, "Threading"):
// loading a VM from a Program only makes what is the VM's own: its devices and pools, the
// constants placed on them, one kernel instance per site (prepacked weights), register files,
// counters. Uses VmOptions::engine and kernel_factory; the VM's Load takes the rest.
class Program {
 public:
  static absl::StatusOr<std::shared_ptr<const Program>> Compile(Executable exe,
                                                                const VmOptions& options = {});
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const Executable& executable() const;
  // VmOptions::engine.background_jit: see VirtualMachine::WaitForKernels.
  absl::Status WaitForKernels() const;
  int64_t KernelsPending() const;

 private:
  friend class VirtualMachine;
  struct Impl;
  explicit Program(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Thread safety: a VirtualMachine runs one call at a time (its registers, pools and counters are
// its own); any number of VMs loaded from one Program run at once on different threads. VmPool
// (vm_pool.h) hands VMs of one Program to the threads of a server.
class VirtualMachine {
 public:
  // Program::Compile, then Load of the program.
  static absl::StatusOr<std::unique_ptr<VirtualMachine>> Load(Executable exe, VmOptions options = {});
  static absl::StatusOr<std::unique_ptr<VirtualMachine>> Load(std::shared_ptr<const Program> program,
                                                              VmOptions options = {});
  ~VirtualMachine();

  // Arguments must live on each parameter's device (see RunWithHostTensors).
  absl::StatusOr<std::vector<Object>> Run(absl::string_view function, std::vector<Object> args);
  // Stages host tensors onto the parameters' devices, resets the counters, runs, records the
  // counters of the run (LastRunCounters), then copies tensor results back to the host.
  absl::StatusOr<std::vector<Tensor>> RunWithHostTensors(absl::string_view function,
                                                        const std::vector<Tensor>& inputs);
  // The same for sequences and optionals too: each tensor is staged on the parameter's device
  // and every tensor of the results read back.
  absl::StatusOr<std::vector<HostValue>> RunWithHostValues(absl::string_view function,
                                                           const std::vector<HostValue>& inputs);
  // The recorded run both of the above make once their inputs are staged: arguments already on
  // the parameters' devices (as Run), counters reset first, then LastRunCounters, LastRunRecord
  // and LastRunMemory set. Results stay where the function left them, so a caller that can use
  // them in place (the Python binding hands cpu results to NumPy) copies nothing.
  absl::StatusOr<std::vector<Object>> RunStaged(absl::string_view function, std::vector<Object> args);

  runtime::DeviceCounters Counters() const;  // summed over devices
  runtime::DeviceCounters CountersOf(DeviceKind kind) const;
  void ResetCounters();
  const runtime::DeviceCounters& LastRunCounters() const { return last_run_; }
  const RunRecord& LastRunRecord() const { return last_record_; }
  // Per device used (cpu first, then the accelerators in devices.def order).
  const std::vector<MemoryStats>& LastRunMemory() const { return last_memory_; }

  runtime::Device* device(DeviceKind kind) const;
  runtime::PoolingAllocator* pool(DeviceKind kind) const;
  const Executable& executable() const { return exe_; }
  const std::shared_ptr<const Program>& program() const;
  // One line per kernel site: primitive, device, implementation (CompiledKernel::Describe).
  std::vector<std::string> KernelDescriptions() const;
  // With VmOptions::engine.background_jit: blocks until the JIT code of every kernel is ready,
  // so every later run uses it (runs before may use reference kernels); the first background
  // compile failure. OK at once otherwise.
  absl::Status WaitForKernels();
  // Background compiles queued or running now (0 without background_jit).
  int64_t KernelsPending() const;
  // Gives the device memory the VM's pools keep between calls back to the devices (cached
  // blocks and the run-time plan's arenas; PoolingAllocator::Shrink): what a server does after a
  // call with unusually large inputs, or after ResourceExhausted. The next call allocates again.
  void TrimMemory();
  // Turns VmOptions::trace_memory on or off for the runs that follow (a benchmark traces only
  // the run whose memory it reports: tracing costs every instruction a little).
  void SetTraceMemory(bool on);
  // Per-instruction profile (VmOptions::profile), sorted by total time, descending.
  std::vector<ProfileEntry> Profile() const;
  // Resets the profile and the device-graph statistics.
  void ResetProfile();
  // Every device-graph stretch of the program, in function and pc order, with what became of
  // it (always counted, profile or not); the graphs cached now (keys with a captured graph).
  std::vector<GraphStretch> GraphStats() const;
  int64_t GraphsCached() const;

 private:
  struct Impl;
  explicit VirtualMachine(std::unique_ptr<Impl> impl);
  // Runs function `fi` recording last_record_ (bound symbols, executions per function).
  absl::StatusOr<std::vector<Object>> RunRecorded(int fi, std::vector<Object> args);
  std::unique_ptr<Impl> impl_;
  const Executable& exe_;
  runtime::DeviceCounters last_run_;
  RunRecord last_record_;
  std::vector<MemoryStats> last_memory_;
};

// The pass pipeline that takes a module to VM-ready IR for `target` (cpu, sim, cuda); on cpu
// and sim it includes block-conv-layout with the host's PreferredConvBlock.
std::string DefaultPipeline(DeviceKind target);

// The ledger's promise next to what the run did (src/vm/ledger_check.cc): per direction (h2d,
// d2h, d2d, param) the number of copies and the bytes of those whose size the IR states, the
// number of copies whose size is known only at run time (a `?` dim) with their measured bytes,
// and the syncs. Each promise is an expression of the input and region symbols that the run
// binds (RunRecord::LedgerBindings). Exact means exact: every count, every stated byte total
// and the syncs match or the comparison fails; a promise with an unbound symbol fails naming
// it. Only the bytes of `?`-sized copies are "not checked", and they are reported apart, never
// hiding the rest of their direction.
struct LedgerComparison {
  // kUnbound: the promise names a symbol the run did not bind (a failure, like kMismatch).
  // kNotChecked: bytes of copies of a size known only at run time (no promise to check).
  enum class Verdict : uint8_t { kMatch, kMismatch, kUnbound, kNotChecked };
  struct Field {
    std::string promised;  // "1 + 8*$loop0 = 25"
    int64_t measured = 0;
    Verdict verdict = Verdict::kMatch;
    std::string note;      // why not checked, or the unbound symbol
    bool failed() const { return verdict == Verdict::kMismatch || verdict == Verdict::kUnbound; }
  };
  struct Row {
    std::string name;  // "h2d"
    Field count;       // every copy of the direction
    Field bytes;       // bytes of the copies whose size the IR states
    // Copies of a size known only at run time: their count (checked) and bytes (measured, not
    // checked). Both zero and matched when the direction has none.
    Field runtime_sized_count, runtime_sized_bytes;
    bool runtime_sized = false;  // the ledger lists such copies, or the run made some
  };
  std::string function;
  std::vector<Row> rows;
  Field syncs;

  bool exact() const;    // every field compared and equal: no `?` copies at all
  bool agrees() const;   // no field failed (only `?` copies' bytes may be unchecked)
  // Two columns, one row per direction and one for syncs; failed and unchecked fields marked,
  // `?` copies on a line of their own.
  std::string Table() const;
  // One line: "the run made exactly the copies the ledger promised" only when exact(); else the
  // failures, or what was not checked and why.
  std::string Summary() const;
  // OK when agrees(); else FailedPrecondition with Summary() and Table().
  absl::Status ToStatus() const;
};
// The comparison for a recorded run: its symbols and region executions bind the ledger, and its
// `?`-sized copies are measured apart.
LedgerComparison CompareLedgerToRun(const CopyLedger& ledger,
                                    const runtime::DeviceCounters& counters,
                                    const RunRecord& record);
// With the symbols bound by hand and no record: as if the run made no copy of a run-time size,
// so a ledger with `?` copies fails here (their count has nothing to match): use
// CompareLedgerToRun for those.
LedgerComparison CompareLedger(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                               const DimExpr::Bindings& bindings);
// Shorthands: CompareLedger(...).ToStatus() and CompareLedger(...).Table().
absl::Status CompareWithLedger(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                               const DimExpr::Bindings& bindings);
std::string LedgerVersusCounters(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                                 const DimExpr::Bindings& bindings);

}  // namespace hetpass::vm

#endif  // HETPASS_VM_VM_H_
