// plan-memory: storage shared by liveness, in-place outputs and kill points.
//
// Input: a function after manifest-alloc. Every tensor a kernel writes comes either from its
// own `memory.alloc_storage` + `memory.alloc_tensor` pair (its size a constant or an expression
// of the bound symbols) or from `memory.alloc_tensor_dyn` (a size known only at run time);
// every value lives until the VM function that holds it returns.
//
// Definitions (per block: a function body, an if branch, a loop body; each planned on its own)
//   Index     the position of a node in its block; the block's results are used at index N
//             (the end), so a returned value is live to the end and no later tensor is ever
//             written over it.
//   Use       a node uses its operands and, for if/loop, every value its regions use that is
//             defined outside them (a loop body runs many times: the whole loop node is one
//             use, so a captured value stays intact for every iteration).
//   Alias     values that may share bytes: a tensor and its storage; the results of tuple,
//             get_item, if, loop and plain calls with their operands and captured values (a
//             branch may return a captured tensor, a loop with no trip returns its initial
//             value). Alias groups are the union-find classes of these pairs; a group's
//             lifetime ends at the last use of any member.
//   Candidate an alloc_storage whose only user is one alloc_tensor at offset 0 in the same
//             block, and nothing else (not returned, not captured). Its interval runs from the
//             alloc_storage to its alias group's last use.
//   Class     one storage shared by candidates with disjoint intervals, on one device with
//             one alignment, sized by a symbolic expression.
//
// Phases
//   0. Regions first: every if/loop body is planned as a block of its own (its values never
//      share with the outer block's, so nothing is assumed about how often a region runs).
//      Kill points from an earlier run of the pass are removed (they are recomputed).
//   1. Liveness: last use per value (see Use), alias groups, the kernel writing each tensor.
//   2. Assignment, candidates in program order, greedily:
//      a. In place: the kernel writing the candidate is pointwise (every op of its primitive
//         is elementwise or broadcast, so output element i depends only on element i of a
//         same-shaped input) and one of its inputs has exactly the candidate's type, occupies
//         a class, and its group's last use is this kernel: the candidate takes that class.
//      b. Share: a class whose occupant's group died before the candidate's alloc_storage,
//         same device and alignment, whose size provably covers the candidate's (SizeCovers:
//         equal first, then the smallest cover), or else one the candidate's size covers
//         (the class grows to it: every earlier occupant still fits).
//      c. Otherwise the candidate opens a class of its own.
//   3. Rewrite: a class keeps its first member's alloc_storage, typed with the class size;
//      every member's alloc_tensor views it; the other members' alloc_storage nodes go.
//   4. Kill points: after each node, one `memory.kill(...)` listing the values defined in the
//      block (or its parameters) whose last use that node is: tensors, storage and tuples,
//      constants excepted. Values never used die right after their definition. The VM drops
//      their registers, so storage returns to its pool as soon as its last view dies.
//
// Output invariants: manifest-alloc's (VerifyExplicitAllocation) hold; every alloc_tensor
// views a storage at offset 0 whose size covers its type; two tensors of one storage have
// disjoint lifetimes unless one was written in place over the other by a pointwise kernel;
// a block's results are never overwritten; no kill precedes a use. Running the pass on its own
// output changes nothing.
//
// Known gaps: a class is one storage sized to its largest member, not an arena with offsets
// (the VM's `offset` is static and most sizes here are symbolic); alloc_tensor_dyn and
// device_copy results are not shared statically (the pool reuses their memory once killed);
// regions share nothing with their enclosing block.
#include "passes/memory_planner/plan_memory.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/scratch_ids.h"
#include "passes/manifest_alloc/manifest_alloc.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {

bool SizeCovers(const DimExpr& a, const DimExpr& b) {
  if (a.has_unknown() || b.has_unknown()) return false;
  return shape_rules::ProvablyNonNegative(a - b);  // the shape rules' own proof: dims are >= 0
}

namespace {

bool IsKill(const Node& n) { return n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kKill; }
bool HasRole(const Node& n, OpRole role) { return n.kind() == NodeKind::kCall && n.op()->role() == role; }

// Every value a block uses, nested regions included (operands and results), in first-use order.
void CollectUses(const Block& b, std::vector<const Value*>* out) {
  for (const auto& n : b.nodes()) {
    for (const Value* v : n->operands()) out->push_back(v);
    for (int i = 0; i < n->num_regions(); ++i) CollectUses(*n->region(i), out);
  }
  for (const Value* v : b.results()) out->push_back(v);
}

// Output element i reads only element i of each input of the output's shape.
bool Pointwise(const Function& primitive) {
  for (const auto& n : primitive.body().nodes()) {
    if (n->kind() != NodeKind::kCall || n->num_regions() != 0) return false;
    const FusionPattern p = n->op()->pattern();
    if (p != FusionPattern::kElementwise && p != FusionPattern::kBroadcast) return false;
  }
  return !primitive.body().nodes().empty();
}

struct UnionFind {
  std::vector<int> parent;
  int Add() {
    parent.push_back(static_cast<int>(parent.size()));
    return parent.back();
  }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(int a, int b) { parent[Find(a)] = Find(b); }
};

class BlockPlanner {
 public:
  BlockPlanner(const PlanMemoryOptions& o, Module& m, std::vector<std::unique_ptr<Node>>& retired)
      : options_(o), module_(m), retired_(retired) {}

  struct Stats {
    int shared = 0, in_place = 0, kills = 0;
    bool changed = false;
  };

  absl::Status Plan(Block& block, Stats& stats) {
    for (const auto& n : block.nodes()) {
      for (int i = 0; i < n->num_regions(); ++i) RETURN_IF_ERROR(Plan(*n->region(i), stats));
    }
    // Phase 0: drop old kill points (recomputed in phase 4), noting them (KillPoint) to tell
    // whether the run changed them. Each sweep of a 100k-binding block reads it from memory
    // again, so the notes are taken in the sweeps that move the nodes anyway.
    std::vector<int> kills_before, kills_after;
    std::vector<std::unique_ptr<Node>> nodes;
    nodes.reserve(block.nodes().size());
    {
      ScratchIds<Value> number;
      for (auto& n : block.mutable_nodes()) {
        KillPoint(*n, number, &kills_before);
        if (IsKill(*n)) {
          retired_.push_back(std::move(n));
        } else {
          nodes.push_back(std::move(n));
        }
      }
    }
    block.mutable_nodes().clear();
    if (options_.share) AssignStorage(block, nodes, stats);
    nodes.erase(std::remove(nodes.begin(), nodes.end(), nullptr), nodes.end());
    if (options_.kill) {
      InsertKills(block, nodes, stats, &kills_after);
    } else {
      ScratchIds<Value> number;
      for (auto& n : nodes) {
        KillPoint(*n, number, &kills_after);
        block.Append(std::move(n));
      }
    }
    if (kills_after != kills_before) stats.changed = true;
    return absl::OkStatus();
  }

 private:
  // Phase 1 on a node list: last use per value defined in the block or a block parameter.
  struct Liveness {
    static constexpr int kUnused = -2;
    // The block's parameters, then its nodes' results (ScratchIds: maps keyed by pointer were
    // most of the pass at 100k bindings); by id: the defining node's index (-1: a parameter),
    // and the last use's (N: the block's results; kUnused: none).
    ScratchIds<Value> ids;
    std::vector<int> def;
    std::vector<int> last_use;
    void Define(const Value* v, int k) {
      ids.Number(v);
      def.push_back(k);
      last_use.push_back(kUnused);
    }
    void Use(const Value* v, int k) {
      if (const int id = ids.Id(v); id >= 0) last_use[id] = std::max(last_use[id], k);
    }
    // The last use, or the definition for an unused value.
    int End(int id) const { return last_use[id] == kUnused ? def[id] : last_use[id]; }
  };
  static Liveness ComputeLiveness(const Block& block, const std::vector<std::unique_ptr<Node>>& nodes) {
    Liveness l;
    for (const auto& p : block.params()) l.Define(p.get(), -1);
    const int end = static_cast<int>(nodes.size());
    std::vector<const Value*> captured;
    for (int k = 0; k < end; ++k) {
      const Node* n = nodes[k].get();
      if (n == nullptr) continue;
      for (const auto& r : n->results()) l.Define(r.get(), k);
      for (const Value* v : n->operands()) l.Use(v, k);
      captured.clear();
      for (int i = 0; i < n->num_regions(); ++i) CollectUses(*n->region(i), &captured);
      for (const Value* v : captured) l.Use(v, k);
    }
    for (const Value* v : block.results()) l.Use(v, end);
    return l;
  }

  struct Candidate {
    Node* storage_node;
    Node* tensor_node;
    int start;  // index of the alloc_storage
    int group;  // alias group (of the tensor)
  };
  struct Class {
    DeviceKind device;
    int64_t alignment;
    DimExpr size;
    Node* storage_node;  // the first member's alloc_storage
    int occupant_group;  // alias group of the current occupant
  };

  void AssignStorage(Block& block, std::vector<std::unique_ptr<Node>>& nodes, Stats& stats) {
    const Liveness l = ComputeLiveness(block, nodes);
    // Per-value facts are vectors indexed by the liveness ids (the block's parameters and
    // results); maps keyed by pointer, and a vector of users per value, were most of the pass
    // at 100k bindings. Alias groups: union-find element i is the value of liveness id i; a
    // value from an enclosing block (captured by a region) gets an element after those.
    const int num_ids = l.ids.size();
    UnionFind uf;
    uf.parent.resize(num_ids);
    std::iota(uf.parent.begin(), uf.parent.end(), 0);
    absl::flat_hash_map<const Value*, int> outer;
    auto id_of = [&](const Value* v) -> int {
      if (const int i = l.ids.Id(v); i >= 0) return i;
      auto [it, inserted] = outer.try_emplace(v, 0);
      if (inserted) it->second = uf.Add();
      return it->second;
    };
    const int end = static_cast<int>(nodes.size());
    std::vector<const Value*> related;
    for (int k = 0; k < end; ++k) {
      const Node& n = *nodes[k];
      // A container's result shares its elements' storage (seq.insert, seq.at, opt.get), so a
      // builtin ties their lifetimes like a tuple does.
      const bool structural = n.kind() == NodeKind::kTuple || n.kind() == NodeKind::kGetItem ||
                              n.kind() == NodeKind::kBuiltin ||
                              n.kind() == NodeKind::kIf || n.kind() == NodeKind::kLoop ||
                              IsPlainInvoke(n);
      if (HasRole(n, OpRole::kAllocTensor)) uf.Union(id_of(n.result()), id_of(n.operand(0)));
      if (!structural) continue;
      related.assign(n.operands().begin(), n.operands().end());
      for (int i = 0; i < n.num_regions(); ++i) CollectUses(*n.region(i), &related);
      for (const auto& r : n.results()) {
        for (const Value* v : related) {
          if (l.ids.Contains(v)) uf.Union(id_of(r.get()), id_of(v));
        }
      }
    }
    // A group's lifetime ends at the last use of any member (by the group's root).
    std::vector<int> group_end(uf.parent.size(), std::numeric_limits<int>::min());
    for (int i = 0; i < num_ids; ++i) {
      int& e = group_end[uf.Find(i)];
      e = std::max(e, l.End(i));
    }
    for (int& e : group_end) {
      if (e == std::numeric_limits<int>::min()) e = 0;  // a group of outer values only
    }
    // The users of each value of the block (how many, and the first), and the kernel writing
    // each tensor (its node index; -1: none).
    std::vector<int> num_users(num_ids, 0);
    std::vector<const Node*> first_user(num_ids, nullptr);
    std::vector<int> writer(num_ids, -1);
    std::vector<const Value*> uses;
    for (int k = 0; k < end; ++k) {
      const Node& n = *nodes[k];
      uses.assign(n.operands().begin(), n.operands().end());
      for (int i = 0; i < n.num_regions(); ++i) CollectUses(*n.region(i), &uses);
      for (const Value* v : uses) {
        if (const int i = l.ids.Id(v); i >= 0 && num_users[i]++ == 0) first_user[i] = &n;
      }
      if (IsKernelInvoke(n)) {
        const int outs = static_cast<int>(n.attrs().GetInt(kKernelOutputsAttr));
        for (int i = n.num_operands() - outs; i < n.num_operands(); ++i) {
          if (const int id = l.ids.Id(n.operand(i)); id >= 0 && writer[id] < 0) writer[id] = k;
        }
      }
    }
    absl::flat_hash_set<const Value*> results(block.results().begin(), block.results().end());
    std::vector<Candidate> candidates;
    for (int k = 0; k < end; ++k) {
      Node& n = *nodes[k];
      if (!HasRole(n, OpRole::kAllocStorage)) continue;
      const Value* st = n.result();
      if (results.contains(st) || !st->type().is_storage() || st->type().storage_bytes().has_unknown()) continue;
      const int sid = l.ids.Id(st);
      if (num_users[sid] != 1) continue;
      const Node* user = first_user[sid];
      if (!HasRole(*user, OpRole::kAllocTensor) || user->parent() != &block ||
          user->attrs().GetInt("offset") != 0) {
        continue;
      }
      candidates.push_back(Candidate{&n, const_cast<Node*>(user), k, uf.Find(id_of(user->result()))});
    }
    // Phase 2.
    std::vector<Class> classes;
    std::vector<int> class_of_tensor(num_ids, -1);  // by liveness id
    std::vector<int> class_of_candidate;            // by candidate
    absl::flat_hash_map<const Function*, bool> pointwise;  // shared functions: asked once
    for (const Candidate& c : candidates) {
      const Value* t = c.tensor_node->result();
      const DeviceKind device = c.storage_node->device();
      const int64_t alignment = c.storage_node->attrs().GetInt("alignment");
      const DimExpr size = c.storage_node->result()->type().storage_bytes();
      int chosen = -1;
      bool in_place = false;
      // a. In place.
      const int w = writer[l.ids.Id(t)];
      if (options_.in_place && w >= 0) {
        const Node& kernel = *nodes[w];
        const Function* callee = module_.FindFunction(kernel.callee());
        const int outs = static_cast<int>(kernel.attrs().GetInt(kKernelOutputsAttr));
        bool is_pointwise = false;
        if (callee != nullptr) {
          auto [it, inserted] = pointwise.try_emplace(callee, false);
          if (inserted) it->second = Pointwise(*callee);
          is_pointwise = it->second;
        }
        if (is_pointwise) {
          for (int i = 0; i < kernel.num_operands() - outs && chosen < 0; ++i) {
            const Value* x = kernel.operand(i);
            const int xid = l.ids.Id(x);
            if (xid < 0 || class_of_tensor[xid] < 0 || x->type() != t->type()) continue;
            const int cx = class_of_tensor[xid];
            const Class& k = classes[cx];
            const int xg = uf.Find(xid);
            if (k.occupant_group == xg && group_end[xg] == w && k.device == device &&
                k.alignment == alignment && SizeCovers(k.size, size)) {
              chosen = cx;
              in_place = true;
            }
          }
        }
      }
      // b. Share a free class: equal size, else the smallest cover, else one to grow.
      if (chosen < 0) {
        int equal = -1, cover = -1, grow = -1;
        for (int i = 0; i < static_cast<int>(classes.size()); ++i) {
          const Class& k = classes[i];
          if (k.device != device || k.alignment != alignment || group_end[k.occupant_group] >= c.start) continue;
          if (k.size == size) {
            equal = i;
            break;
          }
          if (SizeCovers(k.size, size)) {
            if (cover < 0 || SizeCovers(classes[cover].size, k.size)) cover = i;
          } else if (grow < 0 && SizeCovers(size, k.size)) {
            grow = i;
          }
        }
        chosen = equal >= 0 ? equal : cover >= 0 ? cover : grow;
        if (chosen == grow && grow >= 0) classes[grow].size = size;
      }
      if (chosen < 0) {
        classes.push_back(Class{device, alignment, size, c.storage_node, c.group});
        chosen = static_cast<int>(classes.size()) - 1;
      } else {
        classes[chosen].occupant_group = c.group;
        ++(in_place ? stats.in_place : stats.shared);
        stats.changed = true;
      }
      class_of_tensor[l.ids.Id(t)] = chosen;
      class_of_candidate.push_back(chosen);
    }
    // Phase 3, candidates in program order.
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      Node* n = c.storage_node;
      const Class& cls = classes[class_of_candidate[i]];
      if (cls.storage_node == n) {
        if (n->result()->type().storage_bytes() != cls.size) n->result()->set_type(Type::Storage(cls.size));
        continue;
      }
      c.tensor_node->set_operand(0, cls.storage_node->result());
      retired_.push_back(std::move(nodes[c.start]));
    }
  }

  // Phase 4: appends `nodes` to the (emptied) block with the kill points; notes them in
  // `kill_points` (KillPoint).
  void InsertKills(Block& block, std::vector<std::unique_ptr<Node>>& nodes, Stats& stats,
                   std::vector<int>* kill_points) {
    const Liveness l = ComputeLiveness(block, nodes);
    const int end = static_cast<int>(nodes.size());
    std::vector<std::vector<Value*>> dying(end);
    auto consider = [&](Value* v) {
      const Type& t = v->type();
      if (!t.is_tensor() && !t.is_storage() && !t.is_tuple() && !t.is_sequence() && !t.is_optional()) {
        return;
      }
      if (v->producer() != nullptr && v->producer()->kind() == NodeKind::kConstant) return;
      const int last = l.End(l.ids.Id(v));
      if (last < 0 || last >= end) return;  // an unused parameter, or a result of the block
      dying[last].push_back(v);
    };
    for (const auto& p : block.params()) consider(p.get());
    for (const auto& n : nodes) {
      for (const auto& r : n->results()) consider(r.get());
    }
    const OpDef* kill = OpRegistry::Global().FindByRole(OpRole::kKill);
    ScratchIds<Value> number;  // KillPoint's (the liveness numbering is done with)
    for (int k = 0; k < end; ++k) {
      const Node* before = nodes[k].get();
      KillPoint(*before, number, kill_points);
      block.Append(std::move(nodes[k]));
      if (dying[k].empty()) continue;
      auto node = std::make_unique<Node>(NodeKind::kCall);
      node->set_op(kill);
      for (Value* v : dying[k]) node->AddOperand(v);
      const DeviceKind d = dying[k][0]->device();
      node->set_device(d == DeviceKind::kUnset ? DeviceKind::kCpu : d);
      node->set_loc(before->loc());
      KillPoint(*node, number, kill_points);
      block.Append(std::move(node));
      ++stats.kills;
    }
  }

  // The kill points of a block, one node at a time, in a form that compares across runs:
  // operand identities by position (the block's results numbered in order by `number`, -1
  // for another value; -2 opens a kill).
  static void KillPoint(const Node& n, ScratchIds<Value>& number, std::vector<int>* out) {
    for (const auto& r : n.results()) number.Number(r.get());
    if (!IsKill(n)) return;
    out->push_back(-2);
    for (const Value* v : n.operands()) out->push_back(number.Id(v));
  }

  const PlanMemoryOptions& options_;
  Module& module_;
  std::vector<std::unique_ptr<Node>>& retired_;
};

class PlanMemoryPass : public Pass {
 public:
  explicit PlanMemoryPass(PlanMemoryOptions o) : options_(std::move(o)) {}
  absl::string_view name() const override { return PlanMemoryOptions::kName; }
  absl::StatusOr<bool> Run(Module& module) override {
    Function* f = module.FindFunction(options_.function);
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan-memory: no function @%s in the module", options_.function));
    }
    // The input contract: manifest-alloc ran (no kernel without explicit outputs).
    absl::Status explicit_alloc = VerifyExplicitAllocation(module, options_.function);
    if (!explicit_alloc.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan-memory needs explicit allocation: run manifest-alloc first (", explicit_alloc.message(), ")"));
    }
    std::vector<std::unique_ptr<Node>> retired;
    BlockPlanner planner(options_, module, retired);
    BlockPlanner::Stats stats;
    RETURN_IF_ERROR(planner.Plan(f->body(), stats));
    // Retired nodes' results are no longer used by anything left in the module.
    retired_.insert(retired_.end(), std::make_move_iterator(retired.begin()),
                    std::make_move_iterator(retired.end()));
    return stats.changed;
  }
  absl::Status VerifyPostconditions(const Module& module) const override {
    return VerifyExplicitAllocation(module, options_.function);
  }

 private:
  PlanMemoryOptions options_;
  std::vector<std::unique_ptr<Node>> retired_;
};

}  // namespace

std::unique_ptr<Pass> CreatePlanMemoryPass(const PlanMemoryOptions& options) {
  return std::make_unique<PlanMemoryPass>(options);
}

}  // namespace hetpass
