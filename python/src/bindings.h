// The pieces of the `hetpass._hetpass` extension module (python/src/*.cc), and how C++ errors
// become Python exceptions.
//
// Every library call returns absl::Status/StatusOr; the binding unwraps it with Unwrap/Check,
// which throw StatusError on failure. The translator registered in module.cc turns that into the
// exception class hetpass.errors picks for the status code (InvalidArgument -> a ValueError,
// Unimplemented -> a NotImplementedError, ...), carrying the message and the code's name.
#ifndef HETPASS_PYTHON_SRC_BINDINGS_H_
#define HETPASS_PYTHON_SRC_BINDINGS_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pybind11/pybind11.h"

namespace hetpass {
class Module;
}

namespace hetpass::python {

struct StatusError {
  absl::Status status;
};

inline void Check(absl::Status status) {
  if (!status.ok()) throw StatusError{std::move(status)};
}

template <typename T>
T Unwrap(absl::StatusOr<T> value) {
  if (!value.ok()) throw StatusError{value.status()};
  return *std::move(value);
}

// A module as Python holds it: shared, so an Executable or a ledger can outlive the Python
// object they came from.
struct PyModule {
  std::shared_ptr<Module> module;
};

// A deep copy (every function cloned), so compile() and viz.render() never change the module
// the caller passed.
std::shared_ptr<Module> CopyModule(const Module& module);

void BindErrors(pybind11::module_& m);
void BindIr(pybind11::module_& m);          // Module, parse, import_onnx, passes, ops, Expr
void BindLedger(pybind11::module_& m);      // CopyLedger, LedgerEntry, LedgerRegion
void BindExecutable(pybind11::module_& m);  // compile, Executable, Counters, comparison
void BindViz(pybind11::module_& m);         // render

}  // namespace hetpass::python

#endif  // HETPASS_PYTHON_SRC_BINDINGS_H_
