// Fresh symbols and the bindings that introduce them (include/passes/analysis/symbol_origins.h).
//
// Algorithm: collect the symbols of the parameters' types (bound by the VM's `arg`); walk the
// function's bindings in program order (regions included); the first binding with a result
// whose dim is a bare symbol outside that set introduces it. Symbols that occur only inside
// compound dims (`dyn2 + 3`) were introduced as a bare dim earlier, so the walk sees them there.
#include "passes/analysis/symbol_origins.h"

#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/op_def.h"
#include "passes/ir/printer.h"

namespace hetpass {
namespace {

std::string OpText(const Node& n) {
  if (n.kind() == NodeKind::kInvoke) return absl::StrCat("invoke @", n.callee());
  return std::string(n.OpName());
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
        } else if (value) {
          o.reason = "the size is read from an input's values, which inference could not follow "
                     "back to the inputs' symbols";
        } else if (n.kind() == NodeKind::kIf) {
          o.reason = "the branches yield different sizes";
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
  for (const SymbolOrigin& o : origins) {
    ++count[static_cast<int>(o.kind)];
    const char* tag = o.kind == SymbolOrigin::Kind::kData    ? "[data]"
                      : o.kind == SymbolOrigin::Kind::kValue ? "[value]"
                                                             : "[rule]";
    absl::StrAppendFormat(&out, "%s: %s of %s %s (%s): %s\n", o.symbol, o.value, o.op, tag,
                          o.location, o.reason);
  }
  absl::StrAppendFormat(&out,
                        "%d fresh symbol%s: %d data-dependent, %d from input values, %d where a "
                        "rule gave up\n",
                        origins.size(), origins.size() == 1 ? "" : "s", count[0], count[1],
                        count[2]);
  return out;
}

}  // namespace hetpass
