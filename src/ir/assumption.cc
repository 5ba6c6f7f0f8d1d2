// Assumptions on symbols: text form and evaluation (include/passes/ir/assumption.h).
#include "passes/ir/assumption.h"

#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"

namespace hetpass {

const char* AssumptionKindText(Assumption::Kind kind) {
  switch (kind) {
    case Assumption::Kind::kEq: return "==";
    case Assumption::Kind::kLe: return "<=";
    case Assumption::Kind::kBroadcast: return "in";
  }
  return "?";
}

std::string Assumption::Condition() const {
  if (kind == Kind::kBroadcast) {
    return absl::StrCat(lhs.ToString(), " in {1, ", rhs.ToString(), "}");
  }
  return absl::StrCat(lhs.ToString(), " ", AssumptionKindText(kind), " ", rhs.ToString());
}

absl::StatusOr<bool> Assumption::Holds(const DimExpr::Bindings& bindings) const {
  ASSIGN_OR_RETURN(const int64_t a, lhs.Evaluate(bindings));
  ASSIGN_OR_RETURN(const int64_t b, rhs.Evaluate(bindings));
  switch (kind) {
    case Kind::kEq: return a == b;
    case Kind::kLe: return a <= b;
    case Kind::kBroadcast: return a == 1 || a == b;
  }
  return false;
}

void Assumption::CollectSymbols(std::set<std::string>* out) const {
  lhs.CollectSymbols(out);
  rhs.CollectSymbols(out);
}

namespace {

// `e` as min(c, x) or max(c, x) with a constant c: sets c and x. `kind` is kMin or kMax.
bool ConstantBound(const DimExpr& e, DimExpr::Kind kind, int64_t* c, DimExpr* x) {
  if (e.kind() != kind) return false;
  const DimNode& n = *e.node();
  if (n.args.size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    if (n.args[i].is_constant() && !n.args[1 - i].is_constant()) {
      *c = n.args[i].constant();
      *x = n.args[1 - i];
      return true;
    }
  }
  return false;
}

}  // namespace

Assumption Assumption::Canonical() const {
  if (kind == Kind::kLe) return *this;
  // The bounded side is lhs for kBroadcast; either side for kEq.
  for (int side = 0; side < (kind == Kind::kEq ? 2 : 1); ++side) {
    const DimExpr& bounded = side == 0 ? lhs : rhs;
    const DimExpr& other = side == 0 ? rhs : lhs;
    int64_t c = 0;
    DimExpr x;
    // A broadcast also holds when the bounded side is 1: with c >= 2, min(c, x) == 1 means
    // x == 1 <= c, and max(c, x) is never 1, so the `or 1` adds nothing.
    const int64_t least = kind == Kind::kBroadcast ? 2 : INT64_MIN;
    if (ConstantBound(bounded, DimExpr::Kind::kMin, &c, &x) && x == other && c >= least) {
      Assumption a = *this;
      a.kind = Kind::kLe;
      a.lhs = x;
      a.rhs = c;
      return a;
    }
    if (ConstantBound(bounded, DimExpr::Kind::kMax, &c, &x) && x == other && c >= least) {
      Assumption a = *this;
      a.kind = Kind::kLe;
      a.lhs = c;
      a.rhs = x;
      return a;
    }
  }
  return *this;
}

bool Assumption::Trivial() const {
  if (lhs == rhs && !lhs.is_unknown()) return true;
  if (kind == Kind::kBroadcast && lhs.is_constant() && lhs.constant() == 1) return true;
  // `n - 2 <= n`, `max(0, n - 2) <= n`: holds for every dimension, nothing to check.
  if (kind == Kind::kLe && DimExpr::ProveLessEqual(lhs, rhs)) return true;
  if (lhs.is_constant() && rhs.is_constant()) {
    const DimExpr::Bindings none;
    const absl::StatusOr<bool> holds = Holds(none);
    return holds.ok() && *holds;
  }
  return false;
}

DimFacts FactsFromAssumptions(absl::Span<const Assumption> assumptions) {
  DimFacts facts;
  for (const Assumption& a : assumptions) {
    switch (a.kind) {
      case Assumption::Kind::kLe:
        facts.AddLessEqual(a.lhs, a.rhs);
        break;
      case Assumption::Kind::kEq:
        facts.AddLessEqual(a.lhs, a.rhs);
        facts.AddLessEqual(a.rhs, a.lhs);
        break;
      case Assumption::Kind::kBroadcast:
        break;  // a disjunction: no bound on either side
    }
  }
  return facts;
}

bool Assumption::Satisfiable() const {
  if (!lhs.is_constant() || !rhs.is_constant()) return true;
  const DimExpr::Bindings none;
  const absl::StatusOr<bool> holds = Holds(none);
  return holds.ok() && *holds;
}

}  // namespace hetpass
