#include "viz/copies.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::viz {
namespace {

// An entry for a device_copy the ledger did not describe: what the binding itself says.
LedgerEntry EntryFromNode(const Node& n, const ValueNames& names, bool in_loop) {
  LedgerEntry e;
  e.node = &n;
  e.in_loop = in_loop;
  auto device_attr = [&](absl::string_view key) {
    const AttrValue* v = n.attrs().Find(key);
    if (v == nullptr || !std::holds_alternative<std::string>(*v)) return DeviceKind::kUnset;
    return ParseDevice(std::get<std::string>(*v)).value_or(DeviceKind::kUnset);
  };
  e.src = device_attr("src");
  e.dst = device_attr("dst");
  if (!IsAccelerator(e.src) && IsAccelerator(e.dst)) {
    e.direction = CopyDirection::kHostToDevice;
  } else if (IsAccelerator(e.src) && !IsAccelerator(e.dst)) {
    e.direction = CopyDirection::kDeviceToHost;
    e.synchronizes = true;
  } else {
    e.direction = CopyDirection::kDeviceToDevice;
  }
  const Type& t = n.num_results() > 0 ? n.result(0)->type() : Type();
  e.bytes = t.is_tensor() ? t.NumBytes() : DimExpr::Unknown();
  if (n.num_operands() > 0) e.value = names.Name(n.operand(0));
  if (n.num_results() > 0) e.copy = names.Name(n.result(0));
  e.reason = "not in the copy ledger";
  return e;
}

void CollectBlock(const Block& block, const ValueNames& names, bool in_loop,
                  const absl::flat_hash_map<const Node*, std::vector<const LedgerEntry*>>& ledger,
                  const std::string& function, std::vector<CopyInfo>* out, int* unlisted) {
  for (const auto& n : block.nodes()) {
    auto it = ledger.find(n.get());
    if (it != ledger.end()) {
      for (const LedgerEntry* e : it->second) out->push_back(CopyInfo{function, *e, true});
    } else if (IsDeviceCopy(*n)) {
      out->push_back(CopyInfo{function, EntryFromNode(*n, names, in_loop), false});
      ++*unlisted;
    }
    for (int r = 0; r < n->num_regions(); ++r) {
      CollectBlock(*n->region(r), names, in_loop || n->kind() == NodeKind::kLoop, ledger, function,
                   out, unlisted);
    }
  }
}

}  // namespace

bool IsDeviceCopy(const Node& node) {
  return node.kind() == NodeKind::kCall && node.op() != nullptr &&
         node.op()->role() == OpRole::kDeviceCopy;
}

std::vector<const CopyInfo*> ModuleCopies::ForNode(const Node* node) const {
  std::vector<const CopyInfo*> out;
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return out;
  for (int i : it->second) out.push_back(&copies_[i]);
  return out;
}

int ModuleCopies::Count(CopyDirection d) const {
  int n = 0;
  for (const CopyInfo& c : copies_) n += c.entry.direction == d;
  return n;
}

DimExpr ModuleCopies::Bytes(CopyDirection d) const {
  DimExpr total(0);
  for (const CopyInfo& c : copies_) {
    if (c.entry.direction == d) total = total + c.entry.bytes;
  }
  return total;
}

ModuleCopies CollectCopies(const Module& module) {
  ModuleCopies result;
  // A function's ledger includes the functions it invokes (their copies are attributed to the
  // invoke), so an invoked primitive is not a ledger root of its own: its by-value parameters
  // and counts would be listed twice (maskrcnn_tiny after manifest-alloc: 156 rows for the 86
  // entries of main's ledger).
  absl::flat_hash_set<std::string> invoked;
  for (const auto& f : module.functions()) {
    WalkNodes(f->body(), [&](const Node& n) {
      if (n.kind() == NodeKind::kInvoke) invoked.insert(n.callee());
    });
  }
  for (const auto& f : module.functions()) {
    if (IsPrimitive(*f) && invoked.contains(f->name())) continue;
    absl::StatusOr<CopyLedger> ledger = ComputeCopyLedger(module, f->name());
    absl::flat_hash_map<const Node*, std::vector<const LedgerEntry*>> by_node;
    std::vector<const LedgerEntry*> detached;  // entries without a binding
    if (ledger.ok()) {
      for (const LedgerEntry& e : ledger->entries) {
        if (e.node != nullptr) {
          by_node[e.node].push_back(&e);
        } else {
          detached.push_back(&e);
        }
      }
    } else {
      result.notes_.push_back(
          absl::StrCat("copy ledger of @", f->name(), " unavailable: ", ledger.status().message()));
    }
    const ValueNames names(*f);
    const size_t first = result.copies_.size();
    int unlisted = 0;
    CollectBlock(f->body(), names, /*in_loop=*/false, by_node, f->name(), &result.copies_,
                 &unlisted);
    for (const LedgerEntry* e : detached) result.copies_.push_back(CopyInfo{f->name(), *e, true});
    if (unlisted > 0 && ledger.ok()) {
      result.notes_.push_back(absl::StrCat(unlisted, " device_copy binding(s) of @", f->name(),
                                           " missing from the copy ledger"));
    }
    for (size_t i = first; i < result.copies_.size(); ++i) {
      const Node* node = result.copies_[i].entry.node;
      if (node != nullptr) result.by_node_[node].push_back(static_cast<int>(i));
    }
  }
  return result;
}

}  // namespace hetpass::viz
