// The VM interpreter (see vm.h).
//
// Program::Compile (once per executable, shared by every VM loaded from it): verify the
// executable, parse its primitive functions, compile one kernel per site through the compile
// engine (structurally equal primitives share the compiled kernel) and lower the shape functions.
// Load (per VM): create the devices and pools, place the constants on their devices, and give
// each site its own kernel instance, which receives the site's constants for prepacking. Counters
// are reset after loading: constant uploads are load-time work, not part of an inference.
//
// Run: a switch over a flat instruction array and a register vector per call frame. Operands
// were range-checked by Verify(), so the loop only checks what depends on run-time data (shapes,
// dtypes, devices of arguments, sizes against storage capacities).
//
// Device graphs (VmOptions::device_graphs; docs/runtime.md, "Device graphs"). A stretch is a
// run of a function's instructions from one accelerator launch to the last launch on the same
// device before anything that makes the host wait for or hand data to the device (a copy in any
// direction), or leaves the function's straight-line code (call, if, loop, ret): between its
// launches only host work that reads no device memory (allocations, host kernels, shape
// functions, kills). Stretches are found once per program from the bytecode alone, so sim and
// cuda make the same ones. When a stretch starts, the VM looks up its key (the function, the
// stretch, the values of every symbol slot) in an LRU cache:
//   - a key seen fewer than graph_warmup times runs eagerly, as without graphs (a library's
//     first call sets up plans and workspace, which capture would refuse);
//   - next, the stretch's launches are deferred: each becomes a GraphNode (its arguments, its
//     by-value bytes, the kernel instance), and at the stretch's end the device captures them as
//     one graph (a CUDA graph) and launches it;
//   - from then on a run of the stretch deferred again, but only to check: each launch is
//     compared with its node (kernel site, every pointer, shape and by-value byte). When all
//     match, one graph launch replaces the launches, and the kernels' host halves (cuDNN's
//     descriptor set-up, argument marshalling) do not run. At the first launch that differs
//     (a pool that moved a tensor, a host value that changed) the matching launches so far run
//     one by one from their nodes, the rest of the stretch runs eagerly, and the key captures
//     afresh next time (three divergences retire it: it runs eagerly from then on).
// Deferring is safe because nothing inside a stretch reads device memory on the host or
// touches it outside the launches; the pools hold the memory they would give back to the
// device (PoolingAllocator::Hold) until the graph is launched, and a graph captured with
// workspace from a pool that has since given memory back is dropped (its pointers may dangle).
#include "passes/vm/vm.h"

#include <malloc.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <list>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/ir/parser.h"
#include "passes/support/status_macros.h"
#include "vm/memory_trace.h"

namespace hetpass::vm {
namespace {

using runtime::Device;
using runtime::NDArray;
using runtime::PoolingAllocator;

// Every device kind of devices.def (kUnset included): a new kind needs no edit here.
constexpr int kNumDevices = 0
#define HETPASS_DEVICE(e, name, accel) +1
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
    ;

absl::StatusOr<int64_t> ReadInt(const NDArray& a, int64_t i) {
  const void* p = static_cast<const char*>(a.data()) + i * DTypeSize(a.dtype);
  if (std::optional<int64_t> v = LoadInteger(a.dtype, p)) return *v;
  switch (a.dtype) {
    case DType::kF32: { float v; std::memcpy(&v, p, 4); return static_cast<int64_t>(v); }
    case DType::kF64: { double v; std::memcpy(&v, p, 8); return static_cast<int64_t>(v); }
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot read ", DTypeName(a.dtype), " as an integer"));
}

absl::Status ExpectTensor(const Object& o, absl::string_view what) {
  if (o.kind != Object::Kind::kTensor) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not a tensor"));
  }
  return absl::OkStatus();
}

absl::Status ExpectHost(const NDArray& a, absl::string_view what) {
  if (a.device()->kind() != DeviceKind::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be on the host (cpu) but lives on ", a.device()->name(),
        ": plan-devices/manifest-alloc should have copied it"));
  }
  return absl::OkStatus();
}

}  // namespace

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

namespace {

// Whether an instruction ends a device-graph stretch (the header's definition): the host waits
// for or hands data to a device, or control leaves straight-line code.
bool EndsStretch(const Instruction& in) {
  switch (in.op) {
    case Opcode::kDeviceCopy:
      // A copy to the host waits for the device; one to an accelerator (host-to-device through
      // the graph's staging, or device-to-device) can be a node of the graph.
      return !IsAccelerator(in.device);
    case Opcode::kCall:
    case Opcode::kIf:
    case Opcode::kLoop:
    case Opcode::kRet:
      return true;
    case Opcode::kArg:
    case Opcode::kConst:
    case Opcode::kAllocStorage:
    case Opcode::kAllocTensor:
    case Opcode::kAllocTensorDyn:
    case Opcode::kInvokeKernel:
    case Opcode::kShapeFunc:
    case Opcode::kShapeOf:
    case Opcode::kTuple:
    case Opcode::kGetItem:
    case Opcode::kMove:
    case Opcode::kKill:
    case Opcode::kBuiltin:
    case Opcode::kAssume:
      return false;
  }
  return true;
}

}  // namespace

void Program::Impl::FindStretches(int min_launches) {
  stretches.assign(exe.functions.size(), {});
  stretch_at.assign(exe.functions.size(), {});
  for (size_t fi = 0; fi < exe.functions.size(); ++fi) {
    const std::vector<Instruction>& code = exe.functions[fi].code;
    stretch_at[fi].assign(code.size(), -1);
    GraphStretch open;
    auto close = [&]() {
      if (open.launches >= std::max(1, min_launches)) {
        stretch_at[fi][open.begin] = static_cast<int32_t>(stretches[fi].size());
        stretches[fi].push_back(open);
      }
      open = GraphStretch();
    };
    for (size_t pc = 0; pc < code.size(); ++pc) {
      const Instruction& in = code[pc];
      if (EndsStretch(in)) {
        close();
        continue;
      }
      if (in.op != Opcode::kInvokeKernel || !IsAccelerator(in.device)) continue;
      if (open.launches > 0 && open.device != in.device) close();
      if (open.launches == 0) {
        open.function = exe.functions[fi].name;
        open.begin = static_cast<int32_t>(pc);
        open.device = in.device;
      }
      open.end = static_cast<int32_t>(pc) + 1;  // up to the last launch
      ++open.launches;
    }
    close();
  }
}

absl::Status Program::Impl::Compile(const VmOptions& options) {
  RETURN_IF_ERROR(exe.Verify());
  ParseOptions po;
  po.source_name = "<executable primitives>";
  ASSIGN_OR_RETURN(primitives, ParseModule(exe.primitives, po));
  engine = std::make_unique<CompileEngine>(options.engine);
  for (const KernelSite& site : exe.kernels) {
    const Function* f = primitives->FindFunction(site.primitive);
    if (f == nullptr) {
      return absl::DataLossError(absl::StrCat("kernel site names @", site.primitive,
                                              ", which the executable does not contain"));
    }
    std::shared_ptr<const CompiledKernel> kernel;
    if (options.kernel_factory) {
      ASSIGN_OR_RETURN(kernel, options.kernel_factory(*f, site.device));
    } else {
      ASSIGN_OR_RETURN(kernel, engine->Lower(*f, site.device));
    }
    kernels.push_back(std::move(kernel));
  }
  for (const ShapeFuncSite& site : exe.shape_funcs) {
    const Function* f = primitives->FindFunction(site.primitive);
    if (f == nullptr) {
      return absl::DataLossError(absl::StrCat("shape function site names @", site.primitive,
                                              ", which the executable does not contain"));
    }
    ASSIGN_OR_RETURN(auto sf, engine->LowerShapeFunction(*f, site.mask));
    shape_funcs.push_back(std::move(sf));
  }
  // Kernel arities are checked once here, so Invoke need not.
  kernel_outputs.assign(exe.kernels.size(), 0);
  for (size_t k = 0; k < exe.kernels.size(); ++k) {
    kernel_outputs[k] = static_cast<int32_t>(
        primitives->FindFunction(exe.kernels[k].primitive)->body().results().size());
  }
  FindStretches(options.graph_min_launches);
  for (const VmFunction& f : exe.functions) {
    for (const Instruction& in : f.code) {
      if (in.op != Opcode::kInvokeKernel) continue;
      const Function* p = primitives->FindFunction(exe.kernels[in.a].primitive);
      const int want = p->body().num_params() + static_cast<int>(p->body().results().size());
      if (in.count != want) {
        return absl::InvalidArgumentError(absl::StrCat(
            "@", f.name, ": kernel @", p->name(), " takes ", want, " arguments, the call passes ",
            in.count));
      }
    }
  }
  return absl::OkStatus();
}

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;

absl::StatusOr<std::shared_ptr<const Program>> Program::Compile(Executable exe,
                                                                const VmOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->exe = std::move(exe);
  RETURN_IF_ERROR(impl->Compile(options));
  return std::shared_ptr<const Program>(new Program(std::move(impl)));
}

const Executable& Program::executable() const { return impl_->exe; }

absl::Status Program::WaitForKernels() const { return impl_->engine->WaitForBackgroundCompiles(); }

int64_t Program::KernelsPending() const { return impl_->engine->background_pending(); }

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

  absl::Status EnsureDevice(DeviceKind k) {
    const int i = static_cast<int>(k);
    if (k == DeviceKind::kUnset) return absl::InvalidArgumentError("instruction without a device");
    if (devices[i]) return absl::OkStatus();
    if (k == DeviceKind::kSim) {
      ASSIGN_OR_RETURN(devices[i], runtime::MakeSimDevice(options.sim));
    } else {
      ASSIGN_OR_RETURN(devices[i], runtime::MakeDevice(k));
    }
    if (options.device_memory_limit > 0 && IsAccelerator(k)) {
      devices[i]->SetMemoryLimit(options.device_memory_limit);
    }
    pools[i] = std::make_unique<PoolingAllocator>(devices[i].get());
    scratch_pools[i] = std::make_unique<PoolingAllocator>(devices[i].get());
    contexts[i] = KernelContext{devices[i].get(), devices[i]->native_queue(), scratch_pools[i].get()};
    return absl::OkStatus();
  }
  Device* dev(DeviceKind k) const { return devices[static_cast<int>(k)].get(); }
  PoolingAllocator* pool(DeviceKind k) const { return pools[static_cast<int>(k)].get(); }

  // One top-level call is one run of every pool's run-time plan (pooling_allocator.cc): the
  // call's requests are recorded, and a call that repeats them is served from the arena.
  void BeginPlannedRun() {
    for (int i = 0; i < kNumDevices; ++i) {
      if (pools[i]) pools[i]->BeginRun();
      if (scratch_pools[i]) scratch_pools[i]->BeginRun();
    }
  }
  void EndPlannedRun() {
    for (int i = 0; i < kNumDevices; ++i) {
      if (pools[i]) pools[i]->EndRun();
      if (scratch_pools[i]) scratch_pools[i]->EndRun();
    }
  }

  // The per-VM half of loading (the program is compiled): devices, constants placed, one
  // kernel instance per site (which prepacks the site's constants), register files.
  absl::Status Load() {
    RETURN_IF_ERROR(EnsureDevice(DeviceKind::kCpu));
    for (const VmFunction& f : exe.functions) {
      for (const ArgSpec& a : f.params) RETURN_IF_ERROR(EnsureDevice(a.device));
      for (const Instruction& in : f.code) {
        if (in.device != DeviceKind::kUnset) RETURN_IF_ERROR(EnsureDevice(in.device));
      }
    }
    for (const ConstantEntry& c : exe.constants) {
      RETURN_IF_ERROR(EnsureDevice(c.device));
      if (c.value.released()) {
        return absl::FailedPreconditionError(absl::StrCat(
            ConstantName(constants.size()),
            " was released after the first VM loaded from this program prepacked it (that VM "
            "was the program's only holder: docs/runtime.md, \"Released constants\"); to load "
            "several VMs, hold the Program (Program::Compile) and load each from it"));
      }
      absl::StatusOr<NDArray> a = runtime::FromHost(c.value, pool(c.device));
      if (!a.ok()) {
        return absl::Status(a.status().code(),
                            absl::StrCat("placing ", ConstantName(constants.size()), " (",
                                         c.value.type().ToString(), ") on ", DeviceName(c.device),
                                         ": ", a.status().message()));
      }
      constants.push_back(Object::FromTensor(*std::move(a)));
    }
    ReleasePlan release = PlanRelease();
    for (size_t k = 0; k < exe.kernels.size(); ++k) {
      const KernelSite& site = exe.kernels[k];
      const Function* f = primitives.FindFunction(site.primitive);
      std::vector<const Tensor*> consts(f->body().num_params(), nullptr);
      for (size_t i = 0; i < site.constants.size() && i < consts.size(); ++i) {
        if (site.constants[i] >= 0) consts[i] = &exe.constants[site.constants[i]].value;
      }
      ASSIGN_OR_RETURN(auto instance,
                       kernels[k]->Instantiate(contexts[static_cast<int>(site.device)], consts));
      instances.push_back(std::move(instance));
      ReleaseAfter(release, k);
    }
    TrimHeap(release);
    frames.resize(exe.functions.size());
    graph_stats = program->impl_->stretches;
    executions.assign(exe.functions.size(), 0);
    profile.resize(exe.functions.size());
    for (size_t i = 0; i < exe.functions.size(); ++i) profile[i].resize(exe.functions[i].code.size());
    for (auto& d : devices) {
      if (d) d->ResetCounters();
    }
    return absl::OkStatus();
  }

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
  ReleasePlan PlanRelease() const {
    ReleasePlan plan;
    plan.pending.assign(exe.constants.size(), 0);
    plan.kept.assign(exe.constants.size(), program.use_count() != 1);
    plan.site_uses.resize(exe.kernels.size());
    if (program.use_count() != 1) return plan;  // a shared program keeps everything: no scan
    for (size_t c = 0; c < exe.constants.size(); ++c) {
      if (exe.constants[c].device != DeviceKind::kCpu) plan.kept[c] = true;
    }
    absl::flat_hash_map<int32_t, int32_t> loaded;  // register -> the constant loaded into it
    for (const VmFunction& f : exe.functions) {
      loaded.clear();
      for (const Instruction& in : f.code) {
        if (in.op == Opcode::kConst) loaded[in.dst] = in.a;
      }
      if (loaded.empty()) continue;
      auto keep = [&](int32_t r) {
        if (auto it = loaded.find(r); it != loaded.end()) plan.kept[it->second] = true;
      };
      for (const Instruction& in : f.code) {
        // The registers an instruction reads through its fields (as Executable::Verify checks
        // them); no default, so a new opcode must say which of its fields are registers.
        switch (in.op) {
          case Opcode::kAllocTensor:
          case Opcode::kAllocTensorDyn:
          case Opcode::kDeviceCopy:
          case Opcode::kShapeOf:
          case Opcode::kMove:
          case Opcode::kGetItem:
            keep(in.a);
            break;
          case Opcode::kIf:
            keep(in.c);
            break;
          case Opcode::kArg:
          case Opcode::kConst:
          case Opcode::kAllocStorage:
          case Opcode::kInvokeKernel:
          case Opcode::kShapeFunc:
          case Opcode::kTuple:
          case Opcode::kBuiltin:
          case Opcode::kCall:
          case Opcode::kLoop:
          case Opcode::kRet:
          case Opcode::kKill:
          case Opcode::kAssume:
            break;
        }
        if (in.op == Opcode::kKill) continue;  // the end of a value's life reads nothing
        if (in.op != Opcode::kInvokeKernel) {
          // The whole operand range: entries that are not registers (a loop's scan types) can
          // only keep a constant, never release one.
          const int32_t end = in.list + in.count + in.count2 + (in.op == Opcode::kIf ? in.dst : 0);
          for (int32_t i = in.list; i < end; ++i) keep(f.operands[i]);
          continue;
        }
        const KernelSite& site = exe.kernels[in.a];
        for (int32_t i = 0; i < in.count; ++i) {
          auto it = loaded.find(f.operands[in.list + i]);
          if (it == loaded.end()) continue;
          const int32_t c = it->second;
          if (site.device == DeviceKind::kCpu && i < static_cast<int32_t>(site.constants.size()) &&
              site.constants[i] == c) {
            plan.site_uses[in.a].emplace_back(i, c);
            ++plan.pending[c];
          } else {
            plan.kept[c] = true;
          }
        }
      }
    }
    return plan;
  }
  // After site `k`'s instance is made: the constants whose last use it was are released if
  // every instance absorbed them.
  void ReleaseAfter(ReleasePlan& plan, size_t k) {
    for (const auto& [param, c] : plan.site_uses[k]) {
      if (!instances[k]->Absorbed(param)) plan.kept[c] = true;
      if (--plan.pending[c] > 0 || plan.kept[c]) continue;
      NDArray& a = constants[c].tensor;
      // The VM's object first: it borrows the program's bytes (FromHost keeps a Tensor alive).
      a.storage = std::make_shared<runtime::Storage>(a.device(), nullptr, 0, nullptr);
      a.offset = 0;
      Tensor& value = program->impl_->exe.constants[c].value;  // this VM's alone
      const size_t bytes = value.nbytes();
      if (value.ReleaseIfUnshared()) plan.untrimmed += bytes;
    }
    if (plan.untrimmed >= kTrimEvery) TrimHeap(plan);
  }
  // glibc keeps freed blocks in its heap (its mmap threshold rises as large blocks are freed,
  // so later weights are heap blocks too): without giving the released weights' pages back
  // while packing, BERT-6's load still peaked 60 MB higher. A trim costs about a millisecond
  // on a model's heap, hence every 16 MiB released and once at the end.
  static constexpr size_t kTrimEvery = size_t{16} << 20;
  static void TrimHeap(ReleasePlan& plan) {
#if defined(__GLIBC__)
    if (plan.untrimmed > 0) malloc_trim(0);
#endif
    plan.untrimmed = 0;
  }

  // "constant 3 (%fc1_weight = constant ...)": the IR binding of the first instruction that
  // loads constant `index`, for errors at load.
  std::string ConstantName(size_t index) const {
    for (const VmFunction& f : exe.functions) {
      for (size_t pc = 0; pc < f.code.size(); ++pc) {
        if (f.code[pc].op == Opcode::kConst && f.code[pc].a == static_cast<int32_t>(index) &&
            pc < f.comments.size()) {
          return absl::StrCat("constant ", index, " (", f.comments[pc], ")");
        }
      }
    }
    return absl::StrCat("constant ", index);
  }

  std::string Where(const VmFunction& f, size_t pc) const {
    return absl::StrCat("@", f.name, " pc ", pc, " (", OpcodeName(f.code[pc].op), " ",
                        pc < f.comments.size() ? f.comments[pc] : "", "): ");
  }

  absl::Status CheckArg(const VmFunction& f, int param, const Object& o, int64_t* syms) {
    const ArgSpec& spec = f.params[param];
    const std::string what = absl::StrCat("argument ", param, " (%", spec.name, ") of @", f.name);
    if (spec.container != ArgSpec::kTensor) return CheckContainerArg(spec, what, o, syms);
    if (o.kind != Object::Kind::kTensor) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": expected a tensor ", spec.type_text));
    }
    return CheckTensorArg(spec, what, o.tensor, syms);
  }

  // An optional (present or not) and/or a sequence: each element against the tensor part.
  absl::Status CheckContainerArg(const ArgSpec& spec, const std::string& what, const Object& o,
                                 int64_t* syms) {
    const Object* seq = &o;
    if (spec.container == ArgSpec::kOptional || spec.container == ArgSpec::kOptionalSequence) {
      if (o.kind != Object::Kind::kOptional || o.fields == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": expected an optional ", spec.type_text));
      }
      if (o.fields->empty()) return absl::OkStatus();
      seq = &(*o.fields)[0];
      if (spec.container == ArgSpec::kOptional) {
        if (seq->kind != Object::Kind::kTensor) {
          return absl::InvalidArgumentError(absl::StrCat(what, ": expected ", spec.type_text));
        }
        return CheckTensorArg(spec, what, seq->tensor, syms);
      }
    }
    if (seq->kind != Object::Kind::kSequence || seq->fields == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": expected a sequence ", spec.type_text));
    }
    for (size_t k = 0; k < seq->fields->size(); ++k) {
      const Object& e = (*seq->fields)[k];
      const std::string elem = absl::StrCat(what, " element ", k);
      if (e.kind != Object::Kind::kTensor) {
        return absl::InvalidArgumentError(absl::StrCat(elem, ": not a tensor"));
      }
      if (spec.any_element) {
        if (e.tensor.device()->kind() != spec.device) {
          return absl::InvalidArgumentError(absl::StrCat(elem, ": expected on ", DeviceName(spec.device)));
        }
        continue;
      }
      RETURN_IF_ERROR(CheckTensorArg(spec, elem, e.tensor, syms));
    }
    return absl::OkStatus();
  }

  absl::Status CheckTensorArg(const ArgSpec& spec, const std::string& what, const NDArray& a,
                              int64_t* syms) {
    auto mismatch = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": expected ", spec.type_text, ", got ",
                                                     a.TypeString(), " (", why, ")"));
    };
    if (a.dtype != spec.dtype) return mismatch("dtype");
    if (a.device()->kind() != spec.device) return mismatch("device");
    if (a.shape.size() != spec.dims.size()) return mismatch("rank");
    for (size_t i = 0; i < spec.dims.size(); ++i) {
      const ArgDim& d = spec.dims[i];
      const int64_t got = a.shape[i];
      switch (d.kind) {
        case ArgDim::kAny: break;
        case ArgDim::kStatic:
          if (got != d.value) return mismatch(absl::StrCat("dim ", i, " is ", got, ", expected ", d.value));
          break;
        case ArgDim::kBind:
          syms[d.value] = got;
          break;
        case ArgDim::kCheck: {
          ASSIGN_OR_RETURN(int64_t want, EvalDim(exe.dims[d.value], {syms, exe.symbols.size()}));
          if (got != want) {
            return mismatch(absl::StrCat("dim ", i, " is ", got, ", the other arguments make it ", want));
          }
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<runtime::Shape> EvalShape(const TypeSpec& t, const int64_t* syms) {
    runtime::Shape s;
    for (int32_t d : t.dims) {
      ASSIGN_OR_RETURN(int64_t v, EvalDim(exe.dims[d], {syms, exe.symbols.size()}));
      if (v < 0) return absl::InvalidArgumentError(absl::StrCat("negative dim ", v));
      s.push_back(v);
    }
    return s;
  }

  absl::StatusOr<NDArray> HostI64(absl::Span<const int64_t> values, DType dtype) {
    ASSIGN_OR_RETURN(NDArray a, runtime::AllocateTensor(pool(DeviceKind::kCpu), dtype,
                                                        {static_cast<int64_t>(values.size())}));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::kI32) {
        static_cast<int32_t*>(a.data())[i] = static_cast<int32_t>(values[i]);
      } else {
        static_cast<int64_t*>(a.data())[i] = values[i];
      }
    }
    TraceWrite(a);
    return a;
  }

  // A sequence/optional builtin (ir/builtins.def). Containers share their element objects, so
  // inserting or indexing never touches element data; only a position is read, on the host.
  absl::StatusOr<Object> RunBuiltin(Builtin b, const std::vector<const Object*>& args) {
    const absl::string_view name = BuiltinName(b);
    auto container = [&](int i, Object::Kind kind) -> absl::StatusOr<const std::vector<Object>*> {
      const Object& o = *args[i];
      if (o.kind != kind || o.fields == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": operand ", i, " is not ", kind == Object::Kind::kSequence ? "a sequence" : "an optional"));
      }
      return o.fields.get();
    };
    auto make = [](Object::Kind kind, std::vector<Object> fields) {
      Object o;
      o.kind = kind;
      o.fields = std::make_shared<std::vector<Object>>(std::move(fields));
      return o;
    };
    // Reads position operand `i` and resolves it against `size` (ONNX: -size..size-1, or up to
    // size inclusive where inserting may append).
    auto position = [&](int i, int64_t size, bool allow_end) -> absl::StatusOr<int64_t> {
      RETURN_IF_ERROR(ExpectTensor(*args[i], absl::StrCat(name, " position")));
      const NDArray& a = args[i]->tensor;
      RETURN_IF_ERROR(ExpectHost(a, absl::StrCat(name, " position")));
      if (a.num_elements() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": position has ", a.num_elements(), " elements, expected 1"));
      }
      TraceRead(a);
      ASSIGN_OR_RETURN(int64_t pos, ReadInt(a, 0));
      const int64_t hi = allow_end ? size : size - 1;
      if (pos < -size || pos > hi) {
        return absl::OutOfRangeError(absl::StrFormat(
            "%s: position %d is out of range for a sequence of length %d (valid: %d..%d)", name,
            pos, size, -size, hi));
      }
      return pos < 0 ? pos + size : pos;
    };
    auto host_scalar = [&](DType dtype, int64_t v) -> absl::StatusOr<Object> {
      ASSIGN_OR_RETURN(NDArray a, runtime::AllocateTensor(pool(DeviceKind::kCpu), dtype, {}));
      if (dtype == DType::kBool) {
        *static_cast<uint8_t*>(a.data()) = v != 0;
      } else {
        *static_cast<int64_t*>(a.data()) = v;
      }
      TraceWrite(a);
      return Object::FromTensor(std::move(a));
    };
    switch (b) {
      case Builtin::kSeqConstruct: {
        std::vector<Object> fields;
        for (const Object* o : args) fields.push_back(*o);
        return make(Object::Kind::kSequence, std::move(fields));
      }
      case Builtin::kSeqEmpty:
        return make(Object::Kind::kSequence, {});
      case Builtin::kSeqInsert: {
        ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
        const int64_t size = static_cast<int64_t>(s->size());
        int64_t pos = size;
        if (args.size() == 3) {
          ASSIGN_OR_RETURN(pos, position(2, size, /*allow_end=*/true));
        }
        std::vector<Object> fields = *s;
        fields.insert(fields.begin() + pos, *args[1]);
        return make(Object::Kind::kSequence, std::move(fields));
      }
      case Builtin::kSeqAt: {
        ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
        ASSIGN_OR_RETURN(int64_t pos, position(1, static_cast<int64_t>(s->size()), false));
        return (*s)[pos];
      }
      case Builtin::kSeqErase: {
        ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
        const int64_t size = static_cast<int64_t>(s->size());
        if (size == 0) return absl::OutOfRangeError(absl::StrCat(name, ": the sequence is empty"));
        int64_t pos = size - 1;
        if (args.size() == 2) {
          ASSIGN_OR_RETURN(pos, position(1, size, false));
        }
        std::vector<Object> fields = *s;
        fields.erase(fields.begin() + pos);
        return make(Object::Kind::kSequence, std::move(fields));
      }
      case Builtin::kSeqLength: {
        ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
        return host_scalar(DType::kI64, static_cast<int64_t>(s->size()));
      }
      case Builtin::kOptSome:
        return make(Object::Kind::kOptional, {*args[0]});
      case Builtin::kOptNone:
        return make(Object::Kind::kOptional, {});
      case Builtin::kOptHas: {
        ASSIGN_OR_RETURN(const std::vector<Object>* o, container(0, Object::Kind::kOptional));
        return host_scalar(DType::kBool, o->empty() ? 0 : 1);
      }
      case Builtin::kOptGet: {
        ASSIGN_OR_RETURN(const std::vector<Object>* o, container(0, Object::Kind::kOptional));
        if (o->empty()) {
          return absl::FailedPreconditionError(absl::StrCat(name, ": the optional holds no value"));
        }
        return (*o)[0];
      }
    }
    return absl::InternalError("bad builtin");
  }

  absl::StatusOr<NDArray> Copy(const NDArray& src, DeviceKind to) {
    ASSIGN_OR_RETURN(NDArray dst, runtime::AllocateTensor(pool(to), src.dtype, src.shape));
    RETURN_IF_ERROR(CopyInto(dst, src));
    return dst;
  }
  // `src`'s bytes into `dst` (allocated for them), across devices as the kinds say.
  absl::Status CopyInto(const NDArray& dst, const NDArray& src) {
    const size_t n = src.nbytes();
    const DeviceKind from = src.device()->kind();
    const DeviceKind to = dst.device()->kind();
    if (from == DeviceKind::kCpu && to == DeviceKind::kCpu) {
      if (n) std::memcpy(dst.data(), src.data(), n);
    } else if (from == DeviceKind::kCpu) {
      RETURN_IF_ERROR(dst.device()->CopyHostToDevice(dst.data(), src.data(), n));
    } else if (to == DeviceKind::kCpu) {
      RETURN_IF_ERROR(src.device()->CopyDeviceToHost(dst.data(), src.data(), n));
      // The host reads the value next: it waits here (one counted sync per device-to-host
      // copy, the ledger's promise).
      RETURN_IF_ERROR(src.device()->Synchronize());
    } else if (from == to) {
      RETURN_IF_ERROR(dst.device()->CopyDeviceToDevice(dst.data(), src.data(), n));
    } else {
      return absl::UnimplementedError(absl::StrCat("copy from ", DeviceName(from), " to ",
                                                   DeviceName(to), " (two accelerators)"));
    }
    return absl::OkStatus();
  }

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

  void EvictGraphs(size_t keep) {
    while (graphs.size() > keep && !graph_lru.empty()) {
      graphs.erase(graph_lru.back());
      graph_lru.pop_back();
    }
  }

  // At the first instruction of stretch `si` of function `fi`: eager (warm-up, retired), or
  // deferring its launches to capture a graph or to replay the key's graph.
  void BeginStretch(int32_t fi, int32_t si, const int64_t* syms) {
    const GraphStretch& st = program->impl_->stretches[fi][si];
    GraphStretch& stats = graph_stats[fi][si];
    const size_t nsyms = exe.symbols.size();
    std::string key(2 * sizeof(int32_t) + nsyms * sizeof(int64_t), '\0');
    std::memcpy(key.data(), &fi, sizeof(int32_t));
    std::memcpy(key.data() + sizeof(int32_t), &si, sizeof(int32_t));
    if (nsyms > 0) std::memcpy(key.data() + 2 * sizeof(int32_t), syms, nsyms * sizeof(int64_t));
    GraphEntry* e = nullptr;
    if (auto it = graphs.find(key); it != graphs.end()) {
      e = it->second.get();
      graph_lru.splice(graph_lru.begin(), graph_lru, e->lru);
    } else {
      EvictGraphs(static_cast<size_t>(std::max(1, options.graph_cache_size)) - 1);
      graph_lru.push_front(key);
      auto entry = std::make_unique<GraphEntry>();
      entry->lru = graph_lru.begin();
      e = entry.get();
      graphs.emplace(std::move(key), std::move(entry));
    }
    const uint64_t generation = scratch_pools[static_cast<int>(st.device)]->generation();
    if (e->graph != nullptr && e->generation != generation) {
      DropGraph(*e);
      stats.note = "captured again: the workspace pool gave memory back to the device since the capture";
    }
    Active::Mode mode = Active::kCapture;
    if (e->retired) {
      mode = Active::kNone;
    } else if (e->graph != nullptr) {
      mode = Active::kReplay;
    } else if (e->eager_runs < options.graph_warmup) {
      ++e->eager_runs;
      mode = Active::kNone;
    }
    if (mode == Active::kNone) {
      ++stats.eager;
      return;
    }
    active.mode = mode;
    active.fi = fi;
    active.stretch = si;
    active.end = st.end;
    active.device = st.device;
    active.entry = e;
    active.cursor = 0;
    active.nodes.clear();
    active.checks.clear();
    active.staging.clear();
    active.waited = false;
    HoldPools(st.device, true);
  }

  // Why the launch in arg_scratch/launch_scratch differs from `node` ("" when it matches).
  std::string Differs(int32_t site, const runtime::GraphNode& node, const NodeCheck& check) const {
    if (site != check.site) return "another kernel";
    if (node.args.size() != launch_scratch.size()) return "another number of arguments";
    size_t value = 0, dim = 0;
    for (size_t i = 0; i < launch_scratch.size(); ++i) {
      const runtime::LaunchArg& now = launch_scratch[i];
      const runtime::LaunchArg& then = node.args[i];
      if (now.by_value != then.by_value || now.bytes != then.bytes) {
        return absl::StrCat("argument ", i, " has another size (", now.bytes, " bytes, captured ",
                            then.bytes, ")");
      }
      if (now.by_value) {
        if (now.bytes > 0 && std::memcmp(now.data, node.values.data() + value, now.bytes) != 0) {
          return absl::StrCat("by-value argument ", i, " holds other values");
        }
        value += now.bytes;
      } else if (now.data != then.data) {
        return absl::StrCat("argument ", i, " is at another address");
      }
      const TensorArg& t = arg_scratch[i];
      const int64_t rank = static_cast<int64_t>(t.shape.size());
      bool same = check.dims[dim] == static_cast<int64_t>(t.dtype) && check.dims[dim + 1] == rank;
      for (int64_t r = 0; same && r < rank; ++r) same = check.dims[dim + 2 + r] == t.shape[r];
      if (!same) return absl::StrCat("argument ", i, " has another dtype or shape");
      dim += 2 + static_cast<size_t>(rank);
    }
    return "";
  }

  // The first `n` of `nodes`, one by one (a stretch that stopped deferring).
  absl::Status LaunchEagerly(const std::vector<runtime::GraphNode>& nodes, size_t n) {
    absl::Status st;
    Device* d = dev(active.device);
    for (size_t i = 0; i < n && st.ok(); ++i) st = d->LaunchNode(nodes[i]);
    return st;
  }
  // Deferring ends: the rest of the stretch runs eagerly, the pools give back what they held.
  void StopDeferring() {
    active.mode = Active::kNone;
    active.nodes.clear();
    active.checks.clear();
    active.staging.clear();
    HoldPools(active.device, false);
  }

  // The stretch stops deferring: the launches matched so far run one by one from their nodes,
  // the rest of the stretch eagerly; the key captures again next time (or retires).
  absl::Status Diverge(const std::string& reason) {
    GraphEntry& e = *active.entry;
    GraphStretch& stats = StatsOf();
    ++stats.fallbacks;
    stats.note = absl::StrCat("fell back: ", reason);
    absl::Status st = LaunchEagerly(e.nodes, active.cursor);
    DropGraph(e);
    if (++e.divergences >= 3) {
      e.retired = true;
      stats.note = absl::StrCat("runs eagerly after 3 fallbacks; the last: ", reason);
    }
    StopDeferring();
    return st;
  }

  // Inside a deferring stretch, a launch on its device: recorded (capture) or checked against
  // its node (replay). False: it was not deferred, and the caller launches it now.
  absl::StatusOr<bool> DeferLaunch(const VmFunction& f, size_t pc, KernelInstance* k,
                                   const KernelContext& ctx) {
    const Instruction& in = f.code[pc];
    if (active.mode == Active::kReplay) {
      GraphEntry& e = *active.entry;
      std::string why = active.cursor < e.nodes.size()
                            ? Differs(in.a, e.nodes[active.cursor], e.checks[active.cursor])
                            : "the stretch made more launches than its graph holds";
      if (why.empty()) {
        ++active.cursor;
        return true;
      }
      RETURN_IF_ERROR(Diverge(absl::StrCat("launch ", active.cursor, ": ", why)));
      return false;
    }
    runtime::GraphNode node;
    node.args = launch_scratch;
    node.label = Where(f, pc);
    node.label.resize(node.label.size() - 2);  // Where's ": "
    auto owned = std::make_shared<OwnedArgs>();
    owned->args = arg_scratch;
    owned->shapes.resize(arg_scratch.size());
    NodeCheck check;
    check.site = in.a;
    for (size_t i = 0; i < arg_scratch.size(); ++i) {
      const runtime::LaunchArg& a = launch_scratch[i];
      if (a.by_value && a.bytes > 0) {
        const char* p = static_cast<const char*>(a.data);
        node.values.insert(node.values.end(), p, p + a.bytes);
      }
      owned->shapes[i].assign(arg_scratch[i].shape.begin(), arg_scratch[i].shape.end());
      owned->args[i].shape = owned->shapes[i];
      check.dims.push_back(static_cast<int64_t>(arg_scratch[i].dtype));
      check.dims.push_back(static_cast<int64_t>(arg_scratch[i].shape.size()));
      check.dims.insert(check.dims.end(), arg_scratch[i].shape.begin(), arg_scratch[i].shape.end());
    }
    node.kernel = [k, c = &ctx, owned](absl::Span<const runtime::LaunchArg> staged) {
      for (size_t i = 0; i < owned->args.size(); ++i) owned->args[i].data = staged[i].data;
      return k->Run(*c, owned->args);
    };
    active.nodes.push_back(std::move(node));
    active.checks.push_back(std::move(check));
    return true;
  }

  // Inside a deferring stretch, a copy onto its device: a copy node of the graph (host data
  // goes through the node's staging, filled now: the graph reads it when it launches). Returns
  // the destination, allocated now as an eager copy's is.
  absl::StatusOr<NDArray> DeferCopy(const VmFunction& f, size_t pc, const NDArray& src) {
    const Instruction& in = f.code[pc];
    ASSIGN_OR_RETURN(NDArray dst, AllocateRetrying([&]() {
                       return runtime::AllocateTensor(pool(in.device), src.dtype, src.shape);
                     }));
    const bool from_host = src.device()->kind() == DeviceKind::kCpu;
    const auto kind = from_host ? runtime::GraphNode::Kind::kCopyHostToDevice
                                : runtime::GraphNode::Kind::kCopyDeviceToDevice;
    const size_t bytes = src.nbytes();
    NodeCheck check;
    check.site = -1 - static_cast<int32_t>(kind);  // no kernel site is negative
    check.dims.push_back(static_cast<int64_t>(src.dtype));
    check.dims.push_back(static_cast<int64_t>(src.shape.size()));
    check.dims.insert(check.dims.end(), src.shape.begin(), src.shape.end());
    if (active.mode == Active::kReplay) {
      GraphEntry& e = *active.entry;
      std::string why;
      if (active.cursor >= e.nodes.size()) {
        why = "the stretch made more launches and copies than its graph holds";
      } else {
        const runtime::GraphNode& node = e.nodes[active.cursor];
        if (e.checks[active.cursor].site != check.site || e.checks[active.cursor].dims != check.dims) {
          why = "a copy of another kind or shape";
        } else if (node.dst != dst.data() || node.bytes != bytes || (!from_host && node.src != src.data())) {
          why = "a copy between other addresses";
        }
      }
      if (why.empty()) {
        const runtime::GraphNode& node = e.nodes[active.cursor];
        if (from_host && bytes > 0) {
          if (!active.waited) RETURN_IF_ERROR(dev(in.device)->WaitGraph(*e.graph));
          active.waited = true;
          std::memcpy(const_cast<void*>(node.src), src.data(), bytes);
        }
        ++active.cursor;
        return dst;
      }
      RETURN_IF_ERROR(Diverge(absl::StrCat("copy ", active.cursor, ": ", why)));
      RETURN_IF_ERROR(CopyInto(dst, src));
      return dst;
    }
    runtime::GraphNode node;
    node.kind = kind;
    node.dst = dst.data();
    node.bytes = bytes;
    node.label = Where(f, pc);
    node.label.resize(node.label.size() - 2);  // Where's ": "
    if (from_host) {
      ASSIGN_OR_RETURN(std::shared_ptr<void> staging, dev(in.device)->AllocateStaging(bytes));
      if (bytes > 0) std::memcpy(staging.get(), src.data(), bytes);
      node.src = staging.get();
      active.staging.push_back(std::move(staging));
    } else {
      node.src = src.data();
    }
    active.nodes.push_back(std::move(node));
    active.checks.push_back(std::move(check));
    return dst;
  }

  // After the stretch's last instruction: capture and launch, or launch the key's graph.
  absl::Status EndStretch() {
    GraphStretch& stats = StatsOf();
    GraphEntry& e = *active.entry;
    Device* d = dev(active.device);
    const auto t0 = std::chrono::steady_clock::now();
    absl::Status st;
    if (active.mode == Active::kReplay) {
      if (active.cursor != e.nodes.size()) {
        return Diverge(absl::StrCat("the stretch made ", active.cursor, " launches, its graph holds ",
                                    e.nodes.size()));
      }
      st = d->LaunchGraph(*e.graph);
      ++stats.replays;
    } else {
      const uint64_t generation = scratch_pools[static_cast<int>(active.device)]->generation();
      absl::StatusOr<std::unique_ptr<runtime::DeviceGraph>> g = d->CaptureGraph(active.nodes);
      if (g.ok()) {
        e.graph = *std::move(g);
        e.nodes = std::move(active.nodes);
        e.checks = std::move(active.checks);
        e.staging = std::move(active.staging);
        e.generation = generation;
        st = d->LaunchGraph(*e.graph);
        ++stats.captures;
      } else if (absl::IsFailedPrecondition(g.status()) || absl::IsUnimplemented(g.status())) {
        // Not capturable on this device: eager from now on, with the reason in the stats.
        e.retired = true;
        stats.note = absl::StrCat("capture refused: ", g.status().message());
        ++stats.eager;
        st = LaunchEagerly(active.nodes, active.nodes.size());
      } else {
        st = g.status();
      }
    }
    StopDeferring();
    stats.graph_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }

  // A deferring stretch that must stop now (an allocation failed while the pools held memory
  // back): its deferred launches run, the holds end, the rest of the stretch runs eagerly.
  absl::Status FlushStretch(const std::string& reason) {
    if (active.mode == Active::kReplay) return Diverge(reason);
    GraphStretch& stats = StatsOf();
    ++stats.eager;
    stats.note = absl::StrCat("ran eagerly: ", reason);
    absl::Status st = LaunchEagerly(active.nodes, active.nodes.size());
    StopDeferring();
    return st;
  }

  // After instruction `pc` of function `fi`: the end of a deferring stretch launches it.
  // Errors name the stretch (they start with "@", so Call keeps them as they are).
  absl::Status MaybeEndStretch(const VmFunction& f, int32_t fi, size_t pc) {
    if (active.mode == Active::kNone || active.fi != fi || static_cast<int32_t>(pc) + 1 != active.end) {
      return absl::OkStatus();
    }
    const int32_t begin = program->impl_->stretches[fi][active.stretch].begin;
    absl::Status g = EndStretch();
    if (g.ok()) return g;
    const std::string graph = absl::StrCat("the device graph of @", f.name, " pcs ", begin, "..", pc);
    // A node's error starts with the launch's own location (GraphNode::label).
    if (absl::StartsWith(g.message(), "@")) {
      return absl::Status(g.code(), absl::StrCat(g.message(), " (in ", graph, ")"));
    }
    return absl::Status(g.code(), absl::StrCat(Where(f, pc), "in ", graph, ": ", g.message()));
  }

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

absl::StatusOr<std::vector<Object>> VirtualMachine::Impl::Call(int32_t fi, std::vector<Object> args,
                                                               int64_t* syms) {
  const VmFunction& f = exe.functions[fi];
  ++executions[fi];
  if (static_cast<int32_t>(args.size()) != f.num_params) {
    return absl::InvalidArgumentError(absl::StrCat("@", f.name, " takes ", f.num_params,
                                                   " arguments, got ", args.size()));
  }
  // Register files are reused between calls (resizing a vector of 1,000 objects per call cost
  // more than the instructions); a function already active (recursion) gets a fresh one.
  std::vector<Object> fresh;
  std::vector<Object>* frame = &fresh;
  FrameCache& cache = frames[fi];
  if (!cache.active) {
    cache.active = true;
    frame = &cache.regs;
  }
  struct Release {
    FrameCache* cache;
    std::vector<Object>* frame;
    ~Release() {
      // Drop every reference so storage returns to the pool now, keep the vector's memory.
      for (Object& o : *frame) {
        if (o.kind != Object::Kind::kNone) o = Object();
      }
      if (frame == &cache->regs) cache->active = false;
    }
  } release{&cache, frame};
  std::vector<Object>& regs = *frame;
  if (static_cast<int32_t>(regs.size()) != f.num_registers) regs.resize(f.num_registers);
  for (size_t i = 0; i < args.size(); ++i) regs[i] = std::move(args[i]);
  std::vector<Object> results;
  const bool prof = options.profile;
  // Only functions with stretches look them up (a host-only program pays nothing per step).
  const std::vector<int32_t>* stretch_at =
      graphs_on() && !program->impl_->stretches[fi].empty() ? &program->impl_->stretch_at[fi] : nullptr;
  for (size_t pc = 0; pc < f.code.size(); ++pc) {
    if (tracing) trace.Tick();
    if (stretch_at != nullptr && (*stretch_at)[pc] >= 0 && active.mode == Active::kNone) {
      BeginStretch(fi, (*stretch_at)[pc], syms);
    }
    absl::Status st;
    if (prof) {
      // A stretch's graph launch is timed with its last launch instruction.
      const auto t0 = std::chrono::steady_clock::now();
      st = Step(f, fi, pc, regs, syms, &results);
      if (st.ok()) st = MaybeEndStretch(f, fi, pc);
      const auto t1 = std::chrono::steady_clock::now();
      Acc& acc = profile[fi][pc];
      ++acc.calls;
      acc.us += std::chrono::duration<double, std::micro>(t1 - t0).count();
    } else {
      st = Step(f, fi, pc, regs, syms, &results);
      if (st.ok()) st = MaybeEndStretch(f, fi, pc);
    }
    if (!st.ok()) {
      AbandonStretch();
      // Errors from nested calls already carry their own location.
      if (absl::StartsWith(st.message(), "@")) return st;
      return absl::Status(st.code(), absl::StrCat(Where(f, pc), st.message()));
    }
    if (f.code[pc].op == Opcode::kRet) break;
  }
  return results;
}

absl::Status VirtualMachine::Impl::Step(const VmFunction& f, int32_t fi, size_t pc,
                                        std::vector<Object>& regs, int64_t* syms,
                                        std::vector<Object>* results) {
  const Instruction& in = f.code[pc];
  const int32_t* list = f.operands.data() + in.list;
  switch (in.op) {
    case Opcode::kArg:
      return CheckArg(f, in.a, regs[in.a], syms);
    case Opcode::kConst:
      regs[in.dst] = constants[in.a];
      return absl::OkStatus();
    case Opcode::kAllocStorage: {
      ASSIGN_OR_RETURN(int64_t bytes, EvalDim(exe.dims[in.a], {syms, exe.symbols.size()}));
      if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("negative size ", bytes));
      Object& o = regs[in.dst];
      o.kind = Object::Kind::kStorage;
      // Every storage comes from the pool: in the steady state its run-time plan serves the
      // same requests from one arena (zero raw allocations), and a storage kept across calls
      // here would make each run's requests differ from the recorded ones.
      ASSIGN_OR_RETURN(PoolingAllocator::Block block, AllocateRetrying([&]() {
                         return pool(in.device)->Allocate(static_cast<size_t>(bytes));
                       }));
      o.storage = std::make_shared<runtime::Storage>(pool(in.device), block);
      return absl::OkStatus();
    }
    case Opcode::kAllocTensor: {
      const Object& st = regs[in.a];
      if (st.kind != Object::Kind::kStorage) return absl::InvalidArgumentError("operand is not storage");
      // Built in place in its register: no temporary tensor, no shape vector copy.
      Object& o = regs[in.dst];
      o.kind = Object::Kind::kTensor;
      NDArray& a = o.tensor;
      a.storage = st.storage;
      a.offset = static_cast<size_t>(in.c);
      a.dtype = exe.types[in.b].dtype;
      a.shape.clear();
      for (int32_t d : exe.types[in.b].dims) {
        ASSIGN_OR_RETURN(int64_t v, EvalDim(exe.dims[d], {syms, exe.symbols.size()}));
        if (v < 0) return absl::InvalidArgumentError(absl::StrCat("negative dim ", v));
        a.shape.push_back(v);
      }
      if (a.offset + a.nbytes() > st.storage->capacity()) {
        return absl::InvalidArgumentError(absl::StrCat("tensor ", a.TypeString(), " at offset ", a.offset,
                                                       " exceeds its storage of ", st.storage->capacity(),
                                                       " bytes"));
      }
      return absl::OkStatus();
    }
    case Opcode::kAllocTensorDyn: {
      RETURN_IF_ERROR(ExpectTensor(regs[in.a], "dims"));
      const NDArray& dims = regs[in.a].tensor;
      RETURN_IF_ERROR(ExpectHost(dims, "dims"));
      TraceRead(dims);
      const TypeSpec& t = exe.types[in.b];
      const int64_t n = dims.num_elements();
      int unknown = 0;
      for (int32_t d : t.dims) unknown += d < 0;
      runtime::Shape shape;
      // `dims` holds every dim, or only the unknown ones (a counter's count).
      if (n != static_cast<int64_t>(t.dims.size()) && n != unknown) {
        return absl::InvalidArgumentError(absl::StrCat("dims holds ", n, " values; the type has rank ",
                                                       t.dims.size(), " with ", unknown, " unknown dims"));
      }
      const bool all = n == static_cast<int64_t>(t.dims.size());
      int64_t k = 0;
      for (size_t i = 0; i < t.dims.size(); ++i) {
        const int32_t d = t.dims[i];
        if (d >= 0) {
          ASSIGN_OR_RETURN(int64_t want, EvalDim(exe.dims[d], {syms, exe.symbols.size()}));
          if (all) {
            ASSIGN_OR_RETURN(int64_t v, ReadInt(dims, k++));
            if (v != want) {
              return absl::InvalidArgumentError(absl::StrCat("dim ", i, " computed at run time is ", v,
                                                             " but the type says ", want));
            }
          }
          shape.push_back(want);
          continue;
        }
        ASSIGN_OR_RETURN(int64_t v, ReadInt(dims, k++));
        if (d <= -2) syms[-2 - d] = v;  // a data-dependent symbol is bound here
        shape.push_back(v);
      }
      for (int64_t d : shape) {
        if (d < 0) return absl::InvalidArgumentError(absl::StrCat("negative dim ", d));
      }
      ASSIGN_OR_RETURN(NDArray a, AllocateRetrying([&]() {
                         return runtime::AllocateTensor(pool(in.device), t.dtype, shape);
                       }));
      regs[in.dst] = Object::FromTensor(std::move(a));
      return absl::OkStatus();
    }
    case Opcode::kInvokeKernel: {
      arg_scratch.clear();
      launch_scratch.clear();
      // Host tensors an accelerator kernel reads (slice bounds, targets: the copy ledger's
      // `param` entries) travel by value; the device stages them and points the kernel there.
      const bool accelerator = IsAccelerator(in.device);
      for (int32_t i = 0; i < in.count; ++i) {
        const Object& o = regs[list[i]];
        if (o.kind != Object::Kind::kTensor) {
          return absl::InvalidArgumentError(absl::StrCat("kernel argument ", i, " is not a tensor"));
        }
        arg_scratch.push_back(o.tensor.AsArg());
        launch_scratch.push_back(runtime::LaunchArg{
            o.tensor.data(), o.tensor.nbytes(),
            accelerator && o.tensor.device()->kind() == DeviceKind::kCpu});
      }
      if (tracing) {
        const int32_t first_output = in.count - kernel_outputs[in.a];
        for (int32_t i = 0; i < in.count; ++i) Trace(regs[list[i]].tensor, i >= first_output);
      }
      KernelInstance* k = instances[in.a].get();
      const KernelContext& ctx = contexts[static_cast<int>(in.device)];
      if (active.mode != Active::kNone && in.device == active.device) {
        ASSIGN_OR_RETURN(const bool deferred, DeferLaunch(f, pc, k, ctx));
        if (deferred) return absl::OkStatus();
      }
      return dev(in.device)->Launch(absl::MakeSpan(launch_scratch), [this, k, &ctx]() {
        for (size_t i = 0; i < arg_scratch.size(); ++i) arg_scratch[i].data = launch_scratch[i].data;
        return k->Run(ctx, arg_scratch);
      });
    }
    case Opcode::kShapeFunc: {
      const ShapeFunction& sf = *shape_funcs[in.a];
      std::vector<ShapeFunctionArg> args(in.count);
      std::vector<Tensor> values(in.count);
      for (int32_t i = 0; i < in.count; ++i) {
        const Object& o = regs[list[i]];
        RETURN_IF_ERROR(ExpectTensor(o, absl::StrCat("shape function argument ", i)));
        args[i].shape = o.tensor.shape;
        if (NeedsValue(sf.mask()[i])) {
          RETURN_IF_ERROR(ExpectHost(o.tensor, absl::StrCat("shape function argument ", i, " (read as a value)")));
          TraceRead(o.tensor);
          ASSIGN_OR_RETURN(values[i], Tensor::FromBytes(o.tensor.dtype, {o.tensor.shape.begin(), o.tensor.shape.end()},
                                                        absl::string_view(static_cast<const char*>(o.tensor.data()),
                                                                          o.tensor.nbytes())));
          args[i].value = &values[i];
        }
      }
      ASSIGN_OR_RETURN(auto shapes, sf.Run(args));
      if (static_cast<int32_t>(shapes.size()) != in.count2) {
        return absl::InternalError("shape function returned the wrong number of shapes");
      }
      for (int32_t r = 0; r < in.count2; ++r) {
        ASSIGN_OR_RETURN(NDArray a, HostI64(shapes[r], DType::kI64));
        regs[list[in.count + r]] = Object::FromTensor(std::move(a));
      }
      return absl::OkStatus();
    }
    case Opcode::kDeviceCopy: {
      RETURN_IF_ERROR(ExpectTensor(regs[in.a], "copy source"));
      const DeviceKind from = regs[in.a].tensor.device()->kind();
      NDArray a;
      if (active.mode != Active::kNone && in.device == active.device &&
          (from == DeviceKind::kCpu || from == active.device)) {
        ASSIGN_OR_RETURN(a, DeferCopy(f, pc, regs[in.a].tensor));
      } else {
        // Any other copy inside a deferring stretch (never expected: the stretches end before
        // copies to the host) first issues what was deferred.
        if (active.mode != Active::kNone) RETURN_IF_ERROR(FlushStretch("a copy the graph cannot hold"));
        ASSIGN_OR_RETURN(a, Copy(regs[in.a].tensor, in.device));
      }
      if (in.b == kCopyRuntimeSized) {
        const CopyDirection d = CopyDirectionBetween(regs[in.a].tensor.device()->kind(), in.device);
        RunRecord::RuntimeSized& r = runtime_sized[static_cast<int>(d)];
        ++r.calls;
        r.bytes += static_cast<int64_t>(a.nbytes());
      }
      TraceRead(regs[in.a].tensor);
      TraceWrite(a);
      regs[in.dst] = Object::FromTensor(std::move(a));
      return absl::OkStatus();
    }
    case Opcode::kShapeOf: {
      RETURN_IF_ERROR(ExpectTensor(regs[in.a], "shape_of operand"));
      const runtime::Shape& s = regs[in.a].tensor.shape;
      ASSIGN_OR_RETURN(NDArray a, HostI64({s.data(), s.size()}, static_cast<DType>(in.b)));
      regs[in.dst] = Object::FromTensor(std::move(a));
      return absl::OkStatus();
    }
    case Opcode::kCall: {
      std::vector<Object> args;
      for (int32_t i = 0; i < in.count; ++i) args.push_back(regs[list[i]]);
      std::vector<int64_t> callee_syms(exe.symbols.size(), 0);
      ASSIGN_OR_RETURN(auto out, Call(in.a, std::move(args), callee_syms.data()));
      if (static_cast<int32_t>(out.size()) != in.count2) {
        return absl::InvalidArgumentError("callee returned the wrong number of values");
      }
      for (int32_t r = 0; r < in.count2; ++r) regs[list[in.count + r]] = std::move(out[r]);
      return absl::OkStatus();
    }
    case Opcode::kTuple: {
      Object o;
      o.kind = Object::Kind::kTuple;
      o.fields = std::make_shared<std::vector<Object>>();
      for (int32_t i = 0; i < in.count; ++i) o.fields->push_back(regs[list[i]]);
      regs[in.dst] = std::move(o);
      return absl::OkStatus();
    }
    case Opcode::kGetItem: {
      const Object& t = regs[in.a];
      if (t.kind != Object::Kind::kTuple || in.b >= static_cast<int32_t>(t.fields->size())) {
        return absl::InvalidArgumentError(absl::StrCat("get_item ", in.b, " of a non-tuple or out of range"));
      }
      regs[in.dst] = (*t.fields)[in.b];
      return absl::OkStatus();
    }
    case Opcode::kMove:
      regs[in.dst] = regs[in.a];
      return absl::OkStatus();
    case Opcode::kIf: {
      RETURN_IF_ERROR(ExpectTensor(regs[in.c], "if condition"));
      const NDArray& c = regs[in.c].tensor;
      RETURN_IF_ERROR(ExpectHost(c, "if condition"));
      TraceRead(c);
      if (c.num_elements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("if condition has ", c.num_elements(), " elements"));
      }
      ASSIGN_OR_RETURN(int64_t v, ReadInt(c, 0));
      const bool take_then = v != 0;
      const int32_t off = take_then ? 0 : in.count;
      const int32_t n = take_then ? in.count : in.dst;
      std::vector<Object> args;
      for (int32_t i = 0; i < n; ++i) args.push_back(regs[list[off + i]]);
      ASSIGN_OR_RETURN(auto out, Call(take_then ? in.a : in.b, std::move(args), syms));
      if (static_cast<int32_t>(out.size()) != in.count2) {
        return absl::InvalidArgumentError("branch returned the wrong number of values");
      }
      const int32_t* dsts = list + in.count + in.dst;
      for (int32_t r = 0; r < in.count2; ++r) regs[dsts[r]] = std::move(out[r]);
      return absl::OkStatus();
    }
    case Opcode::kLoop:
      return Loop(f, in, regs, syms);
    case Opcode::kBuiltin: {
      std::vector<const Object*> args;
      for (int32_t i = 0; i < in.count; ++i) args.push_back(&regs[list[i]]);
      ASSIGN_OR_RETURN(regs[in.dst], RunBuiltin(static_cast<Builtin>(in.a), args));
      return absl::OkStatus();
    }
    case Opcode::kKill:
      for (int32_t i = 0; i < in.count; ++i) regs[list[i]] = Object();
      return absl::OkStatus();
    case Opcode::kAssume: {
      const AssumptionCheck& a = exe.assumptions[in.a];
      ASSIGN_OR_RETURN(const int64_t l, EvalDim(exe.dims[a.lhs], {syms, exe.symbols.size()}));
      ASSIGN_OR_RETURN(const int64_t r, EvalDim(exe.dims[a.rhs], {syms, exe.symbols.size()}));
      ++assumption_checks;
      const bool holds = a.kind == Assumption::Kind::kEq   ? l == r
                         : a.kind == Assumption::Kind::kLe ? l <= r
                                                           : l == 1 || l == r;
      if (holds) return absl::OkStatus();
      std::string values;
      for (int32_t s : a.symbols) {
        absl::StrAppend(&values, values.empty() ? "" : ", ", exe.symbols[s], " = ", syms[s]);
      }
      const std::string sides =
          a.kind == Assumption::Kind::kBroadcast
              ? absl::StrCat(l, " is neither 1 nor ", r)
              : absl::StrCat(l, a.kind == Assumption::Kind::kEq ? " != " : " > ", r);
      return absl::InvalidArgumentError(absl::StrCat(
          "assumption `", a.condition, "` does not hold (", values, ": ", sides,
          "); the program was compiled assuming it for ", a.reason));
    }
    case Opcode::kRet:
      results->clear();
      for (int32_t i = 0; i < in.count; ++i) results->push_back(regs[list[i]]);
      return absl::OkStatus();
  }
  return absl::InternalError("bad opcode");
}

// ONNX Loop: operands (max_trips, cond, carried..., captures...), results (carried..., scans...).
// The body gets (iter, cond, carried..., captures...) and returns (cond, carried..., scans...).
absl::Status VirtualMachine::Impl::Loop(const VmFunction& f, const Instruction& in,
                                        std::vector<Object>& regs, int64_t* syms) {
  const int32_t* list = f.operands.data() + in.list;
  const int32_t carried = in.b;
  const int32_t captures = in.count - 2 - carried;
  const int32_t scans = in.count2 - carried;
  if (scans < 0) return absl::InvalidArgumentError("loop has fewer results than carried values");
  auto host_int = [&](int32_t reg, absl::string_view what) -> absl::StatusOr<int64_t> {
    RETURN_IF_ERROR(ExpectTensor(regs[reg], what));
    RETURN_IF_ERROR(ExpectHost(regs[reg].tensor, what));
    if (regs[reg].tensor.num_elements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is not a scalar"));
    }
    TraceRead(regs[reg].tensor);
    return ReadInt(regs[reg].tensor, 0);
  };
  ASSIGN_OR_RETURN(int64_t max_trips, host_int(list[0], "loop max_trips"));
  ASSIGN_OR_RETURN(int64_t cond, host_int(list[1], "loop condition"));
  std::vector<Object> state;
  for (int32_t i = 0; i < carried; ++i) state.push_back(regs[list[2 + i]]);
  std::vector<std::vector<NDArray>> scan_values(scans);
  Object cond_obj = regs[list[1]];
  int64_t iter = 0;
  for (; iter < max_trips && cond != 0; ++iter) {
    std::vector<Object> args;
    ASSIGN_OR_RETURN(NDArray it, HostI64({&iter, 1}, DType::kI64));
    it.shape.clear();  // a scalar
    args.push_back(Object::FromTensor(std::move(it)));
    args.push_back(cond_obj);
    for (Object& s : state) args.push_back(s);
    for (int32_t i = 0; i < captures; ++i) args.push_back(regs[list[2 + carried + i]]);
    ASSIGN_OR_RETURN(auto out, Call(in.a, std::move(args), syms));
    if (static_cast<int32_t>(out.size()) != 1 + carried + scans) {
      return absl::InvalidArgumentError("loop body returned the wrong number of values");
    }
    RETURN_IF_ERROR(ExpectTensor(out[0], "loop body condition"));
    RETURN_IF_ERROR(ExpectHost(out[0].tensor, "loop body condition"));
    TraceRead(out[0].tensor);
    ASSIGN_OR_RETURN(cond, ReadInt(out[0].tensor, 0));
    cond_obj = out[0];
    for (int32_t i = 0; i < carried; ++i) state[i] = std::move(out[1 + i]);
    for (int32_t i = 0; i < scans; ++i) {
      RETURN_IF_ERROR(ExpectTensor(out[1 + carried + i], "scan output"));
      scan_values[i].push_back(out[1 + carried + i].tensor);
    }
  }
  const int32_t* dsts = list + in.count;
  for (int32_t i = 0; i < carried; ++i) regs[dsts[i]] = std::move(state[i]);
  for (int32_t i = 0; i < scans; ++i) {
    // Stack along a new axis 0 on the device of the parts (a kernel there, not a transfer).
    const std::vector<NDArray>& parts = scan_values[i];
    const DeviceKind where = parts.empty() ? (in.device == DeviceKind::kUnset ? DeviceKind::kCpu : in.device)
                                           : parts[0].device()->kind();
    runtime::Shape shape = {static_cast<int64_t>(parts.size())};
    DType dtype = DType::kF32;
    if (parts.empty()) {
      // No iteration: [0, element dims...] of the declared type; an element dim the type does
      // not know (or that is over a symbol no run bound) is 0, the tensor being empty anyway.
      const TypeSpec& t = exe.types[f.operands[in.c + i]];
      dtype = t.dtype;
      for (size_t k = 1; k < t.dims.size(); ++k) {
        absl::StatusOr<int64_t> d =
            t.dims[k] >= 0 ? EvalDim(exe.dims[t.dims[k]], {syms, exe.symbols.size()}) : int64_t{0};
        shape.push_back(d.ok() && *d >= 0 ? *d : 0);
      }
    } else {
      dtype = parts[0].dtype;
      shape.insert(shape.end(), parts[0].shape.begin(), parts[0].shape.end());
      for (const NDArray& p : parts) {
        if (p.shape != parts[0].shape || p.dtype != dtype) {
          return absl::InvalidArgumentError(absl::StrCat("scan output ", i, " changes shape between iterations: ",
                                                         parts[0].TypeString(), " vs ", p.TypeString()));
        }
      }
    }
    ASSIGN_OR_RETURN(NDArray stacked, runtime::AllocateTensor(pool(where), dtype, std::move(shape)));
    if (tracing) {
      trace.Tick();
      for (const NDArray& p : parts) TraceRead(p);
      TraceWrite(stacked);
    }
    Device* d = dev(where);
    // Accelerators count each part's KernelCopy as a d2d copy (device.h); the ledger's bytes for
    // them are `?` when this flag is set: count them apart too.
    if (where != DeviceKind::kCpu && f.operands[in.c + scans + i] == kCopyRuntimeSized) {
      RunRecord::RuntimeSized& r = runtime_sized[static_cast<int>(CopyDirection::kDeviceToDevice)];
      r.calls += static_cast<int64_t>(parts.size());
      for (const NDArray& p : parts) r.bytes += static_cast<int64_t>(p.nbytes());
    }
    RETURN_IF_ERROR(d->Launch([&]() -> absl::Status {
      size_t off = 0;
      for (const NDArray& p : parts) {
        RETURN_IF_ERROR(d->KernelCopy(static_cast<char*>(stacked.data()) + off, p.data(), p.nbytes()));
        off += p.nbytes();
      }
      return absl::OkStatus();
    }));
    regs[dsts[carried + i]] = Object::FromTensor(std::move(stacked));
  }
  return absl::OkStatus();
}

VirtualMachine::VirtualMachine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)), exe_(impl_->exe) {}
VirtualMachine::~VirtualMachine() = default;

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Load(Executable exe, VmOptions options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Program> program, Program::Compile(std::move(exe), options));
  return Load(std::move(program), std::move(options));
}

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Load(
    std::shared_ptr<const Program> program, VmOptions options) {
  if (program == nullptr) return absl::InvalidArgumentError("VirtualMachine::Load: null program");
  auto impl = std::make_unique<Impl>(std::move(program), std::move(options));
  RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<VirtualMachine>(new VirtualMachine(std::move(impl)));
}

absl::StatusOr<std::vector<Object>> VirtualMachine::Run(absl::string_view function, std::vector<Object> args) {
  const int fi = impl_->exe.FindFunction(function);
  if (fi < 0) return absl::NotFoundError(absl::StrCat("no function @", function, " in the executable"));
  std::vector<int64_t> syms(impl_->exe.symbols.size(), 0);
  impl_->BeginPlannedRun();
  auto out = impl_->Call(fi, std::move(args), syms.data());
  impl_->EndPlannedRun();
  return out;
}

absl::StatusOr<std::vector<Object>> VirtualMachine::RunRecorded(int fi, std::vector<Object> args) {
  Impl& m = *impl_;
  std::fill(m.executions.begin(), m.executions.end(), 0);
  m.runtime_sized = {};
  m.assumption_checks = 0;
  std::vector<int64_t> syms(m.exe.symbols.size(), 0);
  m.BeginPlannedRun();
  auto out = m.Call(fi, std::move(args), syms.data());
  m.EndPlannedRun();
  last_record_ = RunRecord();
  for (const ArgSpec& p : m.exe.functions[fi].params) {
    for (const ArgDim& d : p.dims) {
      if (d.kind == ArgDim::kBind) last_record_.symbols[m.exe.symbols[d.value]] = syms[d.value];
    }
  }
  // Data-dependent symbols the function binds in its own code (not in its regions, which may
  // bind them once per iteration): the ledger's sizes over them are checkable too.
  if (out.ok()) {
    for (const Instruction& in : m.exe.functions[fi].code) {
      if (in.op != Opcode::kAllocTensorDyn) continue;
      for (int32_t d : m.exe.types[in.b].dims) {
        if (d <= -2) last_record_.symbols[m.exe.symbols[-2 - d]] = syms[-2 - d];
      }
    }
  }
  for (size_t i = 0; i < m.executions.size(); ++i) {
    if (m.executions[i] > 0) last_record_.executions[m.exe.functions[i].name] = m.executions[i];
  }
  last_record_.runtime_sized = m.runtime_sized;
  last_record_.assumption_checks = m.assumption_checks;
  return out;
}

namespace {

absl::StatusOr<Object> StageValue(const HostValue& v, runtime::PoolingAllocator* pool) {
  if (v.kind == HostValue::Kind::kTensor) {
    ASSIGN_OR_RETURN(NDArray a, runtime::FromHost(v.tensor, pool));
    return Object::FromTensor(std::move(a));
  }
  Object o;
  o.kind = v.kind == HostValue::Kind::kSequence ? Object::Kind::kSequence : Object::Kind::kOptional;
  o.fields = std::make_shared<std::vector<Object>>();
  for (const HostValue& e : v.elements) {
    ASSIGN_OR_RETURN(Object oe, StageValue(e, pool));
    o.fields->push_back(std::move(oe));
  }
  return o;
}

absl::StatusOr<HostValue> ReadBack(const Object& o, size_t i) {
  HostValue v;
  switch (o.kind) {
    case Object::Kind::kTensor: {
      ASSIGN_OR_RETURN(v.tensor, runtime::ToHost(o.tensor));
      return v;
    }
    case Object::Kind::kSequence:
    case Object::Kind::kOptional:
      v.kind = o.kind == Object::Kind::kSequence ? HostValue::Kind::kSequence : HostValue::Kind::kOptional;
      for (const Object& e : *o.fields) {
        ASSIGN_OR_RETURN(HostValue he, ReadBack(e, i));
        v.elements.push_back(std::move(he));
      }
      return v;
    default:
      return absl::UnimplementedError(absl::StrCat("result ", i, " is not a tensor, sequence or optional"));
  }
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> VirtualMachine::RunWithHostTensors(absl::string_view function,
                                                                      const std::vector<Tensor>& inputs) {
  std::vector<HostValue> values;
  for (const Tensor& t : inputs) values.push_back(HostValue::FromTensor(t));
  ASSIGN_OR_RETURN(std::vector<HostValue> out, RunWithHostValues(function, values));
  std::vector<Tensor> host;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].kind != HostValue::Kind::kTensor) {
      return absl::UnimplementedError(absl::StrCat("result ", i, " is not a tensor"));
    }
    host.push_back(std::move(out[i].tensor));
  }
  return host;
}

absl::StatusOr<std::vector<HostValue>> VirtualMachine::RunWithHostValues(
    absl::string_view function, const std::vector<HostValue>& inputs) {
  const int fi = impl_->exe.FindFunction(function);
  if (fi < 0) return absl::NotFoundError(absl::StrCat("no function @", function, " in the executable"));
  const VmFunction& f = impl_->exe.functions[fi];
  if (inputs.size() != f.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat("@", function, " takes ", f.params.size(),
                                                   " inputs, got ", inputs.size()));
  }
  std::vector<Object> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<Object> o = StageValue(inputs[i], impl_->pool(f.params[i].device));
    if (!o.ok()) {
      return absl::Status(o.status().code(),
                          absl::StrCat("@", function, ": staging argument ", i, " (%",
                                       f.params[i].name, ") on ", DeviceName(f.params[i].device),
                                       ": ", o.status().message()));
    }
    args.push_back(*std::move(o));
  }
  ASSIGN_OR_RETURN(std::vector<Object> out, RunStaged(function, std::move(args)));
  std::vector<HostValue> host;
  for (size_t i = 0; i < out.size(); ++i) {
    absl::StatusOr<HostValue> v = ReadBack(out[i], i);
    if (!v.ok()) {
      return absl::Status(v.status().code(), absl::StrCat("@", function, ": reading result ", i,
                                                          " back: ", v.status().message()));
    }
    host.push_back(*std::move(v));
  }
  return host;
}

absl::StatusOr<std::vector<Object>> VirtualMachine::RunStaged(absl::string_view function,
                                                              std::vector<Object> args) {
  const int fi = impl_->exe.FindFunction(function);
  if (fi < 0) return absl::NotFoundError(absl::StrCat("no function @", function, " in the executable"));
  ResetCounters();
  Impl& m = *impl_;
  if (m.tracing) {
    m.trace.Clear();
    for (const Object& c : m.constants) {
      if (c.tensor.defined() && c.tensor.device()->Owns(c.tensor.data())) {
        m.trace.Persistent(c.tensor.device()->kind(), c.tensor.data(), c.tensor.nbytes());
      }
    }
  }
  auto out = RunRecorded(fi, std::move(args));
  last_run_ = Counters();
  if (!out.ok()) return out.status();
  if (m.tracing) {
    m.trace.Tick();  // the results are read once more when they are handed back
    for (const Object& o : *out) {
      if (o.kind == Object::Kind::kTensor) m.TraceRead(o.tensor);
    }
  }
  last_memory_.clear();
  for (const auto& d : m.devices) {
    if (!d) continue;
    MemoryStats stats;
    stats.device = d->kind();
    stats.peak_bytes = d->counters().peak_held_bytes;
    stats.liveness_lower_bound_bytes = m.tracing ? m.trace.LowerBound(d->kind()) : -1;
    for (const Object& c : m.constants) {
      if (c.tensor.defined() && c.tensor.device() == d.get() && d->Owns(c.tensor.data())) {
        stats.constant_bytes += static_cast<int64_t>(c.tensor.nbytes());
      }
    }
    last_memory_.push_back(stats);
  }
  return out;
}

runtime::DeviceCounters VirtualMachine::Counters() const {
  runtime::DeviceCounters sum;
  for (const auto& d : impl_->devices) {
    if (d) sum += d->counters();
  }
  return sum;
}

runtime::DeviceCounters VirtualMachine::CountersOf(DeviceKind kind) const {
  Device* d = impl_->dev(kind);
  return d ? d->counters() : runtime::DeviceCounters();
}

void VirtualMachine::ResetCounters() {
  for (auto& d : impl_->devices) {
    if (d) d->ResetCounters();
  }
}

const std::shared_ptr<const Program>& VirtualMachine::program() const { return impl_->program; }

runtime::Device* VirtualMachine::device(DeviceKind kind) const { return impl_->dev(kind); }
runtime::PoolingAllocator* VirtualMachine::pool(DeviceKind kind) const { return impl_->pool(kind); }

std::vector<std::string> VirtualMachine::KernelDescriptions() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < impl_->kernels.size(); ++i) {
    out.push_back(absl::StrCat("k", i, " @", impl_->exe.kernels[i].primitive, " @",
                               DeviceName(impl_->exe.kernels[i].device), ": ",
                               impl_->kernels[i]->Describe()));
  }
  return out;
}

absl::Status VirtualMachine::WaitForKernels() { return impl_->program->WaitForKernels(); }

int64_t VirtualMachine::KernelsPending() const { return impl_->program->KernelsPending(); }

void VirtualMachine::SetTraceMemory(bool on) { impl_->tracing = on; }

void VirtualMachine::TrimMemory() {
  for (int i = 0; i < kNumDevices; ++i) {
    if (impl_->pools[i]) impl_->pools[i]->Shrink();
    if (impl_->scratch_pools[i]) impl_->scratch_pools[i]->Shrink();
  }
}

std::vector<ProfileEntry> VirtualMachine::Profile() const {
  std::vector<ProfileEntry> out;
  for (size_t fi = 0; fi < impl_->profile.size(); ++fi) {
    const VmFunction& f = impl_->exe.functions[fi];
    for (size_t pc = 0; pc < impl_->profile[fi].size(); ++pc) {
      const Impl::Acc& a = impl_->profile[fi][pc];
      if (a.calls == 0) continue;
      ProfileEntry e;
      e.function = f.name;
      e.pc = static_cast<int>(pc);
      e.opcode = std::string(OpcodeName(f.code[pc].op));
      e.what = pc < f.comments.size() ? f.comments[pc] : "";
      if (f.code[pc].op == Opcode::kInvokeKernel) {
        absl::StrAppend(&e.what, "  [", impl_->kernels[f.code[pc].a]->Describe(), "]");
      }
      e.calls = a.calls;
      e.total_us = a.us;
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ProfileEntry& a, const ProfileEntry& b) { return a.total_us > b.total_us; });
  return out;
}

void VirtualMachine::ResetProfile() {
  for (auto& f : impl_->profile) {
    for (auto& a : f) a = Impl::Acc();
  }
  impl_->graph_stats = impl_->program->impl_->stretches;
}

std::vector<GraphStretch> VirtualMachine::GraphStats() const {
  std::vector<GraphStretch> out;
  for (const auto& f : impl_->graph_stats) out.insert(out.end(), f.begin(), f.end());
  return out;
}

int64_t VirtualMachine::GraphsCached() const {
  int64_t n = 0;
  for (const auto& [key, e] : impl_->graphs) n += e->graph != nullptr;
  return n;
}

}  // namespace hetpass::vm
