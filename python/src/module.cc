// `hetpass._hetpass`: the extension module behind the `hetpass` package (python/hetpass). It
// holds no logic of its own beyond conversions: every call goes to the C++ library, and every
// absl::Status error comes back as a Python exception (bindings.h).
#include "bindings.h"

#include <string>

#include "absl/status/status.h"
#include "pybind11/pybind11.h"

namespace py = pybind11;

namespace hetpass::python {

void BindErrors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      // hetpass.errors maps the code to its class; it is imported lazily so the extension can
      // be loaded (and this translator registered) before the package finishes importing.
      py::object errors = py::module_::import("hetpass.errors");
      py::object exc = errors.attr("from_status")(
          std::string(absl::StatusCodeToString(e.status.code())), std::string(e.status.message()));
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
}

}  // namespace hetpass::python

PYBIND11_MODULE(_hetpass, m) {
  m.doc() = "hetpass compiler passes, copy ledger and VM (the C++ library, bound with pybind11)";
  hetpass::python::BindErrors(m);
  hetpass::python::BindIr(m);
  hetpass::python::BindLedger(m);
  hetpass::python::BindExecutable(m);
  hetpass::python::BindViz(m);
}
