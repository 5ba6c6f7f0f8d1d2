// Modules, the pass pipeline, the registries (passes, ops with their per-input masks), symbolic
// sizes and the copy ledger, as Python sees them. Conversions only: parsing, importing, passes
// and the ledger are the C++ library's.
#include "bindings.h"

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/dim_expr.h"
#include "passes/ir/input_dep.h"
#include "passes/ir/ir.h"
#include "passes/ir/op_def.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/pass/verify_module.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace hetpass::python {

std::shared_ptr<Module> CopyModule(const Module& module) {
  auto copy = std::make_shared<Module>();
  copy->set_source_name(module.source_name());
  for (const auto& f : module.functions()) CloneFunction(*f, *copy, f->name());
  return copy;
}

namespace {

// Symbol bindings from a dict and keyword arguments (keywords win).
DimExpr::Bindings ToBindings(const py::object& mapping, const py::kwargs& kwargs) {
  DimExpr::Bindings b;
  if (!mapping.is_none()) {
    for (const auto& [k, v] : mapping.cast<py::dict>()) b[k.cast<std::string>()] = v.cast<int64_t>();
  }
  for (const auto& [k, v] : kwargs) b[k.cast<std::string>()] = v.cast<int64_t>();
  return b;
}

CopyDirection ParseDirection(const std::string& name) {
  for (CopyDirection d : kAllCopyDirections) {
    if (CopyDirectionName(d) == name) return d;
  }
  throw StatusError{absl::InvalidArgumentError(
      absl::StrCat("unknown copy direction '", name, "' (expected h2d, d2h, d2d or param)"))};
}

std::shared_ptr<Module> ImportOnnxObject(const py::object& source, bool infer_types) {
  OnnxImportOptions options;
  options.infer_types = infer_types;
  if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source)) {
    const std::string bytes =
        py::isinstance<py::bytes>(source)
            ? source.cast<std::string>()
            : std::string(PyByteArray_AsString(source.ptr()),
                          static_cast<size_t>(PyByteArray_Size(source.ptr())));
    return Unwrap(ImportOnnx(bytes, options));
  }
  // str or os.PathLike
  const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
  return Unwrap(ImportOnnxFile(path, options));
}

}  // namespace

void BindIr(py::module_& m) {
  py::class_<DimExpr>(m, "Expr",
                      "A symbolic size: an integer expression over input symbols (`16*n*4`), "
                      "region counts (`$loop0`) and `?` (known only at run time).")
      .def("__str__", &DimExpr::ToString)
      .def("__repr__", [](const DimExpr& e) { return absl::StrCat("Expr('", e.ToString(), "')"); })
      .def_property_readonly("is_constant", &DimExpr::is_constant)
      .def_property_readonly("has_unknown", &DimExpr::has_unknown)
      .def_property_readonly("symbols",
                             [](const DimExpr& e) {
                               std::set<std::string> s;
                               e.CollectSymbols(&s);
                               return s;
                             })
      .def(
          "evaluate",
          [](const DimExpr& e, const py::object& symbols, const py::kwargs& kwargs) {
            return Unwrap(e.Evaluate(ToBindings(symbols, kwargs)));
          },
          py::arg("symbols") = py::none(),
          "The value with every symbol bound (a dict and/or keywords: evaluate(n=16)); "
          "ValueError names an unbound symbol or a `?`.")
      .def("__int__",
           [](const DimExpr& e) {
             if (!e.is_constant()) {
               throw StatusError{absl::InvalidArgumentError(absl::StrCat(
                   "'", e.ToString(), "' is not a constant: evaluate() it with its symbols"))};
             }
             return e.constant();
           })
      .def("__eq__", [](const DimExpr& a, const DimExpr& b) { return a == b; }, py::is_operator())
      .def("__eq__", [](const DimExpr& a, int64_t b) { return a.is_constant() && a.constant() == b; },
           py::is_operator())
      .def("__hash__", [](const DimExpr& e) { return py::hash(py::str(e.ToString())); });

  py::class_<PyModule>(m, "Module", "An IR module (text IR, or imported from ONNX).")
      .def("__str__", [](const PyModule& self) { return PrintModule(*self.module); })
      .def(
          "text",
          [](const PyModule& self, bool elide_constants) {
            PrintOptions o;
            o.elide_large_constants = elide_constants;
            return PrintModule(*self.module, o);
          },
          py::arg("elide_constants") = false,
          "The text IR; elide_constants prints large constants as `constant<elided>`.")
      .def(
          "run_passes",
          [](PyModule& self, const std::string& pipeline, bool verify) -> PyModule& {
            PassManagerOptions o;
            o.verify_each = verify;
            auto pm = Unwrap(ParsePipeline(pipeline, o));
            Unwrap(pm->Run(*self.module));
            return self;
          },
          py::arg("pipeline"), py::arg("verify") = true, py::return_value_policy::reference,
          "Runs a pass pipeline (`infer-types,fold-constants,plan-devices{target=sim},...`) on "
          "this module in place, verifying after every pass; returns the module.")
      .def("verify", [](const PyModule& self) { Check(VerifyModule(*self.module)); })
      .def("copy", [](const PyModule& self) { return PyModule{CopyModule(*self.module)}; },
           "A deep copy.")
      .def_property_readonly("functions",
                             [](const PyModule& self) {
                               std::vector<std::string> names;
                               for (const auto& f : self.module->functions()) names.push_back(f->name());
                               return names;
                             })
      .def_property_readonly("source_name",
                             [](const PyModule& self) { return self.module->source_name(); })
      .def(
          "copy_ledger",
          [](const PyModule& self, const std::string& function) {
            CopyLedger ledger = Unwrap(ComputeCopyLedger(*self.module, function));
            // The entries' node pointers would dangle once a pass rewrites the module.
            for (LedgerEntry& e : ledger.entries) e.node = nullptr;
            return ledger;
          },
          py::arg("function") = "main",
          "Every transfer and sync `function` will make, known before it runs (CopyLedger).");

  m.def(
      "parse",
      [](const std::string& text, const std::string& source_name, bool allow_elided_constants) {
        ParseOptions o;
        o.source_name = source_name;
        o.allow_elided_constants = allow_elided_constants;
        return PyModule{Unwrap(ParseModule(text, o))};
      },
      py::arg("text"), py::arg("source_name") = "<string>",
      py::arg("allow_elided_constants") = false,
      "Parses text IR; a syntax error is a ValueError naming the line and column.");
  m.def(
      "import_onnx",
      [](const py::object& source, bool infer_types) {
        return PyModule{ImportOnnxObject(source, infer_types)};
      },
      py::arg("model"), py::arg("infer_types") = true,
      "Imports an ONNX model from a path (str or os.PathLike) or its serialized bytes.");

  py::class_<PassInfo>(m, "PassInfo")
      .def_readonly("name", &PassInfo::name)
      .def_readonly("summary", &PassInfo::summary)
      .def_readonly("options", &PassInfo::options)
      .def("__repr__", [](const PassInfo& p) { return absl::StrCat("PassInfo('", p.name, "')"); });
  m.def("passes", [] { return PassRegistry::Global().passes(); },
        "Every registered pass, in registration order.");

  py::class_<InputSpec>(m, "OpInput")
      .def_readonly("name", &InputSpec::name)
      .def_property_readonly("mask", [](const InputSpec& s) { return std::string(InputDepName(s.dep)); })
      .def_property_readonly("needs_shape", [](const InputSpec& s) { return NeedsShape(s.dep); })
      .def_property_readonly("needs_value", [](const InputSpec& s) { return NeedsValue(s.dep); })
      .def("__repr__", [](const InputSpec& s) {
        return absl::StrCat("OpInput('", s.name, "', mask='", InputDepName(s.dep), "')");
      });
  py::class_<OpDef, std::unique_ptr<OpDef, py::nodelete>>(m, "OpInfo")
      .def_property_readonly("name", &OpDef::name)
      .def_property_readonly("inputs", &OpDef::inputs,
                             "Each input with its mask: what the shape function reads of it "
                             "(none, shape, value, shape+value)")
      .def_property_readonly("variadic", &OpDef::variadic)
      .def_property_readonly("num_outputs", &OpDef::num_outputs)
      .def_property_readonly("data_dependent_output_shape", &OpDef::data_dependent_output_shape)
      .def_property_readonly("doc", &OpDef::doc)
      .def("__repr__", [](const OpDef& op) { return absl::StrCat("OpInfo('", op.name(), "')"); });
  m.def(
      "ops",
      [] {
        std::vector<const OpDef*> ops;
        for (const auto& op : OpRegistry::Global().ops()) ops.push_back(op.get());
        return ops;
      },
      py::return_value_policy::reference, "Every op of the registry.");
}

void BindLedger(py::module_& m) {
  py::class_<LedgerRegion>(m, "LedgerRegion")
      .def_readonly("symbol", &LedgerRegion::symbol)
      .def_readonly("function", &LedgerRegion::function)
      .def_readonly("description", &LedgerRegion::description)
      .def_readonly("parent", &LedgerRegion::parent)
      .def_readonly("loop", &LedgerRegion::loop);

  py::class_<LedgerEntry>(m, "LedgerEntry", "One transfer of the copy ledger.")
      .def_property_readonly("direction",
                             [](const LedgerEntry& e) { return std::string(CopyDirectionName(e.direction)); })
      .def_property_readonly("src", [](const LedgerEntry& e) { return std::string(DeviceName(e.src)); })
      .def_property_readonly("dst", [](const LedgerEntry& e) { return std::string(DeviceName(e.dst)); })
      .def_readonly("bytes", &LedgerEntry::bytes, "Bytes per execution, an Expr of the symbols")
      .def_readonly("value", &LedgerEntry::value)
      .def_readonly("copy", &LedgerEntry::copy)
      .def_readonly("reason", &LedgerEntry::reason)
      .def_readonly("synchronizes", &LedgerEntry::synchronizes)
      .def_readonly("in_loop", &LedgerEntry::in_loop)
      .def_readonly("implied", &LedgerEntry::implied)
      .def_readonly("region", &LedgerEntry::region)
      .def("__repr__", [](const LedgerEntry& e) {
        return absl::StrCat("LedgerEntry(", CopyDirectionName(e.direction), " ", e.value, " ",
                            DeviceName(e.src), "->", DeviceName(e.dst), ", ", e.bytes.ToString(),
                            " B: ", e.reason, ")");
      });

  py::class_<CopyLedger>(m, "CopyLedger",
                         "Every transfer and sync of one function, per inference, known before "
                         "it runs.")
      .def_readonly("function", &CopyLedger::function)
      .def_readonly("entries", &CopyLedger::entries)
      .def_readonly("regions", &CopyLedger::regions)
      .def("count", [](const CopyLedger& l, const std::string& d) { return l.Count(ParseDirection(d)); },
           py::arg("direction"), "Copies per inference of one direction (an Expr).")
      .def("bytes", [](const CopyLedger& l, const std::string& d) { return l.Bytes(ParseDirection(d)); },
           py::arg("direction"), "Bytes per inference of one direction (an Expr).")
      .def("sites", [](const CopyLedger& l, const std::string& d) { return l.Sites(ParseDirection(d)); },
           py::arg("direction"), "Copy sites of one direction in the IR.")
      .def("syncs", &CopyLedger::Syncs, "Host-device synchronisations per inference (an Expr).")
      .def("to_json", &CopyLedger::ToJson)
      .def("to_text", &CopyLedger::ToText)
      .def("__str__", &CopyLedger::ToText)
      .def("__len__", [](const CopyLedger& l) { return l.entries.size(); })
      .def(
          "__iter__",
          [](const CopyLedger& l) { return py::make_iterator(l.entries.begin(), l.entries.end()); },
          py::keep_alive<0, 1>());
}

}  // namespace hetpass::python
