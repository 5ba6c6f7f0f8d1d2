// Device graphs: the VM half (see vm.h, VmOptions::device_graphs; docs/runtime.md).
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

#include "vm/vm_impl.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"

namespace hetpass::vm {

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

void VirtualMachine::Impl::EvictGraphs(size_t keep) {
  while (graphs.size() > keep && !graph_lru.empty()) {
    graphs.erase(graph_lru.back());
    graph_lru.pop_back();
  }
}

void VirtualMachine::Impl::BeginStretch(int32_t fi, int32_t si, const int64_t* syms) {
  const GraphStretch& st = program->impl_->stretches[fi][si];
  GraphStretch& stats = graph_stats[fi][si];
  const size_t nsyms = exe.symbols.size();
  // The key is built in a buffer kept between stretches and looked up as a string_view: only a
  // key seen for the first time allocates (its copy in the map and in the LRU list).
  std::string& key = graph_key_scratch;
  key.resize(2 * sizeof(int32_t) + nsyms * sizeof(int64_t));
  std::memcpy(key.data(), &fi, sizeof(int32_t));
  std::memcpy(key.data() + sizeof(int32_t), &si, sizeof(int32_t));
  if (nsyms > 0) std::memcpy(key.data() + 2 * sizeof(int32_t), syms, nsyms * sizeof(int64_t));
  GraphEntry* e = nullptr;
  if (auto it = graphs.find(absl::string_view(key)); it != graphs.end()) {
    e = it->second.get();
    graph_lru.splice(graph_lru.begin(), graph_lru, e->lru);
  } else {
    EvictGraphs(static_cast<size_t>(std::max(1, options.graph_cache_size)) - 1);
    graph_lru.push_front(key);
    auto entry = std::make_unique<GraphEntry>();
    entry->lru = graph_lru.begin();
    e = entry.get();
    graphs.emplace(key, std::move(entry));
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

std::string VirtualMachine::Impl::Differs(int32_t site, const runtime::GraphNode& node,
                                          const NodeCheck& check) const {
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

absl::Status VirtualMachine::Impl::LaunchEagerly(const std::vector<runtime::GraphNode>& nodes,
                                                 size_t n) {
  absl::Status st;
  Device* d = dev(active.device);
  for (size_t i = 0; i < n && st.ok(); ++i) st = d->LaunchNode(nodes[i]);
  return st;
}

void VirtualMachine::Impl::StopDeferring() {
  active.mode = Active::kNone;
  active.nodes.clear();
  active.checks.clear();
  active.staging.clear();
  HoldPools(active.device, false);
}

absl::Status VirtualMachine::Impl::Diverge(const std::string& reason) {
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

absl::StatusOr<bool> VirtualMachine::Impl::DeferLaunch(const VmFunction& f, size_t pc,
                                                       KernelInstance* k,
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

absl::StatusOr<NDArray> VirtualMachine::Impl::DeferCopy(const VmFunction& f, size_t pc,
                                                        const NDArray& src) {
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

absl::Status VirtualMachine::Impl::EndStretch() {
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

absl::Status VirtualMachine::Impl::FlushStretch(const std::string& reason) {
  if (active.mode == Active::kReplay) return Diverge(reason);
  GraphStretch& stats = StatsOf();
  ++stats.eager;
  stats.note = absl::StrCat("ran eagerly: ", reason);
  absl::Status st = LaunchEagerly(active.nodes, active.nodes.size());
  StopDeferring();
  return st;
}

absl::Status VirtualMachine::Impl::MaybeEndStretch(const VmFunction& f, int32_t fi, size_t pc) {
  if (active.mode == Active::kNone || active.fi != fi ||
      static_cast<int32_t>(pc) + 1 != active.end) {
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

}  // namespace hetpass::vm
