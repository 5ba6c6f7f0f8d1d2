// Fresh symbols and the bindings that introduce them (include/passes/analysis/symbol_origins.h).
//
// Algorithm: collect the symbols of the parameters' types (bound by the VM's `arg`); walk the
// function's bindings in program order (regions included); the first binding with a result
// whose dim is a bare symbol outside that set introduces it. Symbols that occur only inside
// compound dims (`dyn2 + 3`) were introduced as a bare dim earlier, so the walk sees them there.
#include "passes/analysis/symbol_origins.h"

#include <deque>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/input_dep.h"
#include "passes/ir/op_def.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_ids.h"
#include "shape_funcs/symbolic_values.h"

namespace hetpass {
namespace {

std::string OpText(const Node& n) {
  if (n.kind() == NodeKind::kInvoke) return absl::StrCat("invoke @", n.callee());
  return std::string(n.OpName());
}

// Where the values that `n` reads (its `value` inputs) come from: the nearest tensor whose
// contents they depend on, as "%v of op (loc)" or "%p (a parameter's contents)"; empty when they
// are computed from shapes and constants alone (then inference could have followed them: a gap).
// A backward breadth-first walk over producers: constants and shape_of (metadata) end a path; a
// parameter, a region's parameter, an op whose output size depends on data, or a data-sized
// tensor (not a small static one, as shape arithmetic makes) is contents and is named.
std::string DataSource(const Module& module, const Function& f, const ValueNames& names,
                       const Node& n) {
  absl::flat_hash_set<const Value*> params;
  for (const auto& p : f.body().params()) params.insert(p.get());
  absl::flat_hash_set<const Value*> seen;
  std::deque<const Value*> queue;
  for (int i = 0; i < n.num_operands(); ++i) {
    if (NeedsValue(n.op()->dep(i))) queue.push_back(n.operand(i));
  }
  while (!queue.empty()) {
    const Value* v = queue.front();
    queue.pop_front();
    if (!seen.insert(v).second) continue;
    const Node* p = v->producer();
    if (p == nullptr) {
      return params.contains(v) ? absl::StrCat(names.Name(v), " (a parameter's contents)")
                                : absl::StrCat(names.Name(v), " (a region's parameter)");
    }
    if (p->kind() == NodeKind::kConstant) continue;
    if (p->kind() == NodeKind::kCall && p->op() != nullptr && OpIdOf(*p->op()) == OpId::kShapeOf) {
      continue;
    }
    const bool opaque = p->kind() != NodeKind::kCall || p->op() == nullptr ||
                        p->op()->data_dependent_output_shape() || p->op()->impure();
    const DimExpr count = v->type().is_tensor() ? v->type().NumElements() : DimExpr::Unknown();
    const bool data_sized = !count.is_constant() || count.constant() > kMaxSymbolicElements;
    if (opaque || data_sized) {
      return absl::StrFormat("%s of %s (%s)", names.Name(v), OpText(*p),
                             FormatLocation(&module, p->loc()));
    }
    for (int i = 0; i < p->num_operands(); ++i) queue.push_back(p->operand(i));
  }
  return "";
}

// The first operand of `n` whose type has an unknown (`?`) dim, as "%v of op (loc)": a rule
// fed `?` can only answer a fresh symbol, and the `?` comes from upstream (an `if` whose
// branches differ, a sequence's element), which is what a reader should look at.
std::string UnknownOperand(const Module& module, const ValueNames& names, const Node& n) {
  for (int i = 0; i < n.num_operands(); ++i) {
    const Value* v = n.operand(i);
    const Type& t = v->type();
    if (!t.is_tensor()) continue;
    for (const DimExpr& d : t.shape()) {
      if (!d.is_unknown()) continue;
      const Node* p = v->producer();
      if (p == nullptr) return absl::StrCat(names.Name(v), " (a parameter with a `?` dim)");
      return absl::StrFormat("%s of %s (%s)", names.Name(v), OpText(*p),
                             FormatLocation(&module, p->loc()));
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<std::vector<SymbolOrigin>> ExplainSymbols(const Module& module,
                                                         absl::string_view function) {
  const Function* f = module.FindFunction(function);
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("explain symbols: no function @", function));
  std::set<std::string> inputs;
  for (const auto& p : f->body().params()) {
    const Type& t = p->type();
    if (!t.is_tensor()) continue;
    for (const DimExpr& d : t.shape()) d.CollectSymbols(&inputs);
  }
  const ValueNames names(*f);
  absl::flat_hash_set<std::string> seen;
  std::vector<SymbolOrigin> out;
  WalkNodes(f->body(), [&](const Node& n) {
    for (const auto& r : n.results()) {
      const Type& t = r->type();
      if (!t.is_tensor()) continue;
      for (const DimExpr& d : t.shape()) {
        if (!d.is_symbol() || inputs.contains(d.symbol_name()) ||
            !seen.insert(d.symbol_name()).second) {
          continue;
        }
        SymbolOrigin o;
        o.symbol = d.symbol_name();
        o.value = names.Name(r.get());
        o.op = OpText(n);
        o.location = FormatLocation(&module, n.loc());
        const bool call = n.kind() == NodeKind::kCall && n.op() != nullptr;
        const bool data = (call && n.op()->data_dependent_output_shape()) ||
                          n.kind() == NodeKind::kLoop;
        const bool value = !data && call && n.op()->needs_values();
        o.kind = data    ? SymbolOrigin::Kind::kData
                 : value ? SymbolOrigin::Kind::kValue
                         : SymbolOrigin::Kind::kRule;
        if (n.kind() == NodeKind::kLoop) {
          o.reason = "a loop's result: its trip count (or a carried size) is known when it ends";
        } else if (data) {
          o.reason = "the op's output size depends on tensor contents";
        } else if (value && !(o.data_source = DataSource(module, *f, names, n)).empty()) {
          o.reason = absl::StrCat("the size is read from values that depend on tensor contents: ",
                                  o.data_source);
        } else if (value) {
          o.reason = "the size is read from an input's values, which inference could not follow "
                     "back to the inputs' symbols";
        } else if (n.kind() == NodeKind::kIf) {
          o.reason = "the branches yield different sizes";
        } else if (!(o.data_source = UnknownOperand(module, names, n)).empty()) {
          o.reason = absl::StrCat("an operand's size is unknown here, so this one is too: ",
                                  o.data_source);
        } else {
          o.reason = "the shape rule could not express this dim over the inputs' symbols";
        }
        out.push_back(std::move(o));
      }
    }
  });
  return out;
}

std::string SymbolOriginsText(const std::vector<SymbolOrigin>& origins) {
  std::string out;
  int count[3] = {0, 0, 0};
  int from_contents = 0, fed_unknown = 0;
  for (const SymbolOrigin& o : origins) {
    ++count[static_cast<int>(o.kind)];
    if (o.kind == SymbolOrigin::Kind::kValue && !o.data_source.empty()) ++from_contents;
    if (o.kind == SymbolOrigin::Kind::kRule && !o.data_source.empty()) ++fed_unknown;
    const char* tag = o.kind == SymbolOrigin::Kind::kData    ? "[data]"
                      : o.kind == SymbolOrigin::Kind::kValue ? "[value]"
                                                             : "[rule]";
    absl::StrAppendFormat(&out, "%s: %s of %s %s (%s): %s\n", o.symbol, o.value, o.op, tag,
                          o.location, o.reason);
  }
  absl::StrAppendFormat(&out,
                        "%d fresh symbol%s: %d data-dependent, %d from input values (%d of them "
                        "tensor contents), %d where a rule gave up (%d fed a `?` size)\n",
                        origins.size(), origins.size() == 1 ? "" : "s", count[0], count[1],
                        from_contents, count[2], fed_unknown);
  return out;
}

}  // namespace hetpass
