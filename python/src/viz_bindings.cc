// hetpass.viz.render: the pictures and index.html pass-viz writes, for a module in hand. The same
// StageDumper as the CLI (tools/viz): one stage for the input, one after every selected pass.
#include "bindings.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/ir/ir.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/runtime/device.h"
#include "passes/vm/vm.h"
#include "pybind11/stl.h"
#include "viz/stages.h"

namespace py = pybind11;

namespace hetpass::python {

void BindViz(py::module_& m) {
  m.def(
      "_render",
      [](const PyModule& module, const std::string& out_dir, const std::optional<std::string>& given,
         const std::string& device_name, const std::vector<std::string>& formats,
         const std::vector<std::string>& dump_after, double picture_seconds, bool copy_view,
         int copy_hops) {
        if (copy_hops < 0) throw StatusError{absl::InvalidArgumentError("copy_hops must be 0 or more")};
        // As pass-viz: no pipeline given draws the device's default one (the input alone shows
        // no device and no copy); "none" draws the input alone.
        std::string passes;
        if (given) {
          passes = *given == "none" ? "" : *given;
        } else {
          const std::optional<DeviceKind> device = ParseDevice(device_name);
          if (!device || *device == DeviceKind::kUnset) {
            throw StatusError{absl::InvalidArgumentError(
                absl::StrCat("device must be cpu, sim or cuda, got '", device_name, "'"))};
          }
          passes = vm::DefaultPipeline(*device);
        }
        PassManagerOptions pm_options;
        pm_options.verify_each = true;
        auto pm = Unwrap(ParsePipeline(passes, pm_options));
        std::vector<std::string> names;
        for (const auto& p : pm->passes()) names.push_back(std::string(p->name()));
        for (const std::string& name : dump_after) {
          if (name != "all" && std::find(names.begin(), names.end(), name) == names.end()) {
            throw StatusError{absl::InvalidArgumentError(absl::StrCat(
                "dump_after names '", name, "', which is not in the pipeline (",
                names.empty() ? "no passes" : absl::StrJoin(names, ", "), ")"))};
          }
        }
        viz::DumpOptions options;
        options.out_dir = out_dir;
        options.formats = formats;
        options.dump_after = dump_after;
        options.source_name = module.module->source_name();
        options.pipeline = passes;
        options.picture_seconds = picture_seconds;
        options.copy_view = copy_view;
        options.dot.copy_hops = copy_hops;
        std::unique_ptr<viz::StageDumper> dumper = Unwrap(viz::StageDumper::Create(options));
        std::shared_ptr<Module> copy = CopyModule(*module.module);
        Check(dumper->DumpStage(*copy, "", 0, false));
        pm->AddAfterPassHook(viz::MakeDumpAfterPassHook(dumper.get()));
        absl::StatusOr<bool> ran = pm->Run(*copy);
        // The pictures up to a failing pass are still written (with the error on the page).
        Check(dumper->WriteIndex(ran.ok() ? "" : std::string(ran.status().message())));
        Check(ran.status());
        py::list stages;
        for (const viz::StageSummary& s : dumper->stages()) {
          py::dict d;
          d["title"] = s.Title();
          d["pass"] = s.pass;
          d["copies"] = s.copies.size();
          py::list files;
          for (const viz::StageView& v : s.views) {
            for (const auto& [format, file] : v.files) files.append(file);
          }
          d["files"] = files;
          stages.append(d);
        }
        return stages;
      },
      py::arg("module"), py::arg("out_dir"), py::arg("passes"), py::arg("device"), py::arg("formats"),
      py::arg("dump_after"), py::arg("picture_seconds"), py::arg("copy_view"), py::arg("copy_hops"));
}

}  // namespace hetpass::python
