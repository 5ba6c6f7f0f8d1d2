// Copy ledger: a read-only walk of one function (and of the functions it calls).
//
// Phase 1  Name values as the printer does (ValueNames), name the regions as the VM does
//          (RegionNames), and index every use of every value: operands of bindings (with the
//          operand position) and block results (return, yield).
// Phase 2  Walk the body in program order, regions included, keeping the current region:
//          - each device_copy (OpRole::kDeviceCopy): direction from its src/dst attributes,
//            bytes from its result type (an expression of the symbols), and the reason: the
//            uses of the copy's result, described by what they need and which mask bit asks
//            for the data ("input 1 'begin' of dyn.strided_slice %7 (mask value: ...)",
//            "input 0 'data' of nn.dense %3 runs on sim", "returned from @main");
//          - before manifest-alloc, the copies a binding implies (`implied` entries): a shape
//            function's `value` read of an accelerator value, a data-dependent op's count;
//          - each host tensor an accelerator kernel reads: a `param` entry (by value);
//          - a plain invoke of a non-primitive function: that function's entries, in a region
//            of its own (`$f`: it runs once per call).
// Output: entries in program order, each with its region; totals per direction are sums of
// bytes and counts times the region's execution count; syncs = device-to-host copies.
#include "passes/analysis/copy_ledger.h"

#include <algorithm>
#include <memory>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "passes/device_planner/device_rules.h"
#include "passes/ir/printer.h"
#include "passes/ir/scratch_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/shape_funcs/primitive_function.h"
#include "passes/support/json.h"

namespace hetpass {
namespace {

struct Use {
  const Node* node = nullptr;   // the using binding, or the region owner for a yield
  const Block* block = nullptr;  // set for block results (return / yield)
  int index = 0;
};

// "(mask value: its shape function reads the contents)": why a shape-function input is copied.
std::string MaskBit(InputDep dep) {
  if (NeedsValue(dep)) {
    return absl::StrFormat("(mask %s: the shape function reads the contents)",
                           InputDepName(dep));
  }
  return absl::StrFormat("(mask %s: metadata only, no data needed)", InputDepName(dep));
}

class LedgerBuilder {
 public:
  // `region`: the ledger region the function's body belongs to (-1: the ledger's function).
  // `called`: functions already entered (a recursive call is not entered twice).
  LedgerBuilder(const Module& m, const Function& f, CopyLedger& ledger, int region,
                absl::flat_hash_set<std::string>& called)
      : module_(m),
        f_(f),
        ledger_(ledger),
        region_(region),
        called_(called),
        names_(f),
        region_names_(RegionNames(f)) {}

  void Build() {
    function_level_ = FunctionLevelSymbols(f_);
    for (const auto& p : f_.body().params()) value_ids_.Number(p.get());
    NumberValues(f_.body());
    IndexUses(f_.body());
    uses_.Build(value_ids_.size());
    Visit(f_.body(), region_, InLoop(region_));
  }

 private:
  bool InLoop(int region) const {
    for (int r = region; r >= 0; r = ledger_.regions[r].parent) {
      if (ledger_.regions[r].loop) return true;
    }
    return false;
  }

  void NumberValues(const Block& b) {
    for (const auto& n : b.nodes()) {
      for (const auto& r : n->results()) value_ids_.Number(r.get());
      for (int r = 0; r < n->num_regions(); ++r) {
        for (const auto& p : n->region(r)->params()) value_ids_.Number(p.get());
        NumberValues(*n->region(r));
      }
    }
  }

  void IndexUses(const Block& b) {
    for (const auto& n : b.nodes()) {
      for (int i = 0; i < n->num_operands(); ++i) {
        uses_.Add(value_ids_.Id(n->operand(i)), Use{n.get(), nullptr, i});
      }
      for (int r = 0; r < n->num_regions(); ++r) IndexUses(*n->region(r));
    }
    for (size_t i = 0; i < b.results().size(); ++i) {
      uses_.Add(value_ids_.Id(b.results()[i]), Use{b.parent_node(), &b, static_cast<int>(i)});
    }
  }

  std::string ResultNames(const Node& n) const {
    std::vector<std::string> names;
    for (const auto& r : n.results()) names.push_back(names_.Name(r.get()));
    return absl::StrJoin(names, ", ");
  }

  // "$loop0" for region main$loop0 of the ledger's function main; "$f$loop0" in a callee f.
  std::string Symbol(const std::string& vm_function) const {
    const std::string prefix = absl::StrCat(ledger_.function, "$");
    return absl::StrCat("$", absl::StartsWith(vm_function, prefix)
                                 ? vm_function.substr(prefix.size())
                                 : vm_function);
  }

  int AddRegion(const std::string& vm_function, std::string description, int parent, bool loop) {
    ledger_.regions.push_back(
        LedgerRegion{Symbol(vm_function), vm_function, std::move(description), parent, loop});
    return static_cast<int>(ledger_.regions.size()) - 1;
  }

  std::string Describe(const Use& u, DeviceKind dst) const {
    if (u.block != nullptr) {
      if (u.node == nullptr) return absl::StrCat("returned from @", f_.name());
      return absl::StrCat("yielded by ", u.node->OpName(), " ", ResultNames(*u.node));
    }
    const Node& n = *u.node;
    switch (n.kind()) {
      case NodeKind::kCall: {
        const OpDef& op = *n.op();
        const InputSpec& in = op.input(u.index);
        if (NeedsValue(in.dep) && !IsAccelerator(dst)) {
          if (op.role() == OpRole::kAllocTensor || op.role() == OpRole::kAllocStorage ||
              op.role() == OpRole::kAllocTensorDyn) {
            return absl::StrFormat("input %d '%s' of %s %s (mask %s: the host reads the dims to "
                                   "allocate)",
                                   u.index, in.name, op.name(), ResultNames(n),
                                   InputDepName(in.dep));
          }
          return absl::StrFormat("input %d '%s' of %s %s %s", u.index, in.name, op.name(),
                                 ResultNames(n), MaskBit(in.dep));
        }
        return absl::StrFormat("input %d '%s' of %s %s runs on %s", u.index, in.name, op.name(),
                               ResultNames(n), DeviceName(n.device()));
      }
      case NodeKind::kInvoke: {
        const std::string results = ResultNames(n);
        if (IsShapeFunctionInvoke(n)) {
          const std::vector<InputDep>* mask = ShapeFunctionMask(n);
          const InputDep dep = mask != nullptr && u.index < static_cast<int>(mask->size())
                                   ? (*mask)[u.index]
                                   : InputDep::kShapeAndValue;
          return absl::StrFormat("argument %d of the shape function of @%s %s %s", u.index,
                                 n.callee(), results, MaskBit(dep));
        }
        return absl::StrFormat("argument %d of @%s%s runs on %s", u.index, n.callee(),
                               results.empty() ? "" : absl::StrCat(" ", results),
                               DeviceName(n.device()));
      }
      case NodeKind::kIf:
        return absl::StrCat("condition of if ", ResultNames(n));
      case NodeKind::kLoop:
        return absl::StrCat(u.index == 0   ? "trip count"
                            : u.index == 1 ? "condition"
                                           : absl::StrCat("carried value ", u.index - 2),
                            " of loop ", ResultNames(n));
      default:
        return absl::StrFormat("operand %d of %s %s", u.index, n.OpName(), ResultNames(n));
    }
  }

  void Push(LedgerEntry e, int region, bool in_loop) {
    // A copy in a region of this function sized by a symbol the region binds: `?` bytes
    // (RegionCopyBytesStated; the VM compiler counts it apart by the same rule). By-value
    // parameters keep their size: the VM counts no parameter apart.
    if (region != region_ && e.direction != CopyDirection::kParam && !e.bytes.has_unknown() &&
        !RegionCopyBytesStated(e.bytes, function_level_)) {
      e.bytes = DimExpr::Unknown();
    }
    e.region = region;
    e.in_loop = in_loop;
    ledger_.entries.push_back(std::move(e));
  }

  void Visit(const Block& b, int region, bool in_loop) {
    for (const auto& n : b.nodes()) {
      if (n->kind() == NodeKind::kCall && n->op()->role() == OpRole::kDeviceCopy) {
        Push(Entry(*n), region, in_loop);
      } else if (n->kind() == NodeKind::kCall) {
        AddImplied(*n, region, in_loop);
        if (n->op()->role() == OpRole::kCompute) AddParams(*n, region, in_loop);
      } else if (IsKernelInvoke(*n)) {
        AddParams(*n, region, in_loop);
      } else if (IsPlainInvoke(*n)) {
        const Function* callee = module_.FindFunction(n->callee());
        if (callee != nullptr && IsPrimitive(*callee)) {
          AddImpliedForPrimitive(*n, *callee, region, in_loop);
          AddParams(*n, region, in_loop);
        } else if (callee != nullptr && called_.insert(callee->name()).second) {
          const int r = AddRegion(callee->name(),
                                  absl::StrCat("function @", callee->name(), " (once per call)"),
                                  region, /*loop=*/false);
          LedgerBuilder(module_, *callee, ledger_, r, called_).Build();
        }
      }
      for (int r = 0; r < n->num_regions(); ++r) {
        const bool loop = n->kind() == NodeKind::kLoop;
        const std::string what =
            loop ? absl::StrCat("body of loop ", ResultNames(*n))
                 : absl::StrCat(r == 0 ? "then" : "else", " branch of ", n->OpName(), " ",
                                ResultNames(*n));
        const int inner = AddRegion(region_names_.at(n->region(r)), what, region, loop);
        Visit(*n->region(r), inner, in_loop || loop);
        if (loop) AddScanStacking(*n, inner);
      }
    }
  }

  // A loop's scan outputs are stacked after it on the device of their parts, one copy per
  // part, i.e. per iteration (the VM's Loop): on an accelerator that is a device-to-device
  // copy (a cudaMemcpyAsync on cuda, which CUPTI sees), so each part is an entry of the body's
  // region. On the host it is a memcpy, not a transfer.
  void AddScanStacking(const Node& loop, int body_region) {
    const Block& body = *loop.region(0);
    const int carried = body.num_params() - 2;
    const std::vector<Value*>& yielded = body.results();
    for (int i = carried; i < loop.num_results(); ++i) {
      const Value* part = 1 + i < static_cast<int>(yielded.size()) ? yielded[1 + i] : nullptr;
      if (part == nullptr || !IsAccelerator(part->device())) continue;
      LedgerEntry e;
      e.node = &loop;
      e.direction = CopyDirection::kDeviceToDevice;
      e.src = e.dst = part->device();
      e.bytes = ScanPartBytesStated(loop, i) ? part->type().NumBytes() : DimExpr::Unknown();
      e.value = names_.Name(part);
      e.copy = names_.Name(loop.result(i));
      e.reason = absl::StrFormat(
          "scan output %d of loop %s: each iteration's part is stacked into the result on %s "
          "(one device-to-device copy per iteration)",
          i - carried, ResultNames(loop), DeviceName(part->device()));
      Push(std::move(e), body_region, /*in_loop=*/true);
    }
  }

  // Host tensors an accelerator kernel reads travel by value (see the header).
  void AddParams(const Node& n, int region, bool in_loop) {
    if (!IsAccelerator(n.device())) return;
    const int inputs = IsKernelInvoke(n)
                           ? n.num_operands() - static_cast<int>(n.attrs().GetInt(kKernelOutputsAttr))
                           : n.num_operands();
    for (int i = 0; i < inputs; ++i) {
      const Value* v = n.operand(i);
      if (!v->type().is_tensor() || IsAccelerator(v->device())) continue;
      LedgerEntry e;
      e.node = &n;
      e.direction = CopyDirection::kParam;
      e.src = v->device() == DeviceKind::kUnset ? DeviceKind::kCpu : v->device();
      e.dst = n.device();
      e.bytes = v->type().NumBytes();
      e.value = names_.Name(v);
      e.copy = "(by value)";
      e.reason = absl::StrFormat(
          "%s %d of %s%s on %s reads it: a by-value kernel parameter",
          n.kind() == NodeKind::kCall ? "input" : "argument", i,
          n.kind() == NodeKind::kCall ? std::string(n.op()->name()) : absl::StrCat("@", n.callee()),
          n.num_results() > 0 ? absl::StrCat(" ", ResultNames(n)) : "", DeviceName(n.device()));
      Push(std::move(e), region, in_loop);
    }
  }

  // Shape-function reads of accelerator values that the IR does not copy yet, and the count of
  // a data-dependent op on the accelerator.
  void AddImplied(const Node& n, int region, bool in_loop) {
    if (!n.op()->shape_counter().empty() && IsAccelerator(n.device())) {
      LedgerEntry e = Implied(n, DimExpr(8), absl::StrCat("count of ", ResultNames(n)),
                              absl::StrFormat("the output shape of %s %s is data-dependent: its "
                                              "count",
                                              n.op()->name(), ResultNames(n)));
      e.src = n.device();
      Push(std::move(e), region, in_loop);
      return;
    }
    for (int i = 0; i < n.num_operands(); ++i) {
      const Value* v = n.operand(i);
      const UseNeeds needs = OperandNeeds(n, i);
      if (!needs.host || !needs.device || !IsAccelerator(v->device())) continue;
      if (!implied_.insert(v).second) continue;  // one copy per value, shared
      LedgerEntry e = Implied(n, v->type().is_tensor() ? v->type().NumBytes() : DimExpr::Unknown(),
                              names_.Name(v),
                              absl::StrFormat("input %d '%s' of %s %s %s", i, n.op()->input(i).name,
                                              n.op()->name(), ResultNames(n),
                                              MaskBit(n.op()->dep(i))));
      e.src = v->device();
      Push(std::move(e), region, in_loop);
    }
  }

  // Before manifest-alloc, a primitive invoke implies the same copies as the ops it fused: the
  // derived mask says which parameters its shape function reads, and a data-dependent op on
  // the accelerator implies the copy of its 8-byte count.
  void AddImpliedForPrimitive(const Node& n, const Function& callee, int region, bool in_loop) {
    if (!IsAccelerator(n.device())) return;
    if (callee.body().nodes().size() == 1) {
      const Node& only = *callee.body().nodes()[0];
      if (only.kind() == NodeKind::kCall && !only.op()->shape_counter().empty()) {
        LedgerEntry e = Implied(n, DimExpr(8), absl::StrCat("count of ", n.callee()),
                                absl::StrFormat("the output shape of %s %s is data-dependent: "
                                                "its count",
                                                only.op()->name(), ResultNames(n)));
        e.src = n.device();
        Push(std::move(e), region, in_loop);
        return;
      }
    }
    if (ResultShapesKnown(n)) return;  // no shape function runs
    const std::vector<InputDep> mask = DeriveInputMask(callee);
    for (int i = 0; i < n.num_operands() && i < static_cast<int>(mask.size()); ++i) {
      const Value* v = n.operand(i);
      if (!NeedsValue(mask[i]) || !IsAccelerator(v->device())) continue;
      if (!implied_.insert(v).second) continue;
      LedgerEntry e = Implied(n, v->type().is_tensor() ? v->type().NumBytes() : DimExpr::Unknown(),
                              names_.Name(v),
                              absl::StrFormat("argument %d of @%s %s %s", i, n.callee(),
                                              ResultNames(n), MaskBit(mask[i])));
      e.src = v->device();
      Push(std::move(e), region, in_loop);
    }
  }

  LedgerEntry Implied(const Node& n, DimExpr bytes, std::string value, std::string reason) const {
    LedgerEntry e;
    e.node = &n;
    e.implied = true;
    e.direction = CopyDirection::kDeviceToHost;
    e.synchronizes = true;
    e.dst = DeviceKind::kCpu;
    e.bytes = std::move(bytes);
    e.value = std::move(value);
    e.copy = "(implied)";
    e.reason = std::move(reason);
    return e;
  }

  LedgerEntry Entry(const Node& n) const {
    LedgerEntry e;
    e.node = &n;
    const AttrValue* src = n.attrs().Find("src");
    const AttrValue* dst = n.attrs().Find("dst");
    e.src = src ? ParseDevice(std::get<std::string>(*src)).value_or(DeviceKind::kUnset)
                : DeviceKind::kUnset;
    e.dst = dst ? ParseDevice(std::get<std::string>(*dst)).value_or(DeviceKind::kUnset)
                : DeviceKind::kUnset;
    e.direction = CopyDirectionBetween(e.src, e.dst);
    e.synchronizes = e.direction == CopyDirection::kDeviceToHost;
    const Type& t = n.result(0)->type();
    e.bytes = t.is_tensor() ? t.NumBytes() : DimExpr::Unknown();
    e.value = names_.Name(n.operand(0));
    e.copy = names_.Name(n.result(0));
    // The uses that cause the copy (they need the data where it goes) come first, so the
    // reason starts with the mask bit or kernel that asks for it; metadata-only uses follow.
    const absl::Span<const Use> found = uses_.Of(value_ids_.Id(n.result(0)));
    std::vector<Use> uses(found.begin(), found.end());
    // A memory.kill (plan-memory) marks where the copy dies: no reason to make it.
    uses.erase(std::remove_if(uses.begin(), uses.end(),
                              [](const Use& u) {
                                return u.block == nullptr && u.node != nullptr &&
                                       u.node->kind() == NodeKind::kCall &&
                                       u.node->op()->role() == OpRole::kKill;
                              }),
               uses.end());
    // Only uses that read the data are reasons for the copy: one that reads the shape alone
    // (a shape function's `shape` input) would be served by the metadata where the value is.
    const size_t data_uses = std::stable_partition(uses.begin(), uses.end(),
                                                   [&](const Use& u) { return NeedsData(u); }) -
                             uses.begin();
    std::vector<std::string> reasons;
    for (size_t i = 0; i < data_uses && i < 3; ++i) reasons.push_back(Describe(uses[i], e.dst));
    if (data_uses > 3) reasons.push_back(absl::StrCat("+", data_uses - 3, " more uses"));
    if (uses.empty()) {
      e.reason = "unused";
    } else if (data_uses == 0) {
      e.reason = absl::StrCat("no use reads the data (", Describe(uses[0], e.dst),
                              uses.size() > 1 ? absl::StrCat(", +", uses.size() - 1, " more") : "",
                              "): the copy is not needed");
    } else {
      e.reason = absl::StrJoin(reasons, "; ");
    }
    return e;
  }

  // True unless the use reads only metadata (a shape query, a shape function's parameter whose
  // mask lacks the value bit): such a use never needs the copy.
  static bool NeedsData(const Use& u) {
    if (u.block != nullptr || u.node == nullptr) return true;
    const UseNeeds needs = OperandNeeds(*u.node, u.index);
    return needs.host || needs.device;
  }

  const Module& module_;
  const Function& f_;
  std::set<std::string> function_level_;  // FunctionLevelSymbols(f_)
  CopyLedger& ledger_;
  const int region_;
  absl::flat_hash_set<std::string>& called_;
  ValueNames names_;
  const absl::flat_hash_map<const Block*, std::string> region_names_;
  // The values the function defines, and the uses of each by value id (ScratchIds: a map keyed
  // by pointer was a third of the ledger at 100k bindings).
  ScratchIds<Value> value_ids_;
  IdBuckets<Use> uses_;
  absl::flat_hash_set<const Value*> implied_;
};

}  // namespace

absl::string_view CopyDirectionName(CopyDirection d) {
  switch (d) {
    case CopyDirection::kHostToDevice: return "h2d";
    case CopyDirection::kDeviceToHost: return "d2h";
    case CopyDirection::kDeviceToDevice: return "d2d";
    case CopyDirection::kParam: return "param";
  }
  return "<bad direction>";
}

DimExpr CopyLedger::Executions(const LedgerEntry& entry) const {
  if (entry.region < 0 || entry.region >= static_cast<int>(regions.size())) return DimExpr(1);
  return DimExpr::Symbol(regions[entry.region].symbol);
}

DimExpr CopyLedger::Count(CopyDirection d) const {
  DimExpr total(0);
  for (const LedgerEntry& e : entries) {
    if (e.direction == d) total = total + Executions(e);
  }
  return total;
}

DimExpr CopyLedger::Bytes(CopyDirection d) const {
  DimExpr total(0);
  for (const LedgerEntry& e : entries) {
    if (e.direction == d) total = total + e.bytes * Executions(e);
  }
  return total;
}

DimExpr CopyLedger::Syncs() const {
  DimExpr total(0);
  for (const LedgerEntry& e : entries) {
    if (e.synchronizes) total = total + Executions(e);
  }
  return total;
}

int64_t CopyLedger::Sites(CopyDirection d) const {
  int64_t n = 0;
  for (const LedgerEntry& e : entries) n += e.direction == d;
  return n;
}

bool CopyLedger::HasUnknownBytes(CopyDirection d) const {
  for (const LedgerEntry& e : entries) {
    if (e.direction == d && e.bytes.has_unknown()) return true;
  }
  return false;
}

namespace {
// "1 copy", "3 copies", "$loop0 + 1 copies": singular only for the constant 1.
std::string Counted(const DimExpr& n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n.ToString(), " ", n.is_constant() && n.ToString() == "1" ? one : many);
}
}  // namespace

std::string CopyLedger::ToText() const {
  DimExpr copies(0);
  for (CopyDirection d : kAllCopyDirections) {
    if (d != CopyDirection::kParam) copies = copies + Count(d);
  }
  std::string out = absl::StrFormat("copy ledger of @%s: %s, %s", function,
                                    Counted(copies, "copy", "copies"),
                                    Counted(Syncs(), "sync", "syncs"));
  if (Sites(CopyDirection::kParam) > 0) {
    absl::StrAppend(&out, ", ",
                    Counted(Count(CopyDirection::kParam), "kernel parameter", "kernel parameters"));
  }
  if (!placed) {
    absl::StrAppend(&out, " (nothing is placed on a device yet: run plan-devices, or the "
                          "default pipeline of a device, to see the copies)");
  }
  out += "\n";
  for (const Assumption& a : assumptions) {
    absl::StrAppendFormat(&out, "  assumes %s: %s\n", a.Condition(), a.reason);
  }
  for (const LedgerRegion& r : regions) {
    absl::StrAppendFormat(&out, "  %s: executions of the %s (VM function %s)\n", r.symbol,
                          r.description, r.function);
  }
  for (CopyDirection d : kAllCopyDirections) {
    if (d == CopyDirection::kParam && Sites(d) == 0) continue;
    absl::StrAppendFormat(&out, "  %s: %s, %s bytes\n", CopyDirectionName(d),
                          d == CopyDirection::kParam
                              ? Counted(Count(d), "kernel parameter", "kernel parameters")
                              : Counted(Count(d), "copy", "copies"),
                          Bytes(d).ToString());
  }
  for (const LedgerEntry& e : entries) {
    const std::string runs =
        e.region >= 0 ? absl::StrCat(", once per execution of ", regions[e.region].symbol) : "";
    absl::StrAppendFormat(&out, "  %s %s -> %s (%s -> %s) %s bytes%s%s%s: %s\n",
                          CopyDirectionName(e.direction), e.value, e.copy, DeviceName(e.src),
                          DeviceName(e.dst), e.bytes.ToString(), e.synchronizes ? ", sync" : "",
                          runs, e.implied ? ", implied (manifest-alloc inserts it)" : "", e.reason);
  }
  return out;
}

std::string CopyLedger::ToJson() const {
  std::vector<std::string> regs;
  for (const LedgerRegion& r : regions) {
    regs.push_back(absl::StrFormat(
        "{\"symbol\": %s, \"function\": %s, \"description\": %s, \"parent\": %d, "
        "\"loop\": %s}",
        JsonString(r.symbol), JsonString(r.function), JsonString(r.description), r.parent,
        r.loop ? "true" : "false"));
  }
  std::vector<std::string> items;
  for (const LedgerEntry& e : entries) {
    items.push_back(absl::StrFormat(
        "{\"direction\": %s, \"src\": %s, \"dst\": %s, \"bytes\": %s, \"value\": %s, "
        "\"copy\": %s, \"sync\": %s, \"in_loop\": %s, \"executions\": %s, "
        "\"implied\": %s, \"reason\": %s}",
        JsonString(CopyDirectionName(e.direction)), JsonString(DeviceName(e.src)),
        JsonString(DeviceName(e.dst)), JsonString(e.bytes.ToString()), JsonString(e.value),
        JsonString(e.copy), e.synchronizes ? "true" : "false", e.in_loop ? "true" : "false",
        JsonString(Executions(e).ToString()), e.implied ? "true" : "false",
        JsonString(e.reason)));
  }
  std::vector<std::string> totals;
  for (CopyDirection d : kAllCopyDirections) {
    totals.push_back(absl::StrFormat("%s: {\"count\": %s, \"bytes\": %s}",
                                     JsonString(CopyDirectionName(d)),
                                     JsonString(Count(d).ToString()),
                                     JsonString(Bytes(d).ToString())));
  }
  std::vector<std::string> assumed;
  for (const Assumption& a : assumptions) {
    assumed.push_back(absl::StrFormat("{\"condition\": %s, \"reason\": %s}",
                                      JsonString(a.Condition()), JsonString(a.reason)));
  }
  return absl::StrFormat(
      "{\"function\": %s, \"assumptions\": [%s], \"regions\": [%s], \"entries\": [%s], "
      "\"totals\": {%s, \"syncs\": %s}}\n",
      JsonString(function), absl::StrJoin(assumed, ", "), absl::StrJoin(regs, ", "),
      absl::StrJoin(items, ", "), absl::StrJoin(totals, ", "), JsonString(Syncs().ToString()));
}

bool ScanPartBytesStated(const Node& loop, int result) {
  const Block& body = *loop.region(0);
  const std::vector<Value*>& yielded = body.results();
  if (loop.kind() != NodeKind::kLoop || result < 0 || result >= loop.num_results() ||
      1 + result >= static_cast<int>(yielded.size())) {
    return false;
  }
  const Type& part = yielded[1 + result]->type();
  const Type& stacked = loop.result(result)->type();
  if (!part.is_tensor() || !stacked.is_tensor()) return false;
  const DimExpr bytes = part.NumBytes();
  if (bytes.has_unknown()) return false;
  std::set<std::string> needed, bound;
  bytes.CollectSymbols(&needed);
  for (const DimExpr& d : stacked.shape()) d.CollectSymbols(&bound);
  return std::includes(bound.begin(), bound.end(), needed.begin(), needed.end());
}

std::set<std::string> FunctionLevelSymbols(const Function& f) {
  std::set<std::string> out;
  // A model has few distinct types and many bindings (100k results of f32[n, 16] in
  // bench/scale's largest): each distinct type's symbols are collected once.
  absl::flat_hash_set<Type> seen;
  auto add = [&](const Type& t) {
    if (!t.is_tensor() || t.is_static() || !seen.insert(t).second) return;
    for (const DimExpr& d : t.shape()) d.CollectSymbols(&out);
  };
  for (const auto& p : f.body().params()) add(p->type());
  for (const auto& n : f.body().nodes()) {
    for (int i = 0; i < n->num_results(); ++i) add(n->result(i)->type());
  }
  return out;
}

bool RegionCopyBytesStated(const DimExpr& bytes, const std::set<std::string>& function_level) {
  if (bytes.has_unknown()) return false;
  std::set<std::string> needed;
  bytes.CollectSymbols(&needed);
  return std::includes(function_level.begin(), function_level.end(), needed.begin(), needed.end());
}

namespace {

// Whether a binding of `b` (regions included) has a device; stops at the first (a placed
// function's first binding has one: no walk over 100k cold nodes).
bool AnyBindingPlaced(const Block& b) {
  for (const auto& n : b.nodes()) {
    if (n->device() != DeviceKind::kUnset) return true;
    for (int r = 0; r < n->num_regions(); ++r) {
      if (AnyBindingPlaced(*n->region(r))) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<CopyLedger> ComputeCopyLedger(const Module& module, absl::string_view function) {
  const Function* f = module.FindFunction(function);
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrFormat("copy ledger: no function @%s", function));
  }
  CopyLedger ledger;
  ledger.function = f->name();
  ledger.assumptions = f->assumptions();
  absl::flat_hash_set<std::string> called = {f->name()};
  LedgerBuilder(module, *f, ledger, /*region=*/-1, called).Build();
  bool placed = false;
  for (const auto& p : f->body().params()) placed = placed || p->device() != DeviceKind::kUnset;
  ledger.placed = placed || AnyBindingPlaced(f->body());
  return ledger;
}

}  // namespace hetpass
