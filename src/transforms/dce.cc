// dce: dead code elimination.
//
// Liveness is computed backwards per block: the block's results are live; a binding is live
// if any of its results is; a live binding makes its operands live, and its regions are
// processed with their own results as roots (uses inside a region keep captured outer values
// alive, since one live set spans all scopes: values are unique objects). Dead bindings,
// including whole if/loop nodes, are removed. Function parameters are never removed (they
// are the signature). All registered ops are pure; an op with effects would need a registry
// capability before this pass may remove it.
#include "passes/transforms/dce.h"

#include "absl/container/flat_hash_set.h"

namespace hetpass {
namespace {

class DcePass : public Pass {
 public:
  absl::string_view name() const override { return DceOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    bool changed = false;
    for (const auto& f : module.functions()) {
      absl::flat_hash_set<const Value*> live;
      changed |= Sweep(f->body(), live);
    }
    return changed;
  }

 private:
  static bool Sweep(Block& block, absl::flat_hash_set<const Value*>& live) {
    for (const Value* v : block.results()) live.insert(v);
    std::vector<std::unique_ptr<Node>>& nodes = block.mutable_nodes();
    std::vector<bool> keep(nodes.size(), false);
    bool changed = false;
    for (size_t i = nodes.size(); i-- > 0;) {
      Node& n = *nodes[i];
      bool used = false;
      for (const auto& r : n.results()) used |= live.contains(r.get());
      if (!used) {
        changed = true;
        continue;
      }
      keep[i] = true;
      for (int r = 0; r < n.num_regions(); ++r) changed |= Sweep(*n.region(r), live);
      for (const Value* v : n.operands()) live.insert(v);
    }
    if (changed) {
      std::vector<std::unique_ptr<Node>> kept;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (keep[i]) kept.push_back(std::move(nodes[i]));
      }
      nodes = std::move(kept);
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateDcePass(const DceOptions&) { return std::make_unique<DcePass>(); }

}  // namespace hetpass
