// Test helpers for the PyTorch-exported models of ../shared/models (see its README): where a
// model is, its executable through a device's default pipeline, and a test set's inputs. Tests
// that need a model assert it exists (a missing file fails loudly, never skips).
#ifndef HETPASS_TEST_SUPPORT_SHARED_MODELS_H_
#define HETPASS_TEST_SUPPORT_SHARED_MODELS_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/support/status_macros.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"

namespace hetpass::testing {

inline std::string SharedModelDir(const std::string& name) {
  return absl::StrCat(HETPASS_SHARED_DIR, "/models/", name);
}

// DIR/model.onnx imported, through vm::DefaultPipeline(device), compiled for the VM.
// `pipeline`: empty for vm::DefaultPipeline(device).
inline absl::StatusOr<vm::Executable> CompileSharedModel(const std::string& dir, DeviceKind device,
                                                         const std::string& pipeline = "") {
  ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ImportOnnxFile(dir + "/model.onnx"));
  ASSIGN_OR_RETURN(auto pm, ParsePipeline(pipeline.empty() ? vm::DefaultPipeline(device) : pipeline,
                                          PassManagerOptions()));
  RETURN_IF_ERROR(pm->Run(*m).status());
  return vm::CompileModule(*m);
}

// SET_DIR/input_0.pb, input_1.pb, ... in order, up to the first missing one.
inline absl::StatusOr<std::vector<Tensor>> ReadTestSetInputs(const std::string& set_dir) {
  std::vector<Tensor> inputs;
  for (int i = 0;; ++i) {
    const std::string path = absl::StrCat(set_dir, "/input_", i, ".pb");
    if (!std::filesystem::exists(path)) break;
    ASSIGN_OR_RETURN(Tensor t, ReadOnnxTensorFile(path));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_SHARED_MODELS_H_
