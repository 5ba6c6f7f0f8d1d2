// cse: common subexpression elimination.
//
// Key of a binding: kind, op, callee, operands (after earlier replacements), attributes,
// constant data, device and result types. Bindings with regions (if, loop) and invokes are
// never merged (an invoke may call a function with effects later). Result types match up to
// data-dependent symbols: two argwhere of one operand got two fresh symbols from infer-types
// (`dyn1`, `dyn2`) but are one value; the merged one's symbols are renamed to the kept one's
// throughout the function, so every type downstream agrees again. Scopes: a stack of tables,
// one per block being walked; lookups search outward, inserts go to the innermost table, so a
// region may reuse a binding of an enclosing block but a binding inside a region is never
// visible outside it. A merged binding's results are redirected to the first one's and it is
// dropped from its block.
#include "passes/transforms/cse.h"

#include <functional>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "passes/ir/op_def.h"

namespace hetpass {
namespace {

// The walk replaces a binding's operands before keying it and never again after, so the key
// reads them from the binding itself.
struct Key {
  const Node* node;
  size_t hash;
};

struct KeyHash {
  size_t operator()(const Key& k) const { return k.hash; }
};

struct KeyEq {
  bool operator()(const Key& a, const Key& b) const {
    const Node& x = *a.node;
    const Node& y = *b.node;
    if (x.kind() != y.kind() || x.op() != y.op() || x.device() != y.device() ||
        x.operands() != y.operands() || x.attrs() != y.attrs() ||
        x.num_results() != y.num_results()) {
      return false;
    }
    // Result types are compared in the pass (TypesMatch), up to data-dependent symbols.
    return x.kind() != NodeKind::kConstant || x.constant_value() == y.constant_value();
  }
};

class CsePass : public Pass {
 public:
  absl::string_view name() const override { return CseOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    bool changed = false;
    for (const auto& f : module.functions()) {
      replace_.clear();
      scopes_.clear();
      rename_.clear();
      param_symbols_.clear();
      for (const auto& p : f->body().params()) {
        if (!p->type().is_tensor()) continue;
        for (const DimExpr& d : p->type().shape()) d.CollectSymbols(&param_symbols_);
      }
      changed |= Walk(f->body());
      if (!rename_.empty()) RenameSymbols(*f);
    }
    return changed;
  }

 private:
  using Table = absl::flat_hash_map<Key, Node*, KeyHash, KeyEq>;

  static bool Mergeable(const Node& n) {
    switch (n.kind()) {
      case NodeKind::kCall:
        return !n.op()->impure();  // two draws of a random op are two values
      case NodeKind::kConstant:
      case NodeKind::kTuple:
      case NodeKind::kGetItem:
        return true;
      // Builtins are cheap and seq.empty/opt.none differ only by type: not worth a key.
      case NodeKind::kBuiltin:
      case NodeKind::kInvoke:
      case NodeKind::kIf:
      case NodeKind::kLoop:
        return false;
    }
    return false;
  }

  static Key MakeKey(const Node& n) {
    size_t h = absl::HashOf(static_cast<int>(n.kind()), n.op(), static_cast<int>(n.device()),
                            n.attrs().Hash());
    for (const Value* v : n.operands()) h = absl::HashOf(h, v);
    if (n.kind() == NodeKind::kConstant) h = absl::HashOf(h, n.constant_value().Hash());
    return Key{&n, h};
  }

  Type Renamed(const Type& t) const {
    if (rename_.empty() || !t.is_tensor()) return t;
    std::vector<DimExpr> dims;
    for (const DimExpr& d : t.shape()) dims.push_back(d.Substitute(rename_));
    return Type::Tensor(t.dtype(), std::move(dims));
  }

  // Whether `prev`'s results and `node`'s have one type once `node`'s data-dependent symbols
  // (whole dims, not parameter symbols) are renamed to `prev`'s dims; records the renaming.
  bool TypesMatch(const Node& prev, const Node& node) {
    absl::flat_hash_map<std::string, DimExpr> renames;
    for (int i = 0; i < node.num_results(); ++i) {
      const Type a = Renamed(prev.result(i)->type());
      const Type b = Renamed(node.result(i)->type());
      if (a == b) continue;
      if (!a.is_tensor() || !b.is_tensor() || a.dtype() != b.dtype() || a.rank() != b.rank()) {
        return false;
      }
      for (int d = 0; d < a.rank(); ++d) {
        const DimExpr& x = a.shape()[d];
        const DimExpr& y = b.shape()[d];
        if (x == y) continue;
        if (!y.is_symbol() || param_symbols_.contains(y.symbol_name())) return false;
        auto [it, inserted] = renames.emplace(y.symbol_name(), x);
        if (!inserted && it->second != x) return false;
      }
    }
    for (auto& [from, to] : renames) rename_[from] = to;
    return true;
  }

  void RenameSymbols(Function& f) {
    // Chains (dyn3 -> dyn2 -> dyn1) resolve to their end.
    for (int round = 0; round < 8; ++round) {
      bool again = false;
      for (auto& [from, to] : rename_) {
        DimExpr next = to.Substitute(rename_);
        again |= next != to;
        to = std::move(next);
      }
      if (!again) break;
    }
    std::function<void(Block&)> block = [&](Block& b) {
      for (const auto& p : b.params()) p->set_type(Renamed(p->type()));
      for (const auto& n : b.nodes()) {
        for (const auto& r : n->results()) r->set_type(Renamed(r->type()));
        for (int i = 0; i < n->num_regions(); ++i) block(*n->region(i));
      }
    };
    block(f.body());
    std::vector<Type> results;
    for (const Type& t : f.result_types()) results.push_back(Renamed(t));
    f.set_result_types(std::move(results));
  }

  Node* Lookup(const Key& k) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(k);
      if (found != it->end()) return found->second;
    }
    return nullptr;
  }

  bool Walk(Block& block) {
    scopes_.emplace_back();
    scopes_.back().reserve(block.nodes().size());
    bool changed = false;
    std::vector<std::unique_ptr<Node>>& nodes = block.mutable_nodes();
    std::vector<std::unique_ptr<Node>> kept;
    kept.reserve(nodes.size());
    for (auto& node : nodes) {
      for (Value*& v : node->mutable_operands()) {
        auto it = replace_.find(v);
        if (it != replace_.end()) v = it->second;
      }
      for (int i = 0; i < node->num_regions(); ++i) changed |= Walk(*node->region(i));
      if (Mergeable(*node)) {
        Key key = MakeKey(*node);
        if (Node* prev = Lookup(key); prev != nullptr && TypesMatch(*prev, *node)) {
          for (int i = 0; i < node->num_results(); ++i) replace_[node->result(i)] = prev->result(i);
          retired_.push_back(std::move(node));
          changed = true;
          continue;
        }
        scopes_.back().emplace(std::move(key), node.get());
      }
      kept.push_back(std::move(node));
    }
    nodes = std::move(kept);
    for (Value*& v : block.mutable_results()) {
      auto it = replace_.find(v);
      if (it != replace_.end()) v = it->second;
    }
    scopes_.pop_back();
    return changed;
  }

  absl::flat_hash_map<const Value*, Value*> replace_;
  absl::flat_hash_map<std::string, DimExpr> rename_;  // merged data symbol -> kept dim
  std::set<std::string> param_symbols_;
  std::vector<Table> scopes_;
  std::vector<std::unique_ptr<Node>> retired_;  // keys may point at them until the walk ends
};

}  // namespace

std::unique_ptr<Pass> CreateCsePass(const CseOptions&) { return std::make_unique<CsePass>(); }

}  // namespace hetpass
