// The virtual machine: loads an Executable (verify once, compile its kernels, place constants
// on their devices) and runs its functions.
//
// Counters: every device counts its transfers, syncs, raw allocations and launches; Counters()
// sums them. Run() measures exactly the function's own work: tensors the caller hands in must
// already live on the parameter's device (RunWithHostTensors stages host tensors there first
// and resets the counters after staging, and reads results back only after taking the
// counters), so the counters are comparable with the copy ledger.
//
// Memory: every device has a pooling allocator; storage is released when its last register
// reference dies, so a second call with the same or smaller shapes makes zero raw allocations.
#ifndef HETPASS_VM_VM_H_
#define HETPASS_VM_VM_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/runtime/device.h"
#include "passes/runtime/ndarray.h"
#include "passes/vm/executable.h"

namespace hetpass::vm {

// A register's contents.
struct Object {
  enum class Kind : uint8_t { kNone, kTensor, kStorage, kTuple };
  Kind kind = Kind::kNone;
  runtime::NDArray tensor;
  std::shared_ptr<runtime::Storage> storage;
  std::shared_ptr<std::vector<Object>> fields;

  static Object FromTensor(runtime::NDArray t) {
    Object o;
    o.kind = Kind::kTensor;
    o.tensor = std::move(t);
    return o;
  }
};

struct VmOptions {
  CompileEngineOptions engine;
  runtime::SimDeviceOptions sim;
  bool profile = false;  // per-instruction times (Profile())
  // Replaces the compile engine for kernels (benchmarks of the dispatch loop use no-op kernels).
  std::function<absl::StatusOr<std::shared_ptr<const CompiledKernel>>(const Function&, DeviceKind)>
      kernel_factory;
};

struct ProfileEntry {
  std::string function;
  int pc = 0;
  std::string opcode;
  std::string what;  // the IR binding, and for kernels the implementation
  int64_t calls = 0;
  double total_us = 0;
};

class VirtualMachine {
 public:
  static absl::StatusOr<std::unique_ptr<VirtualMachine>> Load(Executable exe, VmOptions options = {});
  ~VirtualMachine();

  // Arguments must live on each parameter's device (see RunWithHostTensors).
  absl::StatusOr<std::vector<Object>> Run(absl::string_view function, std::vector<Object> args);
  // Stages host tensors onto the parameters' devices, resets the counters, runs, records the
  // counters of the run (LastRunCounters), then copies tensor results back to the host.
  absl::StatusOr<std::vector<Tensor>> RunWithHostTensors(absl::string_view function,
                                                        const std::vector<Tensor>& inputs);

  runtime::DeviceCounters Counters() const;  // summed over devices
  runtime::DeviceCounters CountersOf(DeviceKind kind) const;
  void ResetCounters();
  const runtime::DeviceCounters& LastRunCounters() const { return last_run_; }

  runtime::Device* device(DeviceKind kind) const;
  runtime::PoolingAllocator* pool(DeviceKind kind) const;
  const Executable& executable() const { return exe_; }
  // One line per kernel site: primitive, device, implementation (CompiledKernel::Describe).
  std::vector<std::string> KernelDescriptions() const;
  // Per-instruction profile (VmOptions::profile), sorted by total time, descending.
  std::vector<ProfileEntry> Profile() const;
  void ResetProfile();

 private:
  struct Impl;
  explicit VirtualMachine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  const Executable& exe_;
  runtime::DeviceCounters last_run_;
};

// The pass pipeline that takes a module to VM-ready IR for `target` (cpu, sim, cuda).
std::string DefaultPipeline(DeviceKind target);

// The ledger's promise next to what the run did: per direction the number of copies and the
// bytes (symbols bound by `bindings`), and the syncs. OK when they agree; otherwise
// FailedPrecondition with a table of both. Copies inside loops run once per iteration and are
// compared as "at least once per entry". A ledger byte count with an unknown `?` dim is
// compared by count only (its size exists only at run time).
absl::Status CompareWithLedger(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                               const DimExpr::Bindings& bindings);
// Two columns, one row per direction and one for syncs: "h2d  1 (65536 B)  |  1 (65536 B)".
std::string LedgerVersusCounters(const CopyLedger& ledger, const runtime::DeviceCounters& counters,
                                 const DimExpr::Bindings& bindings);

}  // namespace hetpass::vm

#endif  // HETPASS_VM_VM_H_
