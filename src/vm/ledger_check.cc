// The copy ledger (compile time) against the device counters (run time): the check that makes
// every promised copy count a measured fact.
//
// Per direction (h2d, d2h, d2d, param) and for syncs, the ledger's per-inference total is an
// expression over the input symbols and the region symbols (`1 + 8*$loop0`); the run binds
// every one of them (RunRecord::LedgerBindings: the symbols the arguments bound, and how many
// times the VM executed each region's function). Each field then gets one verdict:
//   match        the evaluated promise equals the measurement
//   mismatch     it does not: the comparison fails
//   unbound      the promise names a symbol the run did not bind: the comparison fails naming
//                it (a ledger that cannot be evaluated promises nothing, so it is no pass)
//   not checked  only the bytes of copies whose size is a `?` dim (known only at run time):
//                the ledger has no promise for them. The VM counts those copies apart
//                (RunRecord::runtime_sized), so their number is still checked and their bytes
//                are taken out of the device's total before the rest is compared exactly.
// A comparison is "exact" only when every field matched, i.e. the program has no `?` copy.
#include "passes/vm/vm.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/compile_engine/kernel_provider.h"

namespace hetpass::vm {
namespace {

struct Measured {
  int64_t calls;
  int64_t bytes;
};

Measured Of(const runtime::DeviceCounters& c, CopyDirection d) {
  switch (d) {
    case CopyDirection::kHostToDevice: return {c.h2d_calls, c.h2d_bytes};
    case CopyDirection::kDeviceToHost: return {c.d2h_calls, c.d2h_bytes};
    case CopyDirection::kDeviceToDevice: return {c.d2d_calls, c.d2d_bytes};
    case CopyDirection::kParam: return {c.param_calls, c.param_bytes};
  }
  return {0, 0};
}

// "1 + 8*$loop0 = 25", or "13" when the promise is a constant.
std::string Shown(const DimExpr& e, const absl::StatusOr<int64_t>& v) {
  if (e.is_constant()) return e.ToString();
  if (!v.ok()) return e.ToString();
  return absl::StrCat(e.ToString(), " = ", *v);
}

LedgerComparison::Field Compare(const DimExpr& promise, int64_t measured,
                                const DimExpr::Bindings& bindings) {
  LedgerComparison::Field f;
  f.measured = measured;
  const absl::StatusOr<int64_t> v = promise.Evaluate(bindings);
  f.promised = Shown(promise, v);
  if (!v.ok()) {
    f.verdict = LedgerComparison::Verdict::kUnbound;
    f.note = std::string(v.status().message());
    return f;
  }
  f.verdict = *v == measured ? LedgerComparison::Verdict::kMatch
                             : LedgerComparison::Verdict::kMismatch;
  return f;
}

LedgerComparison::Field NotChecked(int64_t measured, std::string why) {
  LedgerComparison::Field f;
  f.promised = "?";
  f.measured = measured;
  f.verdict = LedgerComparison::Verdict::kNotChecked;
  f.note = std::move(why);
  return f;
}

LedgerComparison Compare(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                         const DimExpr::Bindings& bindings,
                         const std::array<RunRecord::RuntimeSized, 4>& runtime_sized) {
  LedgerComparison c;
  c.function = ledger.function;
  for (CopyDirection d : kAllCopyDirections) {
    const Measured m = Of(counters, d);
    const RunRecord::RuntimeSized& rs = runtime_sized[static_cast<int>(d)];
    // A device that moved kernel parameters while the ledger lists none still gets its row.
    if (d == CopyDirection::kParam && ledger.Sites(d) == 0 && m.calls == 0) continue;
    // The promise split in two: copies whose size the IR states, and `?`-sized ones.
    DimExpr stated_bytes(0), runtime_sized_count(0);
    for (const LedgerEntry& e : ledger.entries) {
      if (e.direction != d) continue;
      if (e.bytes.has_unknown()) {
        runtime_sized_count = runtime_sized_count + ledger.Executions(e);
      } else {
        stated_bytes = stated_bytes + e.bytes * ledger.Executions(e);
      }
    }
    LedgerComparison::Row row;
    row.name = std::string(CopyDirectionName(d));
    row.count = Compare(ledger.Count(d), m.calls, bindings);
    row.bytes = Compare(stated_bytes, m.bytes - rs.bytes, bindings);
    row.runtime_sized_count = Compare(runtime_sized_count, rs.calls, bindings);
    row.runtime_sized = ledger.HasUnknownBytes(d) || rs.calls != 0;
    row.runtime_sized_bytes = NotChecked(
        rs.bytes, absl::StrFormat("%d %s of a size known only at run time", rs.calls,
                                  rs.calls == 1 ? "copy" : "copies"));
    if (!row.runtime_sized) row.runtime_sized_bytes.verdict = LedgerComparison::Verdict::kMatch;
    c.rows.push_back(std::move(row));
  }
  c.syncs = Compare(ledger.Syncs(), counters.syncs, bindings);
  return c;
}

}  // namespace

// plan-memory without static sharing: the pools' run-time plan packs each tensor by its own
// lifetime into one arena, and a storage shared at compile time only lengthens lifetimes (peak
// over the liveness lower bound on sim, transformer set 1: 1.13x shared, 1.04x not).
std::string DefaultPipeline(DeviceKind target) {
  // block-conv-layout before fold-constants, which then folds the reshaped biases.
  const int64_t block = PreferredConvBlock(target);
  const std::string layout =
      block > 0 ? absl::StrCat("block-conv-layout{block=", block, "},") : std::string();
  return absl::StrCat("infer-types,", layout,
                      "fold-constants,cse,dce,loop-append-to-scan,plan-devices{target=",
                      DeviceName(target), "},fuse-ops,manifest-alloc,plan-memory{share=false}");
}

DimExpr::Bindings RunRecord::LedgerBindings(const CopyLedger& ledger) const {
  DimExpr::Bindings b = symbols;
  for (const LedgerRegion& r : ledger.regions) {
    auto it = executions.find(r.function);
    b[r.symbol] = it == executions.end() ? 0 : it->second;
  }
  return b;
}

std::string RunRecord::RegionsText(const CopyLedger& ledger) const {
  const DimExpr::Bindings b = LedgerBindings(ledger);
  std::vector<std::string> parts;
  for (const LedgerRegion& r : ledger.regions) parts.push_back(absl::StrCat(r.symbol, "=", b.at(r.symbol)));
  return absl::StrJoin(parts, ", ");
}

LedgerComparison CompareLedgerToRun(const CopyLedger& ledger,
                                    const runtime::DeviceCounters& counters,
                                    const RunRecord& record) {
  return Compare(ledger, counters, record.LedgerBindings(ledger), record.runtime_sized);
}

LedgerComparison CompareLedger(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                               const DimExpr::Bindings& bindings) {
  return Compare(ledger, counters, bindings, {});
}

bool LedgerComparison::agrees() const {
  if (syncs.failed()) return false;
  for (const Row& r : rows) {
    if (r.count.failed() || r.bytes.failed() || r.runtime_sized_count.failed()) return false;
  }
  return true;
}

bool LedgerComparison::exact() const {
  if (!agrees()) return false;
  for (const Row& r : rows) {
    if (r.runtime_sized) return false;
  }
  return true;
}

std::string LedgerComparison::Table() const {
  auto mark = [](const Field& f) {
    switch (f.verdict) {
      case Verdict::kMatch: return std::string();
      case Verdict::kMismatch: return std::string(" MISMATCH");
      case Verdict::kUnbound: return absl::StrCat(" FAILED (", f.note, ")");
      case Verdict::kNotChecked: return absl::StrCat(" (not checked: ", f.note, ")");
    }
    return std::string();
  };
  std::string out = absl::StrFormat("  %-6s %-40s %s\n", "", "ledger (compile time)",
                                    "counters (run time)");
  for (const Row& r : rows) {
    if (!r.runtime_sized) {
      const std::string promised = absl::StrCat(r.count.promised, " (", r.bytes.promised, " B)");
      absl::StrAppendFormat(&out, "  %-6s %-40s %d (%d B)%s%s\n", r.name, promised,
                            r.count.measured, r.bytes.measured, mark(r.count), mark(r.bytes));
      continue;
    }
    // The direction's copies, then the bytes of those the IR sizes and the `?` ones apart.
    absl::StrAppendFormat(&out, "  %-6s %-40s %d%s\n", r.name, r.count.promised, r.count.measured,
                          mark(r.count));
    absl::StrAppendFormat(&out, "  %-6s %-40s %d B%s\n", "  sized",
                          absl::StrCat(r.bytes.promised, " B"), r.bytes.measured, mark(r.bytes));
    absl::StrAppendFormat(&out, "  %-6s %-40s %d (%d B)%s%s\n", "  ?",
                          absl::StrCat(r.runtime_sized_count.promised, " (? B)"),
                          r.runtime_sized_count.measured, r.runtime_sized_bytes.measured,
                          mark(r.runtime_sized_count), mark(r.runtime_sized_bytes));
  }
  absl::StrAppendFormat(&out, "  %-6s %-40s %d%s\n", "syncs", syncs.promised, syncs.measured,
                        mark(syncs));
  return out;
}

std::string LedgerComparison::Summary() const {
  if (exact()) return "the run made exactly the copies the ledger promised";
  std::vector<std::string> wrong, unchecked;
  auto add = [&](const std::string& what, const Field& f) {
    if (f.verdict == Verdict::kMismatch) {
      wrong.push_back(absl::StrCat(what, ": ledger ", f.promised, ", run ", f.measured));
    } else if (f.verdict == Verdict::kUnbound) {
      wrong.push_back(absl::StrCat(what, ": ledger ", f.promised, " cannot be evaluated (",
                                   f.note, "), run ", f.measured));
    } else if (f.verdict == Verdict::kNotChecked) {
      unchecked.push_back(absl::StrCat(what, " (", f.note, ": ", f.measured, " B measured)"));
    }
  };
  for (const Row& r : rows) {
    add(absl::StrCat(r.name, " count"), r.count);
    add(absl::StrCat(r.name, r.runtime_sized ? " bytes of the copies of a stated size"
                                             : " bytes"), r.bytes);
    if (r.runtime_sized) {
      add(absl::StrCat(r.name, " copies of a run-time size"), r.runtime_sized_count);
      add(absl::StrCat(r.name, " bytes of the copies of a run-time size"), r.runtime_sized_bytes);
    }
  }
  add("syncs", syncs);
  if (!wrong.empty()) {
    return absl::StrCat("MISMATCH between the ledger and the run: ", absl::StrJoin(wrong, "; "));
  }
  return absl::StrCat("every count, every stated byte total and the syncs matched the ledger; "
                      "not checked: ", absl::StrJoin(unchecked, "; "));
}

absl::Status LedgerComparison::ToStatus() const {
  if (agrees()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "run-time copies differ from the copy ledger of @", function, ": ", Summary(), "\n",
      Table()));
}

std::string LedgerVersusCounters(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                                 const DimExpr::Bindings& bindings) {
  return CompareLedger(ledger, counters, bindings).Table();
}

absl::Status CompareWithLedger(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                               const DimExpr::Bindings& bindings) {
  return CompareLedger(ledger, counters, bindings).ToStatus();
}

}  // namespace hetpass::vm
