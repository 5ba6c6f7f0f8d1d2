// compile() and the Executable: a module lowered for a device, loaded into a VM, called with
// NumPy arrays.
//
// Arguments: an ndarray must have the parameter's dtype exactly (no silent casts; a list or a
// scalar is converted with the parameter's dtype). A parameter on the cpu borrows a C-contiguous
// array's memory (zero copy; a non-contiguous one is copied first); one on an accelerator is
// staged with one counted host-to-device transfer, before the counters are reset, so the run's
// counters hold exactly what the ledger promises (as vm::VirtualMachine::RunWithHostTensors).
//
// Results: a tensor left on the cpu in pooled memory becomes an ndarray over that memory (zero
// copy; the block returns to the pool when the array dies: the pool's run plan never reuses a
// block a caller still holds); one on an accelerator, or in memory the VM does not own (a
// constant, an argument returned as is), is copied into a new array.
//
// Threads (docs/python.md): a call releases the GIL while the VM runs, so other Python threads
// go on meanwhile. One Executable runs one call at a time: its mutex is held from staging the
// arguments to taking the results and counters, so a call's counters are its own. Executables
// made by clone() share the compiled program (vm::Program) but not the VM: one per thread runs
// in parallel. Deadlock-free lock order: the mutex is only ever waited for with the GIL
// released (Exclusive()), and the holder of the mutex may take the GIL (argument arrays are
// released with it).
#include "bindings.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/analysis/baseline_masks.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/ir.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/runtime/device.h"
#include "passes/runtime/ndarray.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"
#include "pybind11/numpy.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace hetpass::python {
namespace {

using vm::ArgSpec;
using vm::Object;

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// The NumPy dtype of a hetpass dtype; bf16 has none. dtype::of looks the descriptor up by type
// number (no string parsing): every result array of every call asks for one.
py::dtype NumpyDType(DType t) {
  switch (t) {
    case DType::kF16: return py::dtype(/*NPY_HALF=*/23);
    case DType::kF32: return py::dtype::of<float>();
    case DType::kF64: return py::dtype::of<double>();
    case DType::kI8: return py::dtype::of<int8_t>();
    case DType::kI16: return py::dtype::of<int16_t>();
    case DType::kI32: return py::dtype::of<int32_t>();
    case DType::kI64: return py::dtype::of<int64_t>();
    case DType::kU8: return py::dtype::of<uint8_t>();
    case DType::kU16: return py::dtype::of<uint16_t>();
    case DType::kU32: return py::dtype::of<uint32_t>();
    case DType::kU64: return py::dtype::of<uint64_t>();
    case DType::kBool: return py::dtype::of<bool>();
    case DType::kBF16: break;
  }
  throw StatusError{absl::UnimplementedError(
      absl::StrCat(DTypeName(t), " tensors have no NumPy dtype; the Python API does not pass them"))};
}

std::optional<DType> FromNumpy(const py::dtype& dt) {
  const int size = static_cast<int>(dt.itemsize());
  switch (dt.kind()) {
    case 'f':
      if (size == 2) return DType::kF16;
      if (size == 4) return DType::kF32;
      if (size == 8) return DType::kF64;
      break;
    case 'i':
      if (size == 1) return DType::kI8;
      if (size == 2) return DType::kI16;
      if (size == 4) return DType::kI32;
      if (size == 8) return DType::kI64;
      break;
    case 'u':
      if (size == 1) return DType::kU8;
      if (size == 2) return DType::kU16;
      if (size == 4) return DType::kU32;
      if (size == 8) return DType::kU64;
      break;
    case 'b': return DType::kBool;
    default: break;
  }
  return std::nullopt;
}

std::string ShapeText(const py::array& a) {
  std::vector<std::string> dims;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) dims.push_back(absl::StrCat(a.shape(i)));
  return absl::StrCat("(", absl::StrJoin(dims, ", "), a.ndim() == 1 ? ",)" : ")");
}

// Names an argument in errors ("input 0 'x' of @main", "... element 2"); built only when an
// error is raised, so a call pays nothing for it.
struct ArgName {
  int index;
  const std::string& function;
  const ArgSpec& spec;
  int element = -1;
  std::string Text() const {
    std::string s = absl::StrCat("input ", index, " '", spec.name, "' of @", function);
    if (element >= 0) absl::StrAppend(&s, " element ", element);
    return s;
  }
};

// One tensor argument on `pool`'s device (see the file comment).
Object StageTensor(const py::handle& value, const ArgSpec& spec, const ArgName& name,
                   runtime::PoolingAllocator* pool) {
  py::array array;
  std::optional<DType> dt;
  if (py::isinstance<py::array>(value)) {
    array = py::reinterpret_borrow<py::array>(value);
    dt = FromNumpy(array.dtype());
    if (!dt) {
      throw StatusError{Invalid(absl::StrCat(name.Text(), ": NumPy dtype ", std::string(py::str(array.dtype())),
                                             " has no hetpass dtype"))};
    }
    if (!spec.any_element && *dt != spec.dtype) {
      throw StatusError{Invalid(absl::StrCat(
          name.Text(), " expects ", spec.type_text, ", got a ", std::string(py::str(array.dtype())),
          " array of shape ", ShapeText(array), " (convert it with .astype(numpy.",
          std::string(py::str(NumpyDType(spec.dtype))), "))"))};
    }
    if (array.dtype().byteorder() == '>') {
      throw StatusError{Invalid(absl::StrCat(name.Text(), ": big-endian arrays are not supported"))};
    }
  } else {
    // A list or a scalar: no dtype of its own, so the parameter's.
    py::object np = py::module_::import("numpy");
    try {
      array = spec.any_element ? np.attr("asarray")(value)
                               : np.attr("asarray")(value, NumpyDType(spec.dtype));
    } catch (py::error_already_set& e) {
      throw StatusError{Invalid(absl::StrCat(
          name.Text(), " expects ", spec.type_text, "; cannot convert a ",
          std::string(py::str(py::type::of(value).attr("__name__"))), ": ", e.what()))};
    }
    dt = FromNumpy(array.dtype());
    if (!dt) {
      throw StatusError{Invalid(absl::StrCat(name.Text(), ": cannot pass a ", std::string(py::str(py::type::of(value).attr("__name__")))))};
    }
  }
  if (!(array.flags() & py::array::c_style)) {
    array = py::module_::import("numpy").attr("ascontiguousarray")(array);  // same dtype
  }
  const DType dtype = *dt;
  runtime::Shape shape;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) shape.push_back(array.shape(i));
  const size_t bytes = static_cast<size_t>(array.nbytes());
  runtime::Device* device = pool->device();
  if (device->kind() == DeviceKind::kCpu) {
    // Borrow the array's memory; the Storage keeps a reference to the array (released with the
    // GIL held: the VM runs with it held, and Python destroys arrays only with it).
    auto* owner = new py::object(array);
    std::shared_ptr<const void> keepalive(owner, [](const void* p) {
      py::gil_scoped_acquire gil;
      delete static_cast<const py::object*>(p);
    });
    runtime::NDArray a;
    a.dtype = dtype;
    a.shape = std::move(shape);
    a.storage = std::make_shared<runtime::Storage>(device, const_cast<void*>(array.data()), bytes,
                                                   std::move(keepalive));
    return Object::FromTensor(std::move(a));
  }
  runtime::NDArray a = Unwrap(runtime::AllocateTensor(pool, dtype, std::move(shape)));
  if (bytes > 0) Check(device->CopyHostToDevice(a.data(), array.data(), bytes));
  return Object::FromTensor(std::move(a));
}

Object StageArgument(const py::handle& value, const ArgSpec& spec, const ArgName& name,
                     runtime::PoolingAllocator* pool) {
  auto sequence = [&](const py::handle& v) {
    if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) {
      throw StatusError{Invalid(absl::StrCat(name.Text(), " is a sequence (", spec.type_text,
                                             "): pass a list of arrays"))};
    }
    Object o;
    o.kind = Object::Kind::kSequence;
    o.fields = std::make_shared<std::vector<Object>>();
    int i = 0;
    for (const py::handle& e : v) {
      o.fields->push_back(StageTensor(e, spec, ArgName{name.index, name.function, spec, i++}, pool));
    }
    return o;
  };
  switch (spec.container) {
    case ArgSpec::kTensor: return StageTensor(value, spec, name, pool);
    case ArgSpec::kSequence: return sequence(value);
    case ArgSpec::kOptional:
    case ArgSpec::kOptionalSequence: {
      Object o;
      o.kind = Object::Kind::kOptional;
      o.fields = std::make_shared<std::vector<Object>>();
      if (!value.is_none()) {
        o.fields->push_back(spec.container == ArgSpec::kOptional ? StageTensor(value, spec, name, pool)
                                                                 : sequence(value));
      }
      return o;
    }
  }
  throw StatusError{absl::InternalError("unknown argument container")};
}

// What a zero-copy result array keeps alive: its block, and the VM whose pool the block returns
// to (an array may outlive its Executable). Members go in reverse order: the block first.
struct ResultOwner {
  std::shared_ptr<vm::VirtualMachine> machine;
  std::shared_ptr<runtime::Storage> storage;
};

void FreeResultOwner(void* p) { delete static_cast<ResultOwner*>(p); }

py::object ToPython(const Object& o, int index, const std::shared_ptr<vm::VirtualMachine>& machine) {
  switch (o.kind) {
    case Object::Kind::kTensor: {
      const runtime::NDArray& t = o.tensor;
      std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
      runtime::Device* device = t.device();
      if (device->kind() == DeviceKind::kCpu && device->Owns(t.data())) {
        py::capsule owner(new ResultOwner{machine, t.storage}, &FreeResultOwner);
        return py::array(NumpyDType(t.dtype), shape, {}, t.data(), owner);
      }
      py::array out(NumpyDType(t.dtype), shape);
      if (t.nbytes() == 0) return out;
      if (device->kind() == DeviceKind::kCpu) {
        std::memcpy(out.mutable_data(), t.data(), t.nbytes());
      } else {
        Check(device->CopyDeviceToHost(out.mutable_data(), t.data(), t.nbytes()));
        Check(device->Synchronize());  // NumPy reads it next
      }
      return out;
    }
    case Object::Kind::kSequence: {
      py::list l;
      for (const Object& e : *o.fields) l.append(ToPython(e, index, machine));
      return l;
    }
    case Object::Kind::kOptional:
      if (o.fields->empty()) return py::none();
      return ToPython((*o.fields)[0], index, machine);
    case Object::Kind::kTuple: {
      py::list l;
      for (const Object& e : *o.fields) l.append(ToPython(e, index, machine));
      return py::tuple(l);
    }
    default: break;
  }
  throw StatusError{absl::UnimplementedError(absl::StrCat("result ", index, " is not a tensor, "
                                                          "sequence, optional or tuple"))};
}

// An executable loaded into a VM, with the ledger of its function.
struct PyExecutable {
  std::shared_ptr<vm::VirtualMachine> machine;  // shared with zero-copy result arrays
  vm::VmOptions options;                        // what the VM was loaded with (clone())
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();  // one call at a time
  std::shared_ptr<Module> lowered;  // the module after the pipeline
  CopyLedger ledger;
  std::string function;
  DeviceKind device = DeviceKind::kCpu;
  std::string pipeline;
  bool profile = false;
  runtime::DeviceCounters total;  // summed over runs since compile or reset_counters()
  int64_t runs = 0;
  int fi = -1;

  std::vector<Object> Stage(const py::args& args) const {
    const vm::VmFunction& f = machine->executable().functions[fi];
    if (args.size() != f.params.size()) {
      std::vector<std::string> names;
      for (const ArgSpec& p : f.params) names.push_back(p.name);
      throw StatusError{Invalid(absl::StrCat("@", function, " takes ", f.params.size(), " inputs (",
                                             absl::StrJoin(names, ", "), "), got ", args.size()))};
    }
    std::vector<Object> staged;
    staged.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const ArgSpec& spec = f.params[i];
      staged.push_back(StageArgument(args[i], spec, ArgName{static_cast<int>(i), function, spec},
                                     machine->pool(spec.device)));
    }
    return staged;
  }

  // This executable's mutex, waited for without the GIL; returns with both held.
  std::unique_lock<std::mutex> Exclusive() const {
    py::gil_scoped_release nogil;
    return std::unique_lock<std::mutex>(*mu);
  }

  py::list Run(const py::args& args) {
    auto lock = Exclusive();
    std::vector<Object> staged = Stage(args);
    absl::StatusOr<std::vector<Object>> ran;
    {
      py::gil_scoped_release nogil;
      ran = machine->RunStaged(function, std::move(staged));
    }
    std::vector<Object> out = Unwrap(std::move(ran));
    total += machine->LastRunCounters();
    ++runs;
    py::list results;
    for (size_t i = 0; i < out.size(); ++i) results.append(ToPython(out[i], static_cast<int>(i), machine));
    return results;
  }
};


py::dict CountersDict(const runtime::DeviceCounters& c) {
  py::dict d;
  for (const auto& [field, member] : runtime::kDeviceCounterFields) d[field] = c.*member;
  return d;
}

// A Counters object carrying the executable's ledger, so testing.expect_copies can list the
// copies behind a count.
py::object MakeCounters(const runtime::DeviceCounters& c, const PyExecutable& exe) {
  py::object o = py::cast(c);
  o.attr("ledger") = py::cast(exe.ledger);
  return o;
}

}  // namespace

void BindExecutable(py::module_& m) {
  py::class_<runtime::DeviceCounters> counters(m, "Counters", py::dynamic_attr(),
                                                "What the devices did: transfers (calls and "
                                                "bytes), syncs, raw allocations, kernel launches.");
  for (const auto& [field, member] : runtime::kDeviceCounterFields) counters.def_readonly(field, member);
  counters.def("to_dict", &CountersDict)
      .def("__str__", &runtime::DeviceCounters::ToString)
      .def("__repr__", [](const runtime::DeviceCounters& c) { return absl::StrCat("Counters(", c.ToString(), ")"); });

  using Cmp = vm::LedgerComparison;
  py::class_<Cmp::Field>(m, "ComparisonField")
      .def_readonly("promised", &Cmp::Field::promised)
      .def_readonly("measured", &Cmp::Field::measured)
      .def_readonly("note", &Cmp::Field::note)
      .def_property_readonly("verdict", [](const Cmp::Field& f) {
        switch (f.verdict) {
          case Cmp::Verdict::kMatch: return "match";
          case Cmp::Verdict::kMismatch: return "mismatch";
          case Cmp::Verdict::kUnbound: return "unbound";
          case Cmp::Verdict::kNotChecked: return "not checked";
        }
        return "?";
      });
  py::class_<Cmp::Row>(m, "ComparisonRow")
      .def_readonly("name", &Cmp::Row::name)
      .def_readonly("count", &Cmp::Row::count)
      .def_readonly("bytes", &Cmp::Row::bytes, "Bytes of the copies whose size the IR states")
      .def_readonly("runtime_sized", &Cmp::Row::runtime_sized,
                    "True when the direction has copies of a size known only at run time")
      .def_readonly("runtime_sized_count", &Cmp::Row::runtime_sized_count)
      .def_readonly("runtime_sized_bytes", &Cmp::Row::runtime_sized_bytes);
  py::class_<Cmp>(m, "LedgerComparison",
                  "The ledger's promise next to what the last run measured, per direction.")
      .def_readonly("function", &Cmp::function)
      .def_readonly("rows", &Cmp::rows)
      .def_readonly("syncs", &Cmp::syncs)
      .def_property_readonly("exact", &Cmp::exact, "Every field compared and equal")
      .def_property_readonly("agrees", &Cmp::agrees, "No field failed (only the bytes of copies of a run-time size may be unchecked)")
      .def("table", &Cmp::Table)
      .def("summary", &Cmp::Summary)
      .def("check", [](const Cmp& c) { Check(c.ToStatus()); },
           "Raises FailedPreconditionError (a RuntimeError) unless the comparison agrees.")
      .def("__str__", [](const Cmp& c) { return absl::StrCat(c.Summary(), "\n", c.Table()); })
      .def("__bool__", &Cmp::exact);

  py::class_<vm::ProfileEntry>(m, "ProfileEntry")
      .def_readonly("function", &vm::ProfileEntry::function)
      .def_readonly("pc", &vm::ProfileEntry::pc)
      .def_readonly("opcode", &vm::ProfileEntry::opcode)
      .def_readonly("what", &vm::ProfileEntry::what)
      .def_readonly("calls", &vm::ProfileEntry::calls)
      .def_readonly("total_us", &vm::ProfileEntry::total_us)
      .def("__repr__", [](const vm::ProfileEntry& e) {
        return absl::StrCat("ProfileEntry(", e.opcode, " ", e.what, ": ", e.calls, " calls, ",
                            e.total_us, " us)");
      });

  py::class_<PyExecutable>(m, "Executable", "A module compiled for a device and loaded into a VM.")
      .def("__call__",
           [](PyExecutable& self, const py::args& args) -> py::object {
             py::list out = self.Run(args);
             if (out.size() == 1) return out[0];
             return py::tuple(out);
           },
           "Runs the function: NumPy arrays in, NumPy arrays out (one result: the array; "
           "several: a tuple).")
      .def("run", &PyExecutable::Run, "As calling it, but always a list of results.")
      .def_property_readonly("counters",
                             [](const PyExecutable& self) {
                               auto lock = self.Exclusive();
                               return MakeCounters(self.machine->LastRunCounters(), self);
                             },
                             "The last run's counters (staging and reading results excluded).")
      .def_property_readonly("total_counters",
                             [](const PyExecutable& self) {
                               auto lock = self.Exclusive();
                               return MakeCounters(self.total, self);
                             },
                             "Counters summed over every run since compile() or reset_counters().")
      .def_property_readonly("runs",
                             [](const PyExecutable& self) {
                               auto lock = self.Exclusive();
                               return self.runs;
                             })
      .def("reset_counters",
           [](PyExecutable& self) {
             auto lock = self.Exclusive();
             self.total = runtime::DeviceCounters();
             self.runs = 0;
           })
      .def(
          "clone",
          [](const PyExecutable& self) {
            // The compiled program is shared (no pipeline, no kernel compile): only the VM's
            // own parts are made (devices, constants, kernel instances).
            auto exe = std::make_unique<PyExecutable>();
            exe->options = self.options;
            exe->machine = Unwrap(vm::VirtualMachine::Load(self.machine->program(), self.options));
            exe->lowered = self.lowered;
            exe->ledger = self.ledger;
            exe->function = self.function;
            exe->device = self.device;
            exe->pipeline = self.pipeline;
            exe->profile = self.profile;
            exe->fi = self.fi;
            return exe;
          },
          "A new Executable of the same compiled program with a VM of its own (its own device "
          "memory and counters; no compile): one per thread runs calls in parallel.")
      .def(
          "trim_memory",
          [](PyExecutable& self) {
            auto lock = self.Exclusive();
            self.machine->TrimMemory();
          },
          "Gives the device memory the VM's pools keep between calls back to the devices.")
      .def_readonly("ledger", &PyExecutable::ledger)
      .def_property_readonly("device", [](const PyExecutable& self) { return std::string(DeviceName(self.device)); })
      .def_readonly("function", &PyExecutable::function)
      .def_readonly("pipeline", &PyExecutable::pipeline)
      .def_property_readonly("module", [](const PyExecutable& self) { return PyModule{self.lowered}; },
                             "The module after the pipeline (what the VM runs).")
      .def_property_readonly(
          "inputs",
          [](const PyExecutable& self) {
            py::list l;
            for (const ArgSpec& p : self.machine->executable().functions[self.fi].params) {
              l.append(py::make_tuple(p.name, p.type_text));
            }
            return l;
          },
          "(name, type) of each parameter: [('x', 'f32[n, 1024] @cpu')]")
      .def_property_readonly("last_symbols",
                             [](const PyExecutable& self) {
                               auto lock = self.Exclusive();
                               std::map<std::string, int64_t> s;
                               for (const auto& [k, v] : self.machine->LastRunRecord().symbols) s[k] = v;
                               return s;
                             },
                             "The symbols the last run's arguments bound ({'n': 16}).")
      .def("compare_with_ledger",
           [](const PyExecutable& self) {
             auto lock = self.Exclusive();
             return vm::CompareLedgerToRun(self.ledger, self.machine->LastRunCounters(),
                                           self.machine->LastRunRecord());
           },
           "The ledger next to the last run's counters (LedgerComparison).")
      .def("profile",
           [](const PyExecutable& self) {
             if (!self.profile) {
               throw StatusError{absl::FailedPreconditionError(
                   "no profile: compile with profile=True to time every instruction")};
             }
             auto lock = self.Exclusive();
             return self.machine->Profile();
           },
           "Per-instruction times summed over runs, slowest first (compile with profile=True).")
      .def("kernels", [](const PyExecutable& self) { return self.machine->KernelDescriptions(); })
      .def("listing", [](const PyExecutable& self) { return self.machine->executable().ToListing(); })
      .def(
          "_time_cpp_runs",
          [](PyExecutable& self, const py::args& args, int64_t iterations) {
            // The C++ VM alone on the same arguments, staged once: the baseline of
            // bench/python/call_overhead.py (seconds per run).
            auto lock = self.Exclusive();
            const std::vector<Object> staged = self.Stage(args);
            const auto t0 = std::chrono::steady_clock::now();
            for (int64_t i = 0; i < iterations; ++i) {
              Unwrap(self.machine->RunStaged(self.function, staged));
            }
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                   static_cast<double>(iterations);
          },
          py::arg("iterations") = 1000);

  m.def(
      "compile",
      [](const PyModule& module, const std::string& device_name, const std::optional<std::string>& passes,
         const std::string& function, const std::optional<std::string>& baseline, bool profile,
         int64_t device_memory_limit) {
        const std::optional<DeviceKind> device = ParseDevice(device_name);
        if (!device || *device == DeviceKind::kUnset) {
          throw StatusError{Invalid(absl::StrCat("device must be cpu, sim or cuda, got '", device_name, "'"))};
        }
        if (*device == DeviceKind::kCuda) Unwrap(runtime::MakeDevice(*device));  // no GPU: says why
        auto exe = std::make_unique<PyExecutable>();
        exe->device = *device;
        exe->function = function;
        exe->profile = profile;
        exe->pipeline = passes ? *passes : vm::DefaultPipeline(*device);
        if (baseline) {
          const std::optional<BaselineMasks> b = ParseBaselineMasks(*baseline);
          if (!b) {
            throw StatusError{Invalid(absl::StrCat("baseline must be single-flag or relay, got '", *baseline, "'"))};
          }
          exe->pipeline = PipelineWithBaseline(exe->pipeline, *b);
        }
        exe->lowered = CopyModule(*module.module);
        PassManagerOptions o;
        o.verify_each = true;
        auto pm = Unwrap(ParsePipeline(exe->pipeline, o));
        Unwrap(pm->Run(*exe->lowered));
        exe->ledger = Unwrap(ComputeCopyLedger(*exe->lowered, function));
        vm::Executable code = Unwrap(vm::CompileModule(*exe->lowered));
        if (device_memory_limit < 0) {
          throw StatusError{Invalid(absl::StrCat("device_memory_limit must be >= 0 bytes, got ",
                                                 device_memory_limit))};
        }
        exe->options.profile = profile;
        exe->options.device_memory_limit = device_memory_limit;
        exe->machine = Unwrap(vm::VirtualMachine::Load(std::move(code), exe->options));
        exe->fi = exe->machine->executable().FindFunction(function);
        if (exe->fi < 0) {
          throw StatusError{absl::NotFoundError(absl::StrCat("no function @", function, " in the executable"))};
        }
        return exe;
      },
      py::arg("module"), py::arg("device") = "cpu", py::arg("passes") = py::none(),
      py::arg("function") = "main", py::arg("baseline") = py::none(), py::arg("profile") = false,
      py::arg("device_memory_limit") = 0,
      "Lowers a copy of `module` with the device's default pipeline (or `passes`; `baseline` "
      "swaps in the single-flag or relay masks) and loads it into a VM. device_memory_limit: "
      "bytes each accelerator device may hold (0: no limit); over it a call raises MemoryError.");

  m.def(
      "read_onnx_tensor",
      [](const std::string& path) {
        const Tensor t = Unwrap(ReadOnnxTensorFile(path));
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
        py::array out(NumpyDType(t.dtype()), shape);
        if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.data(), t.nbytes());
        return out;
      },
      py::arg("path"), "A serialized onnx.TensorProto file (test_data_set_*/input_0.pb) as an array.");
}

}  // namespace hetpass::python
