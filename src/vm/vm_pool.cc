// VmPool (see vm_pool.h): a free list of VMs under one mutex. Loading a VM happens outside the
// lock, so threads that find no idle VM load theirs at the same time; the compiled kernels they
// instantiate are the Program's, shared (instantiation is thread-safe: each kernel guards its
// own caches).
#include "passes/vm/vm_pool.h"

#include <cassert>
#include <utility>

#include "passes/support/status_macros.h"

namespace hetpass::vm {

VmPool::VmPool(std::shared_ptr<const Program> program, VmOptions options)
    : program_(std::move(program)), options_(std::move(options)) {}

VmPool::~VmPool() { assert(leased_ == 0 && "VmPool destroyed while a VM is leased"); }

absl::StatusOr<VmPool::Lease> VmPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<VirtualMachine> vm = std::move(idle_.back());
      idle_.pop_back();
      ++leased_;
      return Lease(vm.release(), Return{this});
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<VirtualMachine> vm, VirtualMachine::Load(program_, options_));
  std::lock_guard<std::mutex> lock(mu_);
  ++created_;
  ++leased_;
  return Lease(vm.release(), Return{this});
}

void VmPool::Release(VirtualMachine* vm) {
  std::unique_ptr<VirtualMachine> owned(vm);
  std::lock_guard<std::mutex> lock(mu_);
  --leased_;
  idle_.push_back(std::move(owned));
}

absl::StatusOr<VmPool::RunResult> VmPool::RunWithHostValues(absl::string_view function,
                                                          const std::vector<HostValue>& inputs) {
  ASSIGN_OR_RETURN(Lease vm, Acquire());
  RunResult r;
  ASSIGN_OR_RETURN(r.values, vm->RunWithHostValues(function, inputs));
  r.counters = vm->LastRunCounters();
  r.record = vm->LastRunRecord();
  return r;
}

void VmPool::Trim() {
  std::vector<std::unique_ptr<VirtualMachine>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(idle_);
  }
  // Destroyed outside the lock: freeing device memory may take a while.
}

int64_t VmPool::vms_created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

int64_t VmPool::vms_idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(idle_.size());
}

}  // namespace hetpass::vm
