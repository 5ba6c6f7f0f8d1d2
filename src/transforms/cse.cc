// cse: common subexpression elimination.
//
// Key of a binding: kind, op, callee, operands (after earlier replacements), attributes,
// constant data, device and result types. Bindings with regions (if, loop) and invokes are
// never merged (an invoke may call a function with effects later). Scopes: a stack of tables,
// one per block being walked; lookups search outward, inserts go to the innermost table, so a
// region may reuse a binding of an enclosing block but a binding inside a region is never
// visible outside it. A merged binding's results are redirected to the first one's and it is
// dropped from its block.
#include "passes/transforms/cse.h"

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace hetpass {
namespace {

struct Key {
  const Node* node;
  std::vector<const Value*> operands;  // after replacement
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
        a.operands != b.operands || x.attrs() != y.attrs() ||
        x.num_results() != y.num_results()) {
      return false;
    }
    for (int i = 0; i < x.num_results(); ++i) {
      if (x.result(i)->type() != y.result(i)->type()) return false;
    }
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
      changed |= Walk(f->body());
    }
    return changed;
  }

 private:
  using Table = absl::flat_hash_map<Key, Node*, KeyHash, KeyEq>;

  static bool Mergeable(const Node& n) {
    switch (n.kind()) {
      case NodeKind::kCall:
      case NodeKind::kConstant:
      case NodeKind::kTuple:
      case NodeKind::kGetItem:
        return true;
      case NodeKind::kInvoke:
      case NodeKind::kIf:
      case NodeKind::kLoop:
        return false;
    }
    return false;
  }

  static Key MakeKey(const Node& n) {
    Key k{&n, {}, 0};
    size_t h = absl::HashOf(static_cast<int>(n.kind()), n.op(), static_cast<int>(n.device()),
                            n.attrs().Hash());
    for (const Value* v : n.operands()) {
      k.operands.push_back(v);
      h = absl::HashOf(h, v);
    }
    if (n.kind() == NodeKind::kConstant) h = absl::HashOf(h, n.constant_value().Hash());
    k.hash = h;
    return k;
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
        if (Node* prev = Lookup(key)) {
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
  std::vector<Table> scopes_;
  std::vector<std::unique_ptr<Node>> retired_;  // keys may point at them until the walk ends
};

}  // namespace

std::unique_ptr<Pass> CreateCsePass(const CseOptions&) { return std::make_unique<CsePass>(); }

}  // namespace hetpass
