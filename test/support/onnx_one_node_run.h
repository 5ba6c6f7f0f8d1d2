// Runs a OneNodeModel (onnx_one_node_model.h) end to end for the converter tests that check
// values: import, the default pipeline of a device (the verifier after every pass), VM
// compilation, one run on host tensors; OneNodeOutput runs on cpu and sim and compares.
#ifndef HETPASS_TEST_SUPPORT_ONNX_ONE_NODE_RUN_H_
#define HETPASS_TEST_SUPPORT_ONNX_ONE_NODE_RUN_H_

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/runtime/device.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"
#include "support/onnx_one_node_model.h"

namespace hetpass::testing {

// The outputs of `m` run once on `target` with host `inputs`, or the first error.
inline absl::StatusOr<std::vector<Tensor>> RunOneNode(const OneNodeModel& m, DeviceKind target,
                                                      const std::vector<Tensor>& inputs) {
  auto module = ImportOnnx(m.Bytes());
  if (!module.ok()) return module.status();
  PassManagerOptions o;
  o.verify_each = true;
  auto pm = ParsePipeline(vm::DefaultPipeline(target), o);
  if (!pm.ok()) return pm.status();
  if (auto r = (*pm)->Run(**module); !r.ok()) return r.status();
  auto exe = vm::CompileModule(**module);
  if (!exe.ok()) return exe.status();
  auto machine = vm::VirtualMachine::Load(*std::move(exe));
  if (!machine.ok()) return machine.status();
  return (*machine)->RunWithHostTensors("main", inputs);
}

// The single output of `m` on cpu and on sim (as doubles), which must agree and have dtype
// `want`; empty (with a test failure) when a run fails.
inline std::vector<double> OneNodeOutput(const OneNodeModel& m, const std::vector<Tensor>& inputs,
                                         DType want) {
  std::vector<double> first;
  for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
    SCOPED_TRACE(DeviceName(target));
    auto got = RunOneNode(m, target, inputs);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || got->size() != 1) return {};
    EXPECT_EQ((*got)[0].dtype(), want);
    std::vector<double> v = (*got)[0].ToDoubles();
    if (target == DeviceKind::kCpu) {
      first = std::move(v);
    } else {
      EXPECT_EQ(v, first);
    }
  }
  return first;
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_ONNX_ONE_NODE_RUN_H_
