// Structural equality and hashing (alpha-equivalence, see structural.h).
//
// Equality walks both functions in lockstep, mapping each value of `a` to the value of `b` at
// the same position (parameters, then results in program order). Two operands match when the
// `a` operand maps to the `b` operand. Hashing numbers values in the same order and hashes the
// numbers, so equal functions hash equally. A function's own name is not compared (fused
// primitive functions with different names are the same kernel); a module compares function
// names, because invoke refers to callees by name.
#include "passes/ir/structural.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/op_def.h"

namespace hetpass {
namespace {

// Floats compare bitwise, so NaN attributes equal themselves (Attrs::operator== says no).
bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

bool AttrValuesEqual(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (TypeOf(a) == AttrType::kFloat) return SameDouble(std::get<double>(a), std::get<double>(b));
  if (TypeOf(a) == AttrType::kFloatList) {
    const auto& x = std::get<std::vector<double>>(a);
    const auto& y = std::get<std::vector<double>>(b);
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!SameDouble(x[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

bool AttrsEqual(const Attrs& a, const Attrs& b) {
  if (a.entries().size() != b.entries().size()) return false;
  for (size_t i = 0; i < a.entries().size(); ++i) {
    if (a.entries()[i].first != b.entries()[i].first ||
        !AttrValuesEqual(a.entries()[i].second, b.entries()[i].second)) {
      return false;
    }
  }
  return true;
}

absl::string_view OpNameOf(const Node& n) {
  return n.kind() == NodeKind::kCall && n.op() == nullptr ? "<null op>" : n.OpName();
}

class Comparer {
 public:
  explicit Comparer(std::string* why) : why_(why) {}

  bool Functions(const Function& a, const Function& b) {
    context_ = absl::StrCat("function '@", a.name(), "' vs '@", b.name(), "'");
    if (a.result_types() != b.result_types()) return Fail("declared result types differ");
    if (a.attrs() != b.attrs()) return Fail("function attributes differ");
    return Blocks(a.body(), b.body(), "body");
  }

 private:
  bool Fail(absl::string_view message) {
    if (why_ != nullptr) *why_ = absl::StrCat(context_, ": ", message);
    return false;
  }

  bool Matches(const Value* a, const Value* b) const {
    auto it = map_.find(a);
    if (it == map_.end()) return a == b;  // not defined in the function (invalid IR)
    return it->second == b;
  }

  bool Blocks(const Block& a, const Block& b, const std::string& where) {
    if (a.num_params() != b.num_params()) {
      return Fail(
          absl::StrFormat("%s: %d vs %d parameters", where, a.num_params(), b.num_params()));
    }
    for (int i = 0; i < a.num_params(); ++i) {
      if (a.param(i)->device() != b.param(i)->device()) {
        return Fail(absl::StrFormat("%s: parameter %d is on '%s' vs '%s'", where, i,
                                    DeviceName(a.param(i)->device()),
                                    DeviceName(b.param(i)->device())));
      }
      if (a.param(i)->type() != b.param(i)->type()) {
        return Fail(absl::StrFormat("%s: parameter %d has type %s vs %s", where, i,
                                    a.param(i)->type().ToString(), b.param(i)->type().ToString()));
      }
      map_[a.param(i)] = b.param(i);
    }
    if (a.nodes().size() != b.nodes().size()) {
      return Fail(
          absl::StrFormat("%s: %d vs %d bindings", where, a.nodes().size(), b.nodes().size()));
    }
    for (size_t i = 0; i < a.nodes().size(); ++i) {
      if (!Nodes(*a.nodes()[i], *b.nodes()[i], absl::StrCat(where, ": binding ", i))) return false;
    }
    if (a.results().size() != b.results().size()) {
      return Fail(absl::StrFormat("%s: returns %d vs %d values", where, a.results().size(),
                                  b.results().size()));
    }
    for (size_t i = 0; i < a.results().size(); ++i) {
      if (!Matches(a.results()[i], b.results()[i])) {
        return Fail(absl::StrFormat("%s: returned value %d differs", where, i));
      }
    }
    return true;
  }

  bool Nodes(const Node& a, const Node& b, const std::string& where) {
    const std::string at = absl::StrCat(where, " ('", OpNameOf(a), "' vs '", OpNameOf(b), "')");
    if (a.kind() != b.kind()) return Fail(absl::StrCat(at, ": node kinds differ"));
    if ((a.kind() == NodeKind::kCall || a.kind() == NodeKind::kBuiltin) && OpNameOf(a) != OpNameOf(b)) {
      return Fail(absl::StrCat(at, ": ops differ"));
    }
    if (a.callee() != b.callee()) return Fail(absl::StrCat(at, ": callees differ"));
    if (!AttrsEqual(a.attrs(), b.attrs())) {
      return Fail(absl::StrCat(at, ": attributes differ: ", a.attrs().ToString(), " vs ",
                               b.attrs().ToString()));
    }
    if (a.kind() == NodeKind::kConstant && a.constant_value() != b.constant_value()) {
      return Fail(absl::StrCat(at, ": constant data differs: ", a.constant_value().DebugString(),
                               " vs ", b.constant_value().DebugString()));
    }
    if (a.device() != b.device()) {
      return Fail(absl::StrCat(at, ": devices differ: '", DeviceName(a.device()), "' vs '",
                               DeviceName(b.device()), "'"));
    }
    if (a.num_operands() != b.num_operands()) {
      return Fail(absl::StrFormat("%s: %d vs %d operands", at, a.num_operands(), b.num_operands()));
    }
    for (int i = 0; i < a.num_operands(); ++i) {
      if (!Matches(a.operand(i), b.operand(i))) {
        return Fail(absl::StrFormat("%s: operand %d differs", at, i));
      }
    }
    if (a.num_results() != b.num_results()) {
      return Fail(absl::StrFormat("%s: %d vs %d results", at, a.num_results(), b.num_results()));
    }
    for (int i = 0; i < a.num_results(); ++i) {
      if (a.result(i)->type() != b.result(i)->type()) {
        return Fail(absl::StrFormat("%s: result %d has type %s vs %s", at, i,
                                    a.result(i)->type().ToString(),
                                    b.result(i)->type().ToString()));
      }
    }
    if (a.num_regions() != b.num_regions()) return Fail(absl::StrCat(at, ": region counts differ"));
    for (int r = 0; r < a.num_regions(); ++r) {
      if (!Blocks(*a.region(r), *b.region(r), absl::StrCat(at, ": region ", r))) return false;
    }
    for (int i = 0; i < a.num_results(); ++i) map_[a.result(i)] = b.result(i);
    return true;
  }

  std::string* why_;
  std::string context_;
  absl::flat_hash_map<const Value*, const Value*> map_;
};

class Hasher {
 public:
  size_t Function(const hetpass::Function& f) {
    size_t h = absl::HashOf(f.result_types().size(), f.attrs().Hash());
    for (const Type& t : f.result_types()) h = absl::HashOf(h, t.Hash());
    return absl::HashOf(h, Block(f.body()));
  }

 private:
  size_t Id(const Value* v) const {
    auto it = ids_.find(v);
    return it == ids_.end() ? ~size_t{0} : it->second;
  }
  void Define(const Value* v) { ids_.emplace(v, ids_.size()); }

  size_t Block(const hetpass::Block& b) {
    size_t h = absl::HashOf(b.num_params(), b.nodes().size());
    for (const auto& p : b.params()) {
      Define(p.get());
      h = absl::HashOf(h, p->type().Hash(), static_cast<int>(p->device()));
    }
    for (const auto& n : b.nodes()) h = absl::HashOf(h, Node(*n));
    for (const Value* v : b.results()) h = absl::HashOf(h, Id(v));
    return h;
  }

  size_t Node(const hetpass::Node& n) {
    size_t h = absl::HashOf(static_cast<int>(n.kind()), OpNameOf(n), n.callee(), n.attrs().Hash(),
                            static_cast<int>(n.device()), n.num_operands(), n.num_results());
    if (n.kind() == NodeKind::kConstant) h = absl::HashOf(h, n.constant_value().Hash());
    for (const Value* v : n.operands()) h = absl::HashOf(h, Id(v));
    for (const auto& r : n.results()) h = absl::HashOf(h, r->type().Hash());
    for (int r = 0; r < n.num_regions(); ++r) h = absl::HashOf(h, Block(*n.region(r)));
    for (const auto& r : n.results()) Define(r.get());
    return h;
  }

  absl::flat_hash_map<const Value*, size_t> ids_;
};

// Where a member's operand (or an output) of a group comes from, as outlining wires it: a
// parameter (values used but not defined by the members, numbered in first-use order) or a
// result of an earlier member. Groups have a handful of members, so a linear scan beats a map.
class GroupRefs {
 public:
  struct Ref {
    int member;  // -1: parameter `index`
    int index;
    bool operator==(const Ref&) const = default;
  };
  explicit GroupRefs(absl::Span<const Node* const> members) : members_(members) {}
  // Numbers `v`; `fresh` (if given) tells whether this first use made it a new parameter.
  Ref Of(const Value* v, bool* fresh = nullptr) {
    if (fresh != nullptr) *fresh = false;
    for (size_t k = 0; k < members_.size(); ++k) {
      if (v->producer() == members_[k]) return Ref{static_cast<int>(k), v->index()};
    }
    for (size_t p = 0; p < params_.size(); ++p) {
      if (params_[p] == v) return Ref{-1, static_cast<int>(p)};
    }
    params_.push_back(v);
    if (fresh != nullptr) *fresh = true;
    return Ref{-1, static_cast<int>(params_.size()) - 1};
  }

 private:
  absl::Span<const Node* const> members_;
  // Inline: every group is hashed and compared, most have a handful of parameters.
  absl::InlinedVector<const Value*, 8> params_;
};

}  // namespace

size_t GroupStructuralHash(absl::Span<const Node* const> members, absl::Span<Value* const> outputs) {
  GroupRefs refs(members);
  size_t h = absl::HashOf(members.size(), outputs.size());
  for (const Node* n : members) {
    h = absl::HashOf(h, static_cast<int>(n->kind()), n->op(), n->attrs().Hash(),
                     static_cast<int>(n->device()), n->num_operands(), n->num_results());
    for (const Value* v : n->operands()) {
      bool fresh = false;
      const GroupRefs::Ref r = refs.Of(v, &fresh);
      h = absl::HashOf(h, r.member, r.index);
      if (fresh) h = absl::HashOf(h, v->type().Hash(), static_cast<int>(v->device()));
    }
    for (const auto& r : n->results()) h = absl::HashOf(h, r->type().Hash());
  }
  for (const Value* v : outputs) {
    bool fresh = false;
    const GroupRefs::Ref r = refs.Of(v, &fresh);
    h = absl::HashOf(h, r.member, r.index);
    if (fresh) h = absl::HashOf(h, v->type().Hash(), static_cast<int>(v->device()));
  }
  return h;
}

bool GroupsStructurallyEqual(absl::Span<const Node* const> a, absl::Span<Value* const> a_outputs,
                             absl::Span<const Node* const> b, absl::Span<Value* const> b_outputs) {
  if (a.size() != b.size() || a_outputs.size() != b_outputs.size()) return false;
  GroupRefs ra(a), rb(b);
  // Both sides number a value the same way, and a new parameter has the same type and device.
  const auto same = [&](const Value* x, const Value* y) {
    bool fresh_x = false, fresh_y = false;
    if (!(ra.Of(x, &fresh_x) == rb.Of(y, &fresh_y)) || fresh_x != fresh_y) return false;
    return !fresh_x || (x->type() == y->type() && x->device() == y->device());
  };
  for (size_t k = 0; k < a.size(); ++k) {
    const Node& x = *a[k];
    const Node& y = *b[k];
    if (x.kind() != NodeKind::kCall || y.kind() != NodeKind::kCall || x.op() != y.op() ||
        x.device() != y.device() || x.num_operands() != y.num_operands() ||
        x.num_results() != y.num_results() || x.num_regions() != 0 || y.num_regions() != 0 ||
        !AttrsEqual(x.attrs(), y.attrs())) {
      return false;
    }
    for (int i = 0; i < x.num_operands(); ++i) {
      if (!same(x.operand(i), y.operand(i))) return false;
    }
    for (int i = 0; i < x.num_results(); ++i) {
      if (!(x.result(i)->type() == y.result(i)->type())) return false;
    }
  }
  for (size_t i = 0; i < a_outputs.size(); ++i) {
    if (!same(a_outputs[i], b_outputs[i])) return false;
  }
  return true;
}

bool StructurallyEqual(const Function& a, const Function& b, std::string* why) {
  return Comparer(why).Functions(a, b);
}

bool StructurallyEqual(const Module& a, const Module& b, std::string* why) {
  if (a.functions().size() != b.functions().size()) {
    if (why != nullptr) {
      *why = absl::StrFormat("modules have %d vs %d functions", a.functions().size(),
                             b.functions().size());
    }
    return false;
  }
  for (size_t i = 0; i < a.functions().size(); ++i) {
    const Function& fa = *a.functions()[i];
    const Function& fb = *b.functions()[i];
    if (fa.name() != fb.name()) {
      if (why != nullptr) {
        *why = absl::StrFormat("function %d is '@%s' vs '@%s'", i, fa.name(), fb.name());
      }
      return false;
    }
    if (!StructurallyEqual(fa, fb, why)) return false;
  }
  return true;
}

size_t StructuralHash(const Function& function) { return Hasher().Function(function); }

size_t StructuralHash(const Module& module) {
  size_t h = absl::HashOf(module.functions().size());
  for (const auto& f : module.functions()) h = absl::HashOf(h, f->name(), StructuralHash(*f));
  return h;
}

}  // namespace hetpass
