// The copy ledger (compile time) against the device counters (run time): the check that makes
// every promised copy count a measured fact. See CompareWithLedger in vm.h.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/vm/vm.h"

namespace hetpass::vm {
namespace {

struct Expected {
  int64_t count = 0;
  int64_t bytes = 0;
  bool bytes_known = true;
  bool in_loop = false;
};

Expected Expect(const CopyLedger& ledger, CopyDirection d, const DimExpr::Bindings& bindings) {
  Expected e;
  for (const LedgerEntry& entry : ledger.entries) {
    if (entry.direction != d) continue;
    ++e.count;
    e.in_loop |= entry.in_loop;
    auto b = entry.bytes.Evaluate(bindings);
    if (b.ok()) {
      e.bytes += *b;
    } else {
      e.bytes_known = false;
    }
  }
  return e;
}

struct Row {
  const char* name;
  CopyDirection dir;
  int64_t calls;
  int64_t bytes;
};

std::vector<Row> Rows(const runtime::DeviceCounters& c) {
  return {{"h2d", CopyDirection::kHostToDevice, c.h2d_calls, c.h2d_bytes},
          {"d2h", CopyDirection::kDeviceToHost, c.d2h_calls, c.d2h_bytes},
          {"d2d", CopyDirection::kDeviceToDevice, c.d2d_calls, c.d2d_bytes}};
}

}  // namespace

std::string DefaultPipeline(DeviceKind target) {
  return absl::StrCat("infer-types,fold-constants,cse,dce,plan-devices{target=", DeviceName(target),
                      "},fuse-ops,manifest-alloc");
}

std::string LedgerVersusCounters(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                                 const DimExpr::Bindings& bindings) {
  std::string out = absl::StrFormat("  %-6s %-28s %-28s\n", "", "ledger (compile time)",
                                    "counters (run time)");
  for (const Row& r : Rows(counters)) {
    const Expected e = Expect(ledger, r.dir, bindings);
    const std::string promised =
        e.bytes_known ? absl::StrFormat("%d (%d B)%s", e.count, e.bytes, e.in_loop ? " per iter" : "")
                      : absl::StrFormat("%d (%s B)", e.count, ledger.Bytes(r.dir).ToString());
    absl::StrAppend(&out, absl::StrFormat("  %-6s %-28s %d (%d B)\n", r.name, promised, r.calls, r.bytes));
  }
  absl::StrAppend(&out, absl::StrFormat("  %-6s %-28d %d\n", "syncs", ledger.Syncs(), counters.syncs));
  return out;
}

absl::Status CompareWithLedger(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                               const DimExpr::Bindings& bindings) {
  bool ok = true;
  for (const Row& r : Rows(counters)) {
    const Expected e = Expect(ledger, r.dir, bindings);
    if (e.in_loop) {
      ok &= r.calls >= e.count;
      continue;
    }
    ok &= r.calls == e.count;
    if (e.bytes_known) ok &= r.bytes == e.bytes;
  }
  bool loops = false;
  for (const LedgerEntry& entry : ledger.entries) loops |= entry.in_loop;
  ok &= loops ? counters.syncs >= ledger.Syncs() : counters.syncs == ledger.Syncs();
  if (ok) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "run-time copies differ from the copy ledger of @", ledger.function, ":\n",
      LedgerVersusCounters(ledger, counters, bindings)));
}

}  // namespace hetpass::vm
