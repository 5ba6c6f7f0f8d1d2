// plan-memory: storage shared by liveness, in-place outputs and kill points, after
// manifest-alloc (algorithm in src/memory_planner/plan_memory.cc; docs/memory_planning.md).
#ifndef HETPASS_MEMORY_PLANNER_PLAN_MEMORY_H_
#define HETPASS_MEMORY_PLANNER_PLAN_MEMORY_H_

#include <memory>
#include <string>

#include "passes/ir/dim_expr.h"
#include "passes/ir/ir.h"
#include "passes/pass/pass.h"

namespace hetpass {

struct PlanMemoryOptions {
  static constexpr absl::string_view kName = "plan-memory";
  std::string function = "main";
  bool share = true;    // share storage between values whose lifetimes do not overlap
  bool in_place = true; // let a pointwise kernel write over a dying input of its type
  bool kill = true;     // insert memory.kill after each value's last use
};

std::unique_ptr<Pass> CreatePlanMemoryPass(const PlanMemoryOptions& options = {});

// True when `a - b` is provably >= 0 for every value of the symbols (which are dims, so >= 0):
// the difference is a polynomial with non-negative coefficients over non-negative atoms
// (symbols; floordiv/mod of non-negative operands; min of two, max of one non-negative).
bool SizeCovers(const DimExpr& a, const DimExpr& b);

}  // namespace hetpass

#endif  // HETPASS_MEMORY_PLANNER_PLAN_MEMORY_H_
