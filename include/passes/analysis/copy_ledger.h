// The copy ledger: every transfer and synchronisation a function will make, known before it
// runs. For each device_copy (and, after manifest-alloc, each count copy of a data-dependent
// op): direction, bytes as an expression of the input symbols, the value copied, and why (the
// uses that need it on the other side: "input 1 'begin' of dyn.strided_slice %7 is value").
// Tests assert budgets with it; hetpass-opt prints it (--copy-ledger=text|json); pass-viz
// draws it. Copies the IR implies but does not show yet (a shape function on the host reading
// a value whose operand stays on the accelerator, before manifest-alloc) are listed too, marked
// `implied`, one per value: the ledger is exact at every stage of the pipeline. Synchronisation model: a device-to-host copy blocks the host until the device has
// produced the value (one sync each); host-to-device and device-to-device copies are queued
// asynchronously (no sync).
#ifndef HETPASS_ANALYSIS_COPY_LEDGER_H_
#define HETPASS_ANALYSIS_COPY_LEDGER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/ir/dim_expr.h"
#include "passes/ir/ir.h"

namespace hetpass {

enum class CopyDirection : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };
absl::string_view CopyDirectionName(CopyDirection d);  // "h2d", "d2h", "d2d"

struct LedgerEntry {
  CopyDirection direction = CopyDirection::kHostToDevice;
  DeviceKind src = DeviceKind::kUnset;
  DeviceKind dst = DeviceKind::kUnset;
  DimExpr bytes;           // per execution of the copy (inside a loop: per iteration)
  std::string value;       // the value copied, as printed ("%7", "%begin")
  std::string copy;        // the copy's result, as printed
  std::string reason;      // why the value is needed on dst
  bool synchronizes = false;
  bool in_loop = false;    // inside a loop body: runs once per iteration
  // Not yet a device_copy in the IR: the host needs an accelerator value for a shape function
  // while the operand stays on the device for the kernel; manifest-alloc inserts the copy.
  bool implied = false;
  const Node* node = nullptr;  // the device_copy, or the first op whose shape function needs it
};

struct CopyLedger {
  std::string function;
  std::vector<LedgerEntry> entries;

  int64_t Count(CopyDirection d) const;
  DimExpr Bytes(CopyDirection d) const;
  int64_t Syncs() const;
  // One line per entry plus totals.
  std::string ToText() const;
  // Stable JSON for scripts: {"function":..., "entries":[...], "totals":{...}}.
  std::string ToJson() const;
};

// The ledger of one function (default: main). Error if the function does not exist.
absl::StatusOr<CopyLedger> ComputeCopyLedger(const Module& module,
                                             absl::string_view function = "main");

}  // namespace hetpass

#endif  // HETPASS_ANALYSIS_COPY_LEDGER_H_
