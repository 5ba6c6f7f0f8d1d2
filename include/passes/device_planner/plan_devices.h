// plan-devices: gives every value a device and puts a device_copy at every device boundary,
// and nowhere else, minimising the bytes moved (see plan_devices.cc for the algorithm).
#ifndef HETPASS_DEVICE_PLANNER_PLAN_DEVICES_H_
#define HETPASS_DEVICE_PLANNER_PLAN_DEVICES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "passes/ir/ir.h"
#include "passes/pass/pass.h"

namespace hetpass {
class KernelCapabilities;
}  // namespace hetpass

namespace hetpass {

struct PlanDevicesOptions {
  static constexpr absl::string_view kName = "plan-devices";
  // Where kernels run: an accelerator (sim, cuda), or cpu (everything on the host).
  DeviceKind target = DeviceKind::kSim;
  // Where unannotated function parameters arrive and where results must end up.
  bool inputs_on_host = true;
  bool outputs_on_host = true;
  // The value every symbol (and `?` dim) takes when sizes are estimated for the cut.
  int64_t symbol_value = 64;
  // The function to plan.
  std::string function = "main";
  // Which ops the target's kernels run (constraint 2 in plan_devices.cc); null: the built-in
  // kernel providers'. Not owned; must outlive the pass.
  const KernelCapabilities* capabilities = nullptr;
};

std::unique_ptr<Pass> CreatePlanDevicesPass(const PlanDevicesOptions& options = {});

// The invariant plan-devices establishes, for tests and the verifier: every binding and
// parameter has a device, and every use that reads data (device_rules.h) reads it on the
// device that needs it (through a device_copy where they differ).
absl::Status VerifyDevicePlacement(const Module& module, absl::string_view function = "main",
                                   bool outputs_on_host = true);

}  // namespace hetpass

#endif  // HETPASS_DEVICE_PLANNER_PLAN_DEVICES_H_
