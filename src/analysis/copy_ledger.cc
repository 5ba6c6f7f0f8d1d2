// Copy ledger: a read-only walk of one function.
//
// Phase 1  Name values as the printer does (ValueNames), and index every use of every value:
//          operands of bindings (with the operand position) and block results (return, yield).
// Phase 2  For each device_copy (OpRole::kDeviceCopy) in program order, including inside
//          regions: direction from its src/dst attributes, bytes from its result type (an
//          expression of the symbols), whether a loop encloses it, and the reason: the uses of
//          the copy's result, described by what they need ("input 1 'begin' of
//          dyn.strided_slice %7 is value", "input 0 'data' of nn.dense %3 runs on sim",
//          "returned from @main").
// Output: entries in program order; totals per direction; syncs = device-to-host copies.
#include "passes/analysis/copy_ledger.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/device_planner/device_rules.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/transforms/primitive_function.h"

namespace hetpass {
namespace {

struct Use {
  const Node* node = nullptr;   // the using binding, or the region owner for a yield
  const Block* block = nullptr;  // set for block results (return / yield)
  int index = 0;
};

class LedgerBuilder {
 public:
  LedgerBuilder(const Module& m, const Function& f) : module_(m), f_(f), names_(f) {}

  CopyLedger Build() {
    IndexUses(f_.body());
    CopyLedger ledger;
    ledger.function = f_.name();
    Visit(f_.body(), /*in_loop=*/false, ledger);
    return ledger;
  }

 private:
  void IndexUses(const Block& b) {
    for (const auto& n : b.nodes()) {
      for (int i = 0; i < n->num_operands(); ++i) uses_[n->operand(i)].push_back(Use{n.get(), nullptr, i});
      for (int r = 0; r < n->num_regions(); ++r) IndexUses(*n->region(r));
    }
    for (size_t i = 0; i < b.results().size(); ++i) {
      uses_[b.results()[i]].push_back(Use{b.parent_node(), &b, static_cast<int>(i)});
    }
  }

  std::string ResultNames(const Node& n) const {
    std::vector<std::string> names;
    for (const auto& r : n.results()) names.push_back(names_.Name(r.get()));
    return absl::StrJoin(names, ", ");
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
          return absl::StrFormat("input %d '%s' of %s %s is value", u.index, in.name, op.name(),
                                 ResultNames(n));
        }
        return absl::StrFormat("input %d '%s' of %s %s runs on %s", u.index, in.name, op.name(),
                               ResultNames(n), DeviceName(n.device()));
      }
      case NodeKind::kInvoke: {
        const std::string results = ResultNames(n);
        if (IsShapeFunctionInvoke(n)) {
          return absl::StrFormat("argument %d of the shape function of @%s %s is value",
                                 u.index, n.callee(), results);
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

  void Visit(const Block& b, bool in_loop, CopyLedger& ledger) {
    for (const auto& n : b.nodes()) {
      if (n->kind() == NodeKind::kCall && n->op()->role() == OpRole::kDeviceCopy) {
        ledger.entries.push_back(Entry(*n, in_loop));
      } else if (n->kind() == NodeKind::kCall) {
        AddImplied(*n, in_loop, ledger);
      } else if (IsPlainInvoke(*n)) {
        AddImpliedForPrimitive(*n, in_loop, ledger);
      }
      for (int r = 0; r < n->num_regions(); ++r) {
        Visit(*n->region(r), in_loop || n->kind() == NodeKind::kLoop, ledger);
      }
    }
  }

  // Shape-function reads of accelerator values that the IR does not copy yet, and the count of
  // a data-dependent op on the accelerator.
  void AddImplied(const Node& n, bool in_loop, CopyLedger& ledger) {
    if (!n.op()->shape_counter().empty() && IsAccelerator(n.device())) {
      LedgerEntry e = Implied(n, in_loop, DimExpr(8), absl::StrCat("count of ", ResultNames(n)),
                              absl::StrFormat("the output shape of %s %s is data-dependent: its "
                                              "count",
                                              n.op()->name(), ResultNames(n)));
      e.src = n.device();
      ledger.entries.push_back(std::move(e));
      return;
    }
    for (int i = 0; i < n.num_operands(); ++i) {
      const Value* v = n.operand(i);
      const UseNeeds needs = OperandNeeds(n, i);
      if (!needs.host || !needs.device || !IsAccelerator(v->device())) continue;
      if (!implied_.insert(v).second) continue;  // one copy per value, shared
      LedgerEntry e;
      e.node = &n;
      e.implied = true;
      e.in_loop = in_loop;
      e.direction = CopyDirection::kDeviceToHost;
      e.synchronizes = true;
      e.src = v->device();
      e.dst = DeviceKind::kCpu;
      e.bytes = v->type().is_tensor() ? v->type().NumBytes() : DimExpr::Unknown();
      e.value = names_.Name(v);
      e.copy = "(implied)";
      e.reason = absl::StrFormat("input %d '%s' of %s %s is value (shape function on the host)",
                                 i, n.op()->input(i).name, n.op()->name(), ResultNames(n));
      ledger.entries.push_back(std::move(e));
    }
  }

  // Before manifest-alloc, a primitive invoke implies the same copies as the ops it fused: the
  // derived mask says which parameters its shape function reads, and a data-dependent op on
  // the accelerator implies the copy of its 8-byte count.
  void AddImpliedForPrimitive(const Node& n, bool in_loop, CopyLedger& ledger) {
    const Function* callee = module_.FindFunction(n.callee());
    if (callee == nullptr || !IsPrimitive(*callee) || !IsAccelerator(n.device())) return;
    if (callee->body().nodes().size() == 1) {
      const Node& only = *callee->body().nodes()[0];
      if (only.kind() == NodeKind::kCall && !only.op()->shape_counter().empty()) {
        LedgerEntry e = Implied(n, in_loop, DimExpr(8), absl::StrCat("count of ", n.callee()),
                                absl::StrFormat("the output shape of %s %s is data-dependent: "
                                                "its count",
                                                only.op()->name(), ResultNames(n)));
        e.src = n.device();
        ledger.entries.push_back(std::move(e));
        return;
      }
    }
    if (ResultShapesKnown(n)) return;  // no shape function runs
    const std::vector<InputDep> mask = DeriveInputMask(*callee);
    for (int i = 0; i < n.num_operands() && i < static_cast<int>(mask.size()); ++i) {
      const Value* v = n.operand(i);
      if (!NeedsValue(mask[i]) || !IsAccelerator(v->device())) continue;
      if (!implied_.insert(v).second) continue;
      LedgerEntry e = Implied(n, in_loop, v->type().is_tensor() ? v->type().NumBytes() : DimExpr::Unknown(),
                              names_.Name(v),
                              absl::StrFormat("argument %d of @%s %s is value (shape function on "
                                              "the host)",
                                              i, n.callee(), ResultNames(n)));
      e.src = v->device();
      ledger.entries.push_back(std::move(e));
    }
  }

  LedgerEntry Implied(const Node& n, bool in_loop, DimExpr bytes, std::string value,
                      std::string reason) const {
    LedgerEntry e;
    e.node = &n;
    e.implied = true;
    e.in_loop = in_loop;
    e.direction = CopyDirection::kDeviceToHost;
    e.synchronizes = true;
    e.dst = DeviceKind::kCpu;
    e.bytes = std::move(bytes);
    e.value = std::move(value);
    e.copy = "(implied)";
    e.reason = std::move(reason);
    return e;
  }

  LedgerEntry Entry(const Node& n, bool in_loop) const {
    LedgerEntry e;
    e.node = &n;
    e.in_loop = in_loop;
    const AttrValue* src = n.attrs().Find("src");
    const AttrValue* dst = n.attrs().Find("dst");
    e.src = src ? ParseDevice(std::get<std::string>(*src)).value_or(DeviceKind::kUnset)
                : DeviceKind::kUnset;
    e.dst = dst ? ParseDevice(std::get<std::string>(*dst)).value_or(DeviceKind::kUnset)
                : DeviceKind::kUnset;
    if (!IsAccelerator(e.src) && IsAccelerator(e.dst)) {
      e.direction = CopyDirection::kHostToDevice;
    } else if (IsAccelerator(e.src) && !IsAccelerator(e.dst)) {
      e.direction = CopyDirection::kDeviceToHost;
      e.synchronizes = true;
    } else {
      e.direction = CopyDirection::kDeviceToDevice;
    }
    const Type& t = n.result(0)->type();
    e.bytes = t.is_tensor() ? t.NumBytes() : DimExpr::Unknown();
    e.value = names_.Name(n.operand(0));
    e.copy = names_.Name(n.result(0));
    std::vector<std::string> reasons;
    auto it = uses_.find(n.result(0));
    const size_t total = it == uses_.end() ? 0 : it->second.size();
    for (size_t i = 0; i < total && i < 3; ++i) reasons.push_back(Describe(it->second[i], e.dst));
    if (total > 3) reasons.push_back(absl::StrCat("+", total - 3, " more uses"));
    e.reason = total == 0 ? "unused" : absl::StrJoin(reasons, "; ");
    return e;
  }

  const Module& module_;
  const Function& f_;
  ValueNames names_;
  absl::flat_hash_map<const Value*, std::vector<Use>> uses_;
  absl::flat_hash_set<const Value*> implied_;
};

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

constexpr CopyDirection kDirections[] = {CopyDirection::kHostToDevice,
                                         CopyDirection::kDeviceToHost,
                                         CopyDirection::kDeviceToDevice};

}  // namespace

absl::string_view CopyDirectionName(CopyDirection d) {
  switch (d) {
    case CopyDirection::kHostToDevice: return "h2d";
    case CopyDirection::kDeviceToHost: return "d2h";
    case CopyDirection::kDeviceToDevice: return "d2d";
  }
  return "<bad direction>";
}

int64_t CopyLedger::Count(CopyDirection d) const {
  int64_t n = 0;
  for (const LedgerEntry& e : entries) n += e.direction == d;
  return n;
}

DimExpr CopyLedger::Bytes(CopyDirection d) const {
  DimExpr total(0);
  for (const LedgerEntry& e : entries) {
    if (e.direction == d) total = total + e.bytes;
  }
  return total;
}

int64_t CopyLedger::Syncs() const {
  int64_t n = 0;
  for (const LedgerEntry& e : entries) n += e.synchronizes;
  return n;
}

std::string CopyLedger::ToText() const {
  std::string out = absl::StrFormat("copy ledger of @%s: %d copies, %d syncs\n", function,
                                    entries.size(), Syncs());
  for (CopyDirection d : kDirections) {
    absl::StrAppendFormat(&out, "  %s: %d copies, %s bytes\n", CopyDirectionName(d), Count(d),
                          Bytes(d).ToString());
  }
  for (const LedgerEntry& e : entries) {
    absl::StrAppendFormat(&out, "  %s %s -> %s (%s -> %s) %s bytes%s%s%s: %s\n",
                          CopyDirectionName(e.direction), e.value, e.copy, DeviceName(e.src),
                          DeviceName(e.dst), e.bytes.ToString(), e.synchronizes ? ", sync" : "",
                          e.in_loop ? ", per loop iteration" : "",
                          e.implied ? ", implied (manifest-alloc inserts it)" : "", e.reason);
  }
  return out;
}

std::string CopyLedger::ToJson() const {
  std::vector<std::string> items;
  for (const LedgerEntry& e : entries) {
    items.push_back(absl::StrFormat(
        "{\"direction\": %s, \"src\": %s, \"dst\": %s, \"bytes\": %s, \"value\": %s, "
        "\"copy\": %s, \"sync\": %s, \"in_loop\": %s, \"implied\": %s, \"reason\": %s}",
        JsonString(CopyDirectionName(e.direction)), JsonString(DeviceName(e.src)),
        JsonString(DeviceName(e.dst)), JsonString(e.bytes.ToString()), JsonString(e.value),
        JsonString(e.copy), e.synchronizes ? "true" : "false", e.in_loop ? "true" : "false",
        e.implied ? "true" : "false", JsonString(e.reason)));
  }
  std::vector<std::string> totals;
  for (CopyDirection d : kDirections) {
    totals.push_back(absl::StrFormat("%s: {\"count\": %d, \"bytes\": %s}",
                                     JsonString(CopyDirectionName(d)), Count(d),
                                     JsonString(Bytes(d).ToString())));
  }
  return absl::StrFormat(
      "{\"function\": %s, \"entries\": [%s], \"totals\": {%s, \"syncs\": %d}}\n",
      JsonString(function), absl::StrJoin(items, ", "), absl::StrJoin(totals, ", "), Syncs());
}

absl::StatusOr<CopyLedger> ComputeCopyLedger(const Module& module, absl::string_view function) {
  const Function* f = module.FindFunction(function);
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrFormat("copy ledger: no function @%s", function));
  }
  return LedgerBuilder(module, *f).Build();
}

}  // namespace hetpass
