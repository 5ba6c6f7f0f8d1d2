// Assumptions: conditions on symbols that a function's types rely on (issue 33).
//
// A shape rule sometimes succeeds only under a condition the symbols cannot show: a broadcast of
// `seq` with `min(128, seq)` is valid only when the two are equal (or the second is 1), a
// declared `batch` stands where inference found `dyn1`. Instead of giving up (a fresh `dynN`
// symbol, or an error that stops the model) the rule keeps the input-derived dim and records
// the condition on the function:
//
//   def @main(%x: f32[batch, seq, 64]) -> f32[batch, seq, 64]
//       assume(seq <= 128, "add %y (m.hir:3:3): broadcast ...") {
//
// The VM checks each assumption once per call, as soon as every symbol in it is bound (after
// the arguments, or after the allocation that binds a data-dependent symbol), and fails the
// call with the condition, the reason and the symbols' values. An assumption is a fact for
// everything compiled after it: sizes, the ledger's byte totals and the memory plan are written
// over the kept symbol.
#ifndef HETPASS_IR_ASSUMPTION_H_
#define HETPASS_IR_ASSUMPTION_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/ir/dim_expr.h"

namespace hetpass {

struct Assumption {
  enum class Kind : uint8_t {
    kEq,         // lhs == rhs
    kLe,         // lhs <= rhs
    kBroadcast,  // lhs == 1 or lhs == rhs (lhs broadcasts to rhs): printed `lhs in {1, rhs}`
  };
  Kind kind = Kind::kEq;
  DimExpr lhs;
  DimExpr rhs;
  // Which op or declaration needed it, with its location: "add %y (m.hir:3:3): ...".
  std::string reason;

  // The condition alone, as the text IR writes it: "dyn1 == batch", "seq <= 128",
  // "min(128, seq) in {1, seq}".
  std::string Condition() const;
  // Whether the condition holds for these values; an error names an unbound symbol.
  absl::StatusOr<bool> Holds(const DimExpr::Bindings& bindings) const;
  void CollectSymbols(std::set<std::string>* out) const;
  // True when the condition holds whatever the symbols are (equal sides, two constants that
  // satisfy it): such an assumption is never recorded.
  bool Trivial() const;
  // False when it can never hold (two constants that violate it): a contradiction, an error.
  bool Satisfiable() const;

  // The same condition in its simplest form: `min(c, x) == x` and `min(c, x) in {1, x}` (c >= 2)
  // are `x <= c`; `max(c, x) == x` and `max(c, x) in {1, x}` (c >= 2) are `c <= x`. Exact
  // rewrites, so the printed condition says what the user must keep (`seq <= 128` for a
  // position table of 128 rows). Function::AddAssumption records conditions in this form.
  Assumption Canonical() const;

  // Same condition (the reason is not compared: one condition is recorded once).
  bool SameCondition(const Assumption& o) const {
    return kind == o.kind && lhs == o.lhs && rhs == o.rhs;
  }
};

// What the assumptions make known to the simplifier (DimExpr::Simplify): bounds from `x <= c`,
// `c <= x`, `x == c`; other `a <= b` and `a == b` as non-negative differences.
DimFacts FactsFromAssumptions(absl::Span<const Assumption> assumptions);

// "==", "<=" or "in".
const char* AssumptionKindText(Assumption::Kind kind);

}  // namespace hetpass

#endif  // HETPASS_IR_ASSUMPTION_H_
