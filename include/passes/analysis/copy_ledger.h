// The copy ledger: every transfer and synchronisation a function will make, known before it
// runs. For each device_copy (and, after manifest-alloc, each count copy of a data-dependent
// op): direction, bytes as an expression of the input symbols, the value copied, and why (the
// uses that need it on the other side, naming the mask bit that asks for the data: "input 1
// 'begin' of dyn.strided_slice %7 (mask value: its shape function reads the contents)").
// Tests assert budgets with it; hetpass-opt prints it (--copy-ledger=text|json); pass-viz
// draws it; the VM's counters are compared with it after every run (vm::CompareWithLedger).
//
// Copies the IR implies but does not show yet (a shape function on the host reading a value
// whose operand stays on the accelerator, before manifest-alloc) are listed too, marked
// `implied`, one per value: the ledger is exact at every stage of the pipeline.
//
// Kernel parameters: host data an accelerator kernel reads (slice bounds, a reshape target: the
// small `value` inputs plan-devices keeps on the host, see IsHostArgument) travels by value in
// the launch, as a CUDA kernel's parameters do, never through a host pointer. Each is an entry
// of direction `param` with its bytes; the devices count them (DeviceCounters::param_*).
//
// Regions and loops: an entry inside an if branch or a loop body runs once per execution of its
// region. Every region has a symbol (`$loop0` for the body of the function's first
// region-holding binding when it is a loop, `$if1_then`, nested `$loop0$if1_then`; a function
// called with a plain invoke is a region `$f`), and per-inference totals are expressions over
// those symbols and the input symbols: `d2h: 13 + 2*$loop0 copies`. The VM reports how many times
// each region ran (VirtualMachine::LastRunRecord), which binds every symbol: the comparison with
// the device counters is then exact, loops included.
//
// Synchronisation model: a device-to-host copy blocks the host until the device has produced the
// value (one sync each); host-to-device copies, device-to-device copies and kernel parameters are
// queued asynchronously (no sync).
#ifndef HETPASS_ANALYSIS_COPY_LEDGER_H_
#define HETPASS_ANALYSIS_COPY_LEDGER_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/ir/dim_expr.h"
#include "passes/ir/ir.h"

namespace hetpass {

// kParam: host data handed to an accelerator kernel by value (a kernel parameter).
enum class CopyDirection : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kParam };
absl::string_view CopyDirectionName(CopyDirection d);  // "h2d", "d2h", "d2d", "param"
// The direction of a transfer by which side is an accelerator: the one rule both the ledger
// (a device_copy's src/dst) and the VM's counts of `?`-sized copies use, so they cannot drift.
// Inline: the VM (in the fuzz build's core, which has no src/analysis) calls it too.
inline CopyDirection CopyDirectionBetween(DeviceKind src, DeviceKind dst) {
  if (!IsAccelerator(src) && IsAccelerator(dst)) return CopyDirection::kHostToDevice;
  if (IsAccelerator(src) && !IsAccelerator(dst)) return CopyDirection::kDeviceToHost;
  return CopyDirection::kDeviceToDevice;
}
inline constexpr CopyDirection kAllCopyDirections[] = {
    CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost, CopyDirection::kDeviceToDevice,
    CopyDirection::kParam};

// A region whose entries run once per execution of it (an if branch, a loop body, a function
// called from the ledger's function).
struct LedgerRegion {
  std::string symbol;       // "$loop0": the execution count in totals
  std::string function;     // the VM function it compiles to: "main$loop0"
  std::string description;  // "body of loop %r"
  int parent = -1;          // enclosing region, -1: the function body
  bool loop = false;        // a loop body (runs once per iteration)
};

struct LedgerEntry {
  CopyDirection direction = CopyDirection::kHostToDevice;
  DeviceKind src = DeviceKind::kUnset;
  DeviceKind dst = DeviceKind::kUnset;
  DimExpr bytes;           // per execution of the copy (inside a loop: per iteration)
  std::string value;       // the value copied, as printed ("%7", "%begin")
  std::string copy;        // the copy's result, as printed
  std::string reason;      // why the value is needed on dst
  bool synchronizes = false;
  bool in_loop = false;    // some enclosing region is a loop body: runs once per iteration
  int region = -1;         // index into CopyLedger::regions; -1: the function body (runs once)
  // Not yet a device_copy in the IR: the host needs an accelerator value for a shape function
  // while the operand stays on the device for the kernel; manifest-alloc inserts the copy.
  bool implied = false;
  const Node* node = nullptr;  // the device_copy, or the first op whose shape function needs it
};

struct CopyLedger {
  std::string function;
  std::vector<LedgerRegion> regions;
  std::vector<LedgerEntry> entries;
  // False when no value of the function has a device yet (before plan-devices): the ledger
  // then lists nothing because nothing is placed, which ToText says instead of "0 copies".
  bool placed = true;
  // The function's assumptions (passes/ir/assumption.h): the sizes above hold under them, and
  // the VM fails a call that breaks one before any copy they size.
  std::vector<Assumption> assumptions;

  // How many times `entry` runs per inference: 1, or its region's symbol.
  DimExpr Executions(const LedgerEntry& entry) const;
  // Per-inference totals over the region symbols and the input symbols (`13 + 2*$loop0`). A
  // loop-free function's counts are constants.
  DimExpr Count(CopyDirection d) const;
  DimExpr Bytes(CopyDirection d) const;  // `?` when some entry's size is known only at run time
  DimExpr Syncs() const;
  // Number of entries (copy sites in the IR) of one direction.
  int64_t Sites(CopyDirection d) const;
  // True if some entry of direction d has a size known only at run time (`?` dims).
  bool HasUnknownBytes(CopyDirection d) const;

  // One line per region, per direction and per entry.
  std::string ToText() const;
  // Stable JSON for scripts: {"function":..., "regions":[...], "entries":[...], "totals":{...}}.
  std::string ToJson() const;
};

// A loop's scan output `result` (an index into its results, past the carried values) is
// stacked after the loop from one part per iteration. The stacking copies' bytes are stated
// when the part's size is an expression of symbols the loop's own result type uses (bound
// where the loop is: `f32[n, 8]` parts of an `f32[?, n, 8]` result); a part sized by symbols
// bound inside the body, once per iteration (`f32[dyn24, ...]` of an `f32[?, ?, ?]` result),
// is a copy of a run-time size (`?` bytes), counted apart by the VM like a `?`-sized
// device_copy. The ledger and the VM compiler both ask this.
bool ScanPartBytesStated(const Node& loop, int result);

// The symbols function `f` binds at its top level: its parameters' dims and the dims of its
// top-level bindings' results. A symbol that first appears inside a region (a loop body's
// data-dependent count, say) is bound once per execution of that region and may differ
// between iterations: the run binds no single value for it where the ledger is evaluated.
std::set<std::string> FunctionLevelSymbols(const Function& f);

// Whether `bytes`, the size of a copy made inside a region of a function, is stated: an
// expression of the function-level symbols (`$loop1 * batch * 96` is the per-inference total
// of a `f32[batch, 24]` copy per iteration). A copy sized by a symbol bound inside the region
// is of a run-time size (`?` bytes), counted apart by the VM, as a `?`-sized device_copy is.
// The ledger and the VM compiler both ask this.
bool RegionCopyBytesStated(const DimExpr& bytes, const std::set<std::string>& function_level);

// The ledger of one function (default: main), functions it calls included. Error if the
// function does not exist.
absl::StatusOr<CopyLedger> ComputeCopyLedger(const Module& module,
                                             absl::string_view function = "main");

}  // namespace hetpass

#endif  // HETPASS_ANALYSIS_COPY_LEDGER_H_
