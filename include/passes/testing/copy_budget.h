// GoogleTest helpers for asserting copy budgets with the copy ledger, e.g.
//   ExpectCopies(ledger, {.h2d = 1, .d2h = 1});
//   EXPECT_EQ(LedgerBytes(ledger, CopyDirection::kDeviceToHost, {{"n", 16}}), 16 * 512 * 4);
// Header-only: include it in your own tests (link GTest yourself).
#ifndef HETPASS_TESTING_COPY_BUDGET_H_
#define HETPASS_TESTING_COPY_BUDGET_H_

#include <cstdint>

#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"

namespace hetpass {

struct CopyBudget {
  int64_t h2d = 0;
  int64_t d2h = 0;
  int64_t d2d = 0;
};

inline void ExpectCopies(const CopyLedger& ledger, const CopyBudget& budget) {
  EXPECT_EQ(ledger.Count(CopyDirection::kHostToDevice), budget.h2d) << ledger.ToText();
  EXPECT_EQ(ledger.Count(CopyDirection::kDeviceToHost), budget.d2h) << ledger.ToText();
  EXPECT_EQ(ledger.Count(CopyDirection::kDeviceToDevice), budget.d2d) << ledger.ToText();
}

// Total bytes of one direction with the symbols bound; -1 if they cannot be evaluated.
inline int64_t LedgerBytes(const CopyLedger& ledger, CopyDirection d,
                           const DimExpr::Bindings& bindings) {
  auto v = ledger.Bytes(d).Evaluate(bindings);
  return v.ok() ? *v : -1;
}

}  // namespace hetpass

#endif  // HETPASS_TESTING_COPY_BUDGET_H_
