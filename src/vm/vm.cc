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
// Device graphs (VmOptions::device_graphs) are in device_graphs.cc; builtins and loops in
// vm_control.cc; the state all three share, VirtualMachine::Impl, in vm_impl.h.
#include "passes/vm/vm.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/ir/parser.h"
#include "passes/support/status_macros.h"
#include "vm/vm_impl.h"

namespace hetpass::vm {

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

absl::Status VirtualMachine::Impl::EnsureDevice(DeviceKind k) {
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

void VirtualMachine::Impl::BeginPlannedRun() {
  for (int i = 0; i < kNumDevices; ++i) {
    if (pools[i]) pools[i]->BeginRun();
    if (scratch_pools[i]) scratch_pools[i]->BeginRun();
  }
}

void VirtualMachine::Impl::EndPlannedRun() {
  for (int i = 0; i < kNumDevices; ++i) {
    if (pools[i]) pools[i]->EndRun();
    if (scratch_pools[i]) scratch_pools[i]->EndRun();
  }
}

absl::Status VirtualMachine::Impl::Load() {
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

VirtualMachine::Impl::ReleasePlan VirtualMachine::Impl::PlanRelease() const {
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

void VirtualMachine::Impl::ReleaseAfter(ReleasePlan& plan, size_t k) {
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

void VirtualMachine::Impl::TrimHeap(ReleasePlan& plan) {
#if defined(__GLIBC__)
  if (plan.untrimmed > 0) malloc_trim(0);
#endif
  plan.untrimmed = 0;
}

std::string VirtualMachine::Impl::ConstantName(size_t index) const {
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

std::string VirtualMachine::Impl::Where(const VmFunction& f, size_t pc) const {
  return absl::StrCat("@", f.name, " pc ", pc, " (", OpcodeName(f.code[pc].op), " ",
                      pc < f.comments.size() ? f.comments[pc] : "", "): ");
}

absl::Status VirtualMachine::Impl::CheckArg(const VmFunction& f, int param, const Object& o,
                                            int64_t* syms) {
  const ArgSpec& spec = f.params[param];
  const std::string what = absl::StrCat("argument ", param, " (%", spec.name, ") of @", f.name);
  if (spec.container != ArgSpec::kTensor) return CheckContainerArg(spec, what, o, syms);
  if (o.kind != Object::Kind::kTensor) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": expected a tensor ", spec.type_text));
  }
  return CheckTensorArg(spec, what, o.tensor, syms);
}

absl::Status VirtualMachine::Impl::CheckContainerArg(const ArgSpec& spec, const std::string& what,
                                                     const Object& o, int64_t* syms) {
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

absl::Status VirtualMachine::Impl::CheckTensorArg(const ArgSpec& spec, const std::string& what,
                                                  const NDArray& a, int64_t* syms) {
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

absl::StatusOr<runtime::Shape> VirtualMachine::Impl::EvalShape(const TypeSpec& t,
                                                               const int64_t* syms) {
  runtime::Shape s;
  for (int32_t d : t.dims) {
    ASSIGN_OR_RETURN(int64_t v, EvalDim(exe.dims[d], {syms, exe.symbols.size()}));
    if (v < 0) return absl::InvalidArgumentError(absl::StrCat("negative dim ", v));
    s.push_back(v);
  }
  return s;
}

absl::StatusOr<NDArray> VirtualMachine::Impl::HostI64(absl::Span<const int64_t> values, DType dtype) {
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

absl::StatusOr<NDArray> VirtualMachine::Impl::Copy(const NDArray& src, DeviceKind to) {
  ASSIGN_OR_RETURN(NDArray dst, runtime::AllocateTensor(pool(to), src.dtype, src.shape));
  RETURN_IF_ERROR(CopyInto(dst, src));
  return dst;
}

absl::Status VirtualMachine::Impl::CopyInto(const NDArray& dst, const NDArray& src) {
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
      if (st.ok() && active.mode != Active::kNone) st = MaybeEndStretch(f, fi, pc);
      const auto t1 = std::chrono::steady_clock::now();
      Acc& acc = profile[fi][pc];
      ++acc.calls;
      acc.us += std::chrono::duration<double, std::micro>(t1 - t0).count();
    } else {
      st = Step(f, fi, pc, regs, syms, &results);
      if (st.ok() && active.mode != Active::kNone) st = MaybeEndStretch(f, fi, pc);
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
