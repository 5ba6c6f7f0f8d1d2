// FunctionInfo: uses, the shape subgraph, its collapsible components and the copy view's
// neighbourhoods (the algorithms are described in function_info.h).
#include "viz/function_info.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <numeric>
#include <variant>

#include "passes/shape_funcs/op_registry.h"

namespace hetpass::viz {

bool IsShapeQuery(const Node& n) {
  return n.kind() == NodeKind::kCall && n.op() != nullptr && n.op()->role() == OpRole::kShapeQuery;
}

std::vector<const Value*> KernelOutputs(const Node& n) {
  std::vector<const Value*> out;
  if (!IsKernelInvoke(n)) return out;
  const AttrValue* k = n.attrs().Find(kKernelOutputsAttr);
  if (k == nullptr || !std::holds_alternative<int64_t>(*k)) return out;
  const int64_t count = std::get<int64_t>(*k);
  if (count < 0 || count > n.num_operands()) return out;
  for (int i = n.num_operands() - static_cast<int>(count); i < n.num_operands(); ++i) {
    out.push_back(n.operand(i));
  }
  return out;
}

FunctionInfo::FunctionInfo(const Function& f) : names(f) {
  std::vector<const Node*> order;
  absl::flat_hash_set<const Value*> escapes;  // returned or yielded
  std::function<void(const Block&)> index = [&](const Block& b) {
    for (const auto& n : b.nodes()) {
      ordinal[n.get()] = static_cast<int>(order.size());
      order.push_back(n.get());
      for (int i = 0; i < n->num_operands(); ++i) {
        uses[n->operand(i)].push_back({n.get(), i});
        ++use_count[n->operand(i)];
      }
      for (const Value* out : KernelOutputs(*n)) written_by[out].push_back(n.get());
      for (int r = 0; r < n->num_regions(); ++r) index(*n->region(r));
    }
    for (const Value* v : b.results()) escapes.insert(v);
  };
  index(f.body());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = **it;
    if (n.kind() != NodeKind::kCall || n.op() == nullptr || n.num_results() == 0) continue;
    if (n.op()->role() != OpRole::kCompute) continue;
    bool shape = true;
    for (const auto& r : n.results()) {
      const Type& t = r->type();
      auto u = uses.find(r.get());
      if ((t.is_tensor() && !IsInteger(t.dtype())) || t.is_tuple() || escapes.contains(r.get()) ||
          u == uses.end()) {
        shape = false;
        break;
      }
      for (const auto& [user, operand] : u->second) {
        const bool ok = user->kind() == NodeKind::kCall && user->op() != nullptr &&
                        (NeedsValue(user->op()->dep(operand)) || shape_subgraph.contains(user));
        if (!ok) {
          shape = false;
          break;
        }
      }
      if (!shape) break;
    }
    if (shape) shape_subgraph.insert(&n);
  }

  // Collapsible: the shape subgraph and the shape queries that only feed it (or feed a value
  // input directly). Union-find over operand edges inside one block.
  std::vector<const Node*> members;
  for (const Node* n : order) {
    bool member = shape_subgraph.contains(n);
    if (!member && IsShapeQuery(*n) && n->num_results() > 0 && !escapes.contains(n->result(0))) {
      member = true;
      for (const auto& r : n->results()) {
        auto u = uses.find(r.get());
        if (u == uses.end()) {
          member = false;
          break;
        }
        for (const auto& [user, operand] : u->second) {
          if (shape_subgraph.contains(user)) continue;
          if (user->kind() == NodeKind::kCall && user->op() != nullptr &&
              NeedsValue(user->op()->dep(operand))) {
            continue;
          }
          member = false;
        }
      }
    }
    if (member) members.push_back(n);
  }
  absl::flat_hash_map<const Node*, int> slot;
  for (int i = 0; i < static_cast<int>(members.size()); ++i) slot[members[i]] = i;
  std::vector<int> parent(members.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> find = [&](int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (int i = 0; i < static_cast<int>(members.size()); ++i) {
    const Node* n = members[i];
    for (int k = 0; k < n->num_operands(); ++k) {
      const Node* p = n->operand(k)->producer();
      auto s = p == nullptr ? slot.end() : slot.find(p);
      if (s == slot.end() || p->parent() != n->parent()) continue;
      parent[find(i)] = find(s->second);
    }
  }
  absl::flat_hash_map<int, std::vector<const Node*>> groups;
  for (int i = 0; i < static_cast<int>(members.size()); ++i) {
    groups[find(i)].push_back(members[i]);  // members are in program order
  }
  std::vector<std::vector<const Node*>> sorted;
  for (auto& [root, group] : groups) {
    if (group.size() >= 2) sorted.push_back(std::move(group));
  }
  // Deterministic order (the DOT output must not depend on hashing).
  std::sort(sorted.begin(), sorted.end(),
            [&](const auto& a, const auto& b) { return ordinal[a[0]] < ordinal[b[0]]; });
  components = std::move(sorted);
  for (int c = 0; c < static_cast<int>(components.size()); ++c) {
    for (const Node* n : components[c]) component_of[n] = c;
  }
}

const std::vector<const Node*>* FunctionInfo::ComponentOf(const Node* n) const {
  auto it = component_of.find(n);
  return it == component_of.end() ? nullptr : &components[it->second];
}

absl::flat_hash_set<const Node*> FunctionInfo::Neighbourhood(
    const Node* seed, int hops, absl::flat_hash_map<const Node*, int>* distance) const {
  absl::flat_hash_map<const Node*, int> best;  // most hops left on reaching a binding
  std::deque<std::pair<const Node*, int>> queue;
  auto visit = [&](const Node* n, int left) {
    if (n == nullptr || !ordinal.contains(n)) return;  // a parameter, or another function
    if (component_of.contains(n) || shape_subgraph.contains(n)) ++left;  // shape steps are free
    if (left < 0) return;
    auto [it, fresh] = best.try_emplace(n, left);
    if (!fresh && it->second >= left) return;
    it->second = left;
    queue.push_back({n, left});
  };
  best[seed] = hops;
  queue.push_back({seed, hops});
  while (!queue.empty()) {
    auto [n, left] = queue.front();
    queue.pop_front();
    if (left == 0) continue;
    const int at = ordinal.at(n);
    // Backwards: each operand's producer, and the kernels that wrote it before this use (after
    // manifest-alloc a tensor is made by alloc_tensor and filled by a destination-passing
    // invoke: the invoke is the data's real source).
    for (int i = 0; i < n->num_operands(); ++i) {
      visit(n->operand(i)->producer(), left - 1);
      auto w = written_by.find(n->operand(i));
      if (w == written_by.end()) continue;
      for (const Node* writer : w->second) {
        if (writer != n && ordinal.at(writer) < at) visit(writer, left - 1);
      }
    }
    // Forwards: the uses of the results, and of the tensors a kernel wrote, after it.
    std::vector<const Value*> outputs;
    for (const auto& r : n->results()) outputs.push_back(r.get());
    for (const Value* out : KernelOutputs(*n)) outputs.push_back(out);
    for (const Value* v : outputs) {
      auto u = uses.find(v);
      if (u == uses.end()) continue;
      for (const auto& [user, operand] : u->second) {
        if (ordinal.at(user) > at) visit(user, left - 1);
      }
    }
  }
  absl::flat_hash_set<const Node*> out;
  absl::flat_hash_map<const Node*, int> hop;  // hop count of each selected binding
  auto add = [&](const Node* n, int d) {
    out.insert(n);
    auto [it, fresh] = hop.try_emplace(n, d);
    if (!fresh) it->second = std::min(it->second, d);
  };
  for (const auto& [n, left] : best) {
    const int d = std::max(hops - left, 0);
    add(n, d);
    // Whole shape components: a picture draws them as one node anyway.
    if (const auto* c = ComponentOf(n)) {
      for (const Node* m : *c) add(m, d);
    }
  }
  // The if/loop owners of every selected binding.
  std::vector<std::pair<const Node*, int>> owners;
  for (const auto& [n, d] : hop) {
    for (const Block* b = n->parent(); b != nullptr && b->parent_node() != nullptr;
         b = b->parent_node()->parent()) {
      owners.push_back({b->parent_node(), d});
    }
  }
  for (const auto& [n, d] : owners) add(n, d);
  if (distance != nullptr) *distance = std::move(hop);
  return out;
}

}  // namespace hetpass::viz
