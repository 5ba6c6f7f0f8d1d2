// Internal to src/vm: the state of a VirtualMachine (VirtualMachine::Impl) and of the
// Program it runs (Program::Impl), shared by the files that implement them: vm.cc (loading,
// argument checks, the interpreter), device_graphs.cc (stretches of launches captured and
// replayed as device graphs) and vm_control.cc (builtins, loops). Not a public header.
#ifndef HETPASS_VM_VM_IMPL_H_
#define HETPASS_VM_VM_IMPL_H_

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"
#include "vm/memory_trace.h"

namespace hetpass::vm {

using runtime::Device;
using runtime::NDArray;
using runtime::PoolingAllocator;

// Every device kind of devices.def (kUnset included): a new kind needs no edit here.
inline constexpr int kNumDevices = 0
#define HETPASS_DEVICE(e, name, accel) +1
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
    ;

// Reads element `i` of a host tensor of any integer or float dtype as an integer.
absl::StatusOr<int64_t> ReadInt(const NDArray& a, int64_t i);
// "`what` is not a tensor" unless `o` is one.
absl::Status ExpectTensor(const Object& o, absl::string_view what);
// A value the host reads must be on the host: an error naming `what` otherwise.
absl::Status ExpectHost(const NDArray& a, absl::string_view what);

// What every VM loaded from one executable shares, immutable once Compile returns: the
// verified executable, its parsed primitives, the engine and one compiled kernel per site, the
// shape functions. The engine is only used again for WaitForBackgroundCompiles (its own lock).
struct Program::Impl {
  Executable exe;
  std::unique_ptr<Module> primitives;
  std::unique_ptr<CompileEngine> engine;
  std::vector<std::shared_ptr<const CompiledKernel>> kernels;
  std::vector<std::shared_ptr<const ShapeFunction>> shape_funcs;
  std::vector<int32_t> kernel_outputs;  // per kernel site: how many trailing arguments it writes
  // Device graphs: per function, its stretches, and per pc the stretch starting there (-1).
  std::vector<std::vector<GraphStretch>> stretches;
  std::vector<std::vector<int32_t>> stretch_at;

  absl::Status Compile(const VmOptions& options);
  void FindStretches(int min_launches);
};

struct VirtualMachine::Impl {
  // Declared first, destroyed last: the kernel instances below were made by its kernels.
  std::shared_ptr<const Program> program;
  const Executable& exe;
  const Module& primitives;
  const std::vector<std::shared_ptr<const CompiledKernel>>& kernels;
  const std::vector<std::shared_ptr<const ShapeFunction>>& shape_funcs;
  const std::vector<int32_t>& kernel_outputs;
  VmOptions options;
  // Declaration order is destruction order reversed: devices outlive pools, pools outlive every
  // storage (constants, instances' scratch).
  std::unique_ptr<Device> devices[kNumDevices];
  std::unique_ptr<PoolingAllocator> pools[kNumDevices];
  // Kernels' workspace (KernelContext::workspace), apart from the tensors' pool: a library's
  // scratch request (cuDNN, cuBLASLt, NMS lists; taken and released within one launch) would
  // otherwise borrow a larger cached tensor block, and the tensor that needed it would allocate
  // afresh in the second run. Apart, each pool's request sequence repeats exactly from run to
  // run, so the steady state (from the second run) allocates nothing.
  std::unique_ptr<PoolingAllocator> scratch_pools[kNumDevices];
  KernelContext contexts[kNumDevices];  // what kernels on each device run with
  std::vector<Object> constants;
  std::vector<std::unique_ptr<KernelInstance>> instances;  // per kernel site: this VM's own
  std::vector<TensorArg> arg_scratch;
  std::vector<runtime::LaunchArg> launch_scratch;
  struct FrameCache {
    std::vector<Object> regs;
    bool active = false;
  };
  std::vector<FrameCache> frames;  // per function
  // Per function: how many times it ran since the last reset (the copy ledger's region terms).
  std::vector<int64_t> executions;
  // Copies whose compile-time type has a `?` dim (Instruction::b of kDeviceCopy), per direction
  // since the last reset: the ledger promises their count but not their bytes, so the ledger
  // check takes their bytes out of the device's totals and compares the rest exactly.
  std::array<RunRecord::RuntimeSized, 4> runtime_sized{};
  // kAssume instructions executed since the last reset (RunRecord::assumption_checks).
  int64_t assumption_checks = 0;
  struct Acc {
    int64_t calls = 0;
    double us = 0;
  };
  std::vector<std::vector<Acc>> profile;
  // VmOptions::trace_memory: the byte ranges each instruction reads and writes.
  bool tracing = false;
  MemoryTrace trace;

  // Records a read or write of `a`'s bytes, when the device's allocator holds them (a
  // borrowed host tensor is the caller's memory, not the device's).
  void Trace(const NDArray& a, bool write) {
    if (!tracing || !a.defined() || a.nbytes() == 0) return;
    Device* d = a.device();
    if (!d->Owns(a.data())) return;
    if (write) {
      trace.Write(d->kind(), a.data(), a.nbytes());
    } else {
      trace.Read(d->kind(), a.data(), a.nbytes());
    }
  }
  void TraceRead(const NDArray& a) { Trace(a, /*write=*/false); }
  void TraceWrite(const NDArray& a) { Trace(a, /*write=*/true); }

  Impl(std::shared_ptr<const Program> p, VmOptions o)
      : program(std::move(p)),
        exe(program->impl_->exe),
        primitives(*program->impl_->primitives),
        kernels(program->impl_->kernels),
        shape_funcs(program->impl_->shape_funcs),
        kernel_outputs(program->impl_->kernel_outputs),
        options(std::move(o)),
        tracing(options.trace_memory) {}

  absl::Status EnsureDevice(DeviceKind k);
  Device* dev(DeviceKind k) const { return devices[static_cast<int>(k)].get(); }
  PoolingAllocator* pool(DeviceKind k) const { return pools[static_cast<int>(k)].get(); }

  // One top-level call is one run of every pool's run-time plan (pooling_allocator.cc): the
  // call's requests are recorded, and a call that repeats them is served from the arena.
  void BeginPlannedRun();
  void EndPlannedRun();

  // The per-VM half of loading (the program is compiled): devices, constants placed, one
  // kernel instance per site (which prepacks the site's constants), register files.
  absl::Status Load();

  // Released constants: a cpu constant whose every use is a parameter of a cpu kernel site
  // whose instance absorbed it (KernelInstance::Absorbed: prepacked, the bytes as stored never
  // read again) is released as soon as the last of those instances is made, the VM's object
  // and the program's tensor both, so a model's weights are resident once (packed) rather than
  // twice: BERT-6's process peaked at 1.9x its file at vm-load with both held. Only
  //  - where this VM is the program's only holder (VirtualMachine::Load of an Executable, or of
  //    a Program nobody else holds): a program that other VMs load keeps every constant for
  //    their instances (VmPool holds its Program);
  //  - and for bytes nothing else shares (Tensor::ReleaseIfUnshared): a caller still holding
  //    the IR module the executable came from keeps them, and the program's tensor with them.
  // Registers are assigned once per value (compiler.cc), so a constant's uses are the
  // instructions naming the register its kConst wrote; any use other than a cpu kernel site's
  // constant parameter (a copy, a shape function, a region's operand, a result) keeps it.
  struct ReleasePlan {
    std::vector<int32_t> pending;  // per constant: kernel-site uses whose instance is not made yet
    std::vector<bool> kept;        // per constant: some use needs the bytes
    std::vector<std::vector<std::pair<int32_t, int32_t>>> site_uses;  // per site: (param, constant)
    size_t untrimmed = 0;  // bytes released since the heap was last trimmed (TrimHeap)
  };
  ReleasePlan PlanRelease() const;
  // After site `k`'s instance is made: the constants whose last use it was are released if
  // every instance absorbed them.
  void ReleaseAfter(ReleasePlan& plan, size_t k);
  // glibc keeps freed blocks in its heap (its mmap threshold rises as large blocks are freed,
  // so later weights are heap blocks too): without giving the released weights' pages back
  // while packing, BERT-6's load still peaked 60 MB higher. A trim costs about a millisecond
  // on a model's heap, hence every 16 MiB released and once at the end.
  static constexpr size_t kTrimEvery = size_t{16} << 20;
  static void TrimHeap(ReleasePlan& plan);

  // "constant 3 (%fc1_weight = constant ...)": the IR binding of the first instruction that
  // loads constant `index`, for errors at load.
  std::string ConstantName(size_t index) const;

  std::string Where(const VmFunction& f, size_t pc) const;

  absl::Status CheckArg(const VmFunction& f, int param, const Object& o, int64_t* syms);

  // An optional (present or not) and/or a sequence: each element against the tensor part.
  absl::Status CheckContainerArg(const ArgSpec& spec, const std::string& what, const Object& o,
                                 int64_t* syms);

  absl::Status CheckTensorArg(const ArgSpec& spec, const std::string& what, const NDArray& a,
                              int64_t* syms);

  absl::StatusOr<runtime::Shape> EvalShape(const TypeSpec& t, const int64_t* syms);

  absl::StatusOr<NDArray> HostI64(absl::Span<const int64_t> values, DType dtype);

  // A sequence/optional builtin (ir/builtins.def). Containers share their element objects, so
  // inserting or indexing never touches element data; only a position is read, on the host.
  absl::StatusOr<Object> RunBuiltin(Builtin b, const std::vector<const Object*>& args);

  absl::StatusOr<NDArray> Copy(const NDArray& src, DeviceKind to);
  // `src`'s bytes into `dst` (allocated for them), across devices as the kinds say.
  absl::Status CopyInto(const NDArray& dst, const NDArray& src);

  // ---- Device graphs (the header comment, "Device graphs") ----
  // What a replay compares besides the node's pointers and by-value bytes: the kernel site,
  // and per argument its dtype, rank and dims.
  struct NodeCheck {
    int32_t site = 0;
    std::vector<int64_t> dims;
  };
  struct GraphEntry {
    int64_t eager_runs = 0;  // warm-up runs of this key
    int divergences = 0;
    bool retired = false;    // runs eagerly from now on (capture refused, or kept diverging)
    std::unique_ptr<runtime::DeviceGraph> graph;
    std::vector<runtime::GraphNode> nodes;  // the graph's launches, for checks and fallbacks
    std::vector<NodeCheck> checks;
    uint64_t generation = 0;  // the workspace pool's generation at capture
    // Host staging of the graph's host-to-device copy nodes, refilled before each launch.
    std::vector<std::shared_ptr<void>> staging;
    std::list<std::string>::iterator lru;
  };
  absl::flat_hash_map<std::string, std::unique_ptr<GraphEntry>> graphs;
  std::list<std::string> graph_lru;  // keys, most recently used first
  std::string graph_key_scratch;     // BeginStretch's key, reused
  std::vector<std::vector<GraphStretch>> graph_stats;  // per function, per stretch
  // The arguments a deferred launch's kernel runs with, owned (TensorArg's shape is a span).
  struct OwnedArgs {
    std::vector<std::vector<int64_t>> shapes;
    std::vector<TensorArg> args;
  };
  struct Active {
    enum Mode : uint8_t { kNone, kCapture, kReplay };
    Mode mode = kNone;
    int32_t fi = -1, stretch = -1, end = 0;
    DeviceKind device = DeviceKind::kUnset;
    GraphEntry* entry = nullptr;
    size_t cursor = 0;  // replay: launches matched so far
    std::vector<runtime::GraphNode> nodes;  // capture: launches deferred so far
    std::vector<NodeCheck> checks;
    std::vector<std::shared_ptr<void>> staging;  // capture: the copy nodes' staging
    bool waited = false;  // replay: the graph's last launch has read its staging (WaitGraph)
  } active;

  bool graphs_on() const { return options.device_graphs; }
  GraphStretch& StatsOf() { return graph_stats[active.fi][active.stretch]; }
  void HoldPools(DeviceKind d, bool on) {
    pools[static_cast<int>(d)]->Hold(on);
    scratch_pools[static_cast<int>(d)]->Hold(on);
  }
  static void DropGraph(GraphEntry& e) {
    e.graph.reset();
    e.nodes.clear();
    e.checks.clear();
    e.staging.clear();
  }

  void EvictGraphs(size_t keep);

  // At the first instruction of stretch `si` of function `fi`: eager (warm-up, retired), or
  // deferring its launches to capture a graph or to replay the key's graph.
  void BeginStretch(int32_t fi, int32_t si, const int64_t* syms);

  // Why the launch in arg_scratch/launch_scratch differs from `node` ("" when it matches).
  std::string Differs(int32_t site, const runtime::GraphNode& node, const NodeCheck& check) const;

  // The first `n` of `nodes`, one by one (a stretch that stopped deferring).
  absl::Status LaunchEagerly(const std::vector<runtime::GraphNode>& nodes, size_t n);
  // Deferring ends: the rest of the stretch runs eagerly, the pools give back what they held.
  void StopDeferring();

  // The stretch stops deferring: the launches matched so far run one by one from their nodes,
  // the rest of the stretch eagerly; the key captures again next time (or retires).
  absl::Status Diverge(const std::string& reason);

  // Inside a deferring stretch, a launch on its device: recorded (capture) or checked against
  // its node (replay). False: it was not deferred, and the caller launches it now.
  absl::StatusOr<bool> DeferLaunch(const VmFunction& f, size_t pc, KernelInstance* k,
                                   const KernelContext& ctx);

  // Inside a deferring stretch, a copy onto its device: a copy node of the graph (host data
  // goes through the node's staging, filled now: the graph reads it when it launches). Returns
  // the destination, allocated now as an eager copy's is.
  absl::StatusOr<NDArray> DeferCopy(const VmFunction& f, size_t pc, const NDArray& src);

  // After the stretch's last instruction: capture and launch, or launch the key's graph.
  absl::Status EndStretch();

  // A deferring stretch that must stop now (an allocation failed while the pools held memory
  // back): its deferred launches run, the holds end, the rest of the stretch runs eagerly.
  absl::Status FlushStretch(const std::string& reason);

  // After instruction `pc` of function `fi`: the end of a deferring stretch launches it.
  // Errors name the stretch (they start with "@", so Call keeps them as they are).
  absl::Status MaybeEndStretch(const VmFunction& f, int32_t fi, size_t pc);

  // An error inside a deferring stretch: the call fails, its deferred launches never run.
  void AbandonStretch() {
    if (active.mode != Active::kNone) StopDeferring();
  }

  // An allocation inside a deferring stretch that fails for memory is retried once after the
  // stretch stops holding memory back.
  template <typename F>
  auto AllocateRetrying(F allocate) -> decltype(allocate()) {
    auto r = allocate();
    if (r.ok() || !absl::IsResourceExhausted(r.status()) || active.mode == Active::kNone) return r;
    RETURN_IF_ERROR(FlushStretch("a device allocation inside the stretch ran out of memory"));
    return allocate();
  }

  absl::StatusOr<std::vector<Object>> Call(int32_t fi, std::vector<Object> args, int64_t* syms);
  absl::Status Step(const VmFunction& f, int32_t fi, size_t pc, std::vector<Object>& regs,
                    int64_t* syms, std::vector<Object>* results);
  absl::Status Loop(const VmFunction& f, const Instruction& in, std::vector<Object>& regs,
                    int64_t* syms);
};

}  // namespace hetpass::vm

#endif  // HETPASS_VM_VM_IMPL_H_
