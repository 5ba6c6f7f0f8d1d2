// VMs of one Program for the threads of a server (docs/runtime.md, "Threading").
//
// A VirtualMachine runs one call at a time; a VmPool lets any number of threads run one compiled
// program at once. Acquire() hands the calling thread a VM for its exclusive use (an idle one,
// else a newly loaded one: each costs its own devices, constants and kernel instances, never a
// compile) and the lease returns it when it dies. Everything of a run stays exact per VM: its
// counters, its RunRecord, its memory statistics. The pool grows to the largest number of
// simultaneous leases and keeps those VMs (their pools warm, so steady-state runs allocate
// nothing) until it is destroyed or Trim()med.
#ifndef HETPASS_VM_VM_POOL_H_
#define HETPASS_VM_VM_POOL_H_

#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/vm/vm.h"

namespace hetpass::vm {

class VmPool {
 public:
  // `options` loads every VM (the program was compiled with its own).
  VmPool(std::shared_ptr<const Program> program, VmOptions options = {});
  // Leases must have ended (their VMs would outlive the pool otherwise: checked in debug builds).
  ~VmPool();
  VmPool(const VmPool&) = delete;
  VmPool& operator=(const VmPool&) = delete;

  struct Return {
    VmPool* pool;
    void operator()(VirtualMachine* vm) const { pool->Release(vm); }
  };
  using Lease = std::unique_ptr<VirtualMachine, Return>;

  // Thread-safe. An idle VM, else a new one loaded from the program (the load's error, e.g. a
  // device that cannot be created).
  absl::StatusOr<Lease> Acquire();

  // A run on a leased VM, with what the run did: RunWithHostValues plus its counters and record,
  // taken before the VM goes back to the pool. Thread-safe.
  struct RunResult {
    std::vector<HostValue> values;
    runtime::DeviceCounters counters;
    RunRecord record;
  };
  absl::StatusOr<RunResult> RunWithHostValues(absl::string_view function,
                                              const std::vector<HostValue>& inputs);

  // Destroys the idle VMs (their device memory goes back to the devices). Thread-safe.
  void Trim();

  const std::shared_ptr<const Program>& program() const { return program_; }
  int64_t vms_created() const;  // VMs loaded so far
  int64_t vms_idle() const;

 private:
  void Release(VirtualMachine* vm);

  std::shared_ptr<const Program> program_;
  VmOptions options_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<VirtualMachine>> idle_;  // guarded by mu_
  int64_t created_ = 0;                                // guarded by mu_
  int64_t leased_ = 0;                                 // guarded by mu_
};

}  // namespace hetpass::vm

#endif  // HETPASS_VM_VM_POOL_H_
