// The VM's control and container instructions that are more than a dispatch: sequence and
// optional builtins (ir/builtins.def), and ONNX Loop (a host-driven loop over a body function,
// with carried values and scan outputs stacked on their device).
#include "vm/vm_impl.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"

namespace hetpass::vm {

absl::StatusOr<Object> VirtualMachine::Impl::RunBuiltin(Builtin b,
                                                        const std::vector<const Object*>& args) {
  const absl::string_view name = BuiltinName(b);
  auto container = [&](int i, Object::Kind kind) -> absl::StatusOr<const std::vector<Object>*> {
    const Object& o = *args[i];
    if (o.kind != kind || o.fields == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": operand ", i, " is not ", kind == Object::Kind::kSequence ? "a sequence" : "an optional"));
    }
    return o.fields.get();
  };
  auto make = [](Object::Kind kind, std::vector<Object> fields) {
    Object o;
    o.kind = kind;
    o.fields = std::make_shared<std::vector<Object>>(std::move(fields));
    return o;
  };
  // Reads position operand `i` and resolves it against `size` (ONNX: -size..size-1, or up to
  // size inclusive where inserting may append).
  auto position = [&](int i, int64_t size, bool allow_end) -> absl::StatusOr<int64_t> {
    RETURN_IF_ERROR(ExpectTensor(*args[i], absl::StrCat(name, " position")));
    const NDArray& a = args[i]->tensor;
    RETURN_IF_ERROR(ExpectHost(a, absl::StrCat(name, " position")));
    if (a.num_elements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": position has ", a.num_elements(), " elements, expected 1"));
    }
    TraceRead(a);
    ASSIGN_OR_RETURN(int64_t pos, ReadInt(a, 0));
    const int64_t hi = allow_end ? size : size - 1;
    if (pos < -size || pos > hi) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s: position %d is out of range for a sequence of length %d (valid: %d..%d)", name,
          pos, size, -size, hi));
    }
    return pos < 0 ? pos + size : pos;
  };
  auto host_scalar = [&](DType dtype, int64_t v) -> absl::StatusOr<Object> {
    ASSIGN_OR_RETURN(NDArray a, runtime::AllocateTensor(pool(DeviceKind::kCpu), dtype, {}));
    if (dtype == DType::kBool) {
      *static_cast<uint8_t*>(a.data()) = v != 0;
    } else {
      *static_cast<int64_t*>(a.data()) = v;
    }
    TraceWrite(a);
    return Object::FromTensor(std::move(a));
  };
  switch (b) {
    case Builtin::kSeqConstruct: {
      std::vector<Object> fields;
      for (const Object* o : args) fields.push_back(*o);
      return make(Object::Kind::kSequence, std::move(fields));
    }
    case Builtin::kSeqEmpty:
      return make(Object::Kind::kSequence, {});
    case Builtin::kSeqInsert: {
      ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
      const int64_t size = static_cast<int64_t>(s->size());
      int64_t pos = size;
      if (args.size() == 3) {
        ASSIGN_OR_RETURN(pos, position(2, size, /*allow_end=*/true));
      }
      std::vector<Object> fields = *s;
      fields.insert(fields.begin() + pos, *args[1]);
      return make(Object::Kind::kSequence, std::move(fields));
    }
    case Builtin::kSeqAt: {
      ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
      ASSIGN_OR_RETURN(int64_t pos, position(1, static_cast<int64_t>(s->size()), false));
      return (*s)[pos];
    }
    case Builtin::kSeqErase: {
      ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
      const int64_t size = static_cast<int64_t>(s->size());
      if (size == 0) return absl::OutOfRangeError(absl::StrCat(name, ": the sequence is empty"));
      int64_t pos = size - 1;
      if (args.size() == 2) {
        ASSIGN_OR_RETURN(pos, position(1, size, false));
      }
      std::vector<Object> fields = *s;
      fields.erase(fields.begin() + pos);
      return make(Object::Kind::kSequence, std::move(fields));
    }
    case Builtin::kSeqLength: {
      ASSIGN_OR_RETURN(const std::vector<Object>* s, container(0, Object::Kind::kSequence));
      return host_scalar(DType::kI64, static_cast<int64_t>(s->size()));
    }
    case Builtin::kOptSome:
      return make(Object::Kind::kOptional, {*args[0]});
    case Builtin::kOptNone:
      return make(Object::Kind::kOptional, {});
    case Builtin::kOptHas: {
      ASSIGN_OR_RETURN(const std::vector<Object>* o, container(0, Object::Kind::kOptional));
      return host_scalar(DType::kBool, o->empty() ? 0 : 1);
    }
    case Builtin::kOptGet: {
      ASSIGN_OR_RETURN(const std::vector<Object>* o, container(0, Object::Kind::kOptional));
      if (o->empty()) {
        return absl::FailedPreconditionError(absl::StrCat(name, ": the optional holds no value"));
      }
      return (*o)[0];
    }
  }
  return absl::InternalError("bad builtin");
}

// ONNX Loop: operands (max_trips, cond, carried..., captures...), results (carried..., scans...).
// The body gets (iter, cond, carried..., captures...) and returns (cond, carried..., scans...).
absl::Status VirtualMachine::Impl::Loop(const VmFunction& f, const Instruction& in,
                                        std::vector<Object>& regs, int64_t* syms) {
  const int32_t* list = f.operands.data() + in.list;
  const int32_t carried = in.b;
  const int32_t captures = in.count - 2 - carried;
  const int32_t scans = in.count2 - carried;
  if (scans < 0) return absl::InvalidArgumentError("loop has fewer results than carried values");
  auto host_int = [&](int32_t reg, absl::string_view what) -> absl::StatusOr<int64_t> {
    RETURN_IF_ERROR(ExpectTensor(regs[reg], what));
    RETURN_IF_ERROR(ExpectHost(regs[reg].tensor, what));
    if (regs[reg].tensor.num_elements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is not a scalar"));
    }
    TraceRead(regs[reg].tensor);
    return ReadInt(regs[reg].tensor, 0);
  };
  ASSIGN_OR_RETURN(int64_t max_trips, host_int(list[0], "loop max_trips"));
  ASSIGN_OR_RETURN(int64_t cond, host_int(list[1], "loop condition"));
  std::vector<Object> state;
  for (int32_t i = 0; i < carried; ++i) state.push_back(regs[list[2 + i]]);
  std::vector<std::vector<NDArray>> scan_values(scans);
  Object cond_obj = regs[list[1]];
  int64_t iter = 0;
  for (; iter < max_trips && cond != 0; ++iter) {
    std::vector<Object> args;
    ASSIGN_OR_RETURN(NDArray it, HostI64({&iter, 1}, DType::kI64));
    it.shape.clear();  // a scalar
    args.push_back(Object::FromTensor(std::move(it)));
    args.push_back(cond_obj);
    for (Object& s : state) args.push_back(s);
    for (int32_t i = 0; i < captures; ++i) args.push_back(regs[list[2 + carried + i]]);
    ASSIGN_OR_RETURN(auto out, Call(in.a, std::move(args), syms));
    if (static_cast<int32_t>(out.size()) != 1 + carried + scans) {
      return absl::InvalidArgumentError("loop body returned the wrong number of values");
    }
    RETURN_IF_ERROR(ExpectTensor(out[0], "loop body condition"));
    RETURN_IF_ERROR(ExpectHost(out[0].tensor, "loop body condition"));
    TraceRead(out[0].tensor);
    ASSIGN_OR_RETURN(cond, ReadInt(out[0].tensor, 0));
    cond_obj = out[0];
    for (int32_t i = 0; i < carried; ++i) state[i] = std::move(out[1 + i]);
    for (int32_t i = 0; i < scans; ++i) {
      RETURN_IF_ERROR(ExpectTensor(out[1 + carried + i], "scan output"));
      scan_values[i].push_back(out[1 + carried + i].tensor);
    }
  }
  const int32_t* dsts = list + in.count;
  for (int32_t i = 0; i < carried; ++i) regs[dsts[i]] = std::move(state[i]);
  for (int32_t i = 0; i < scans; ++i) {
    // Stack along a new axis 0 on the device of the parts (a kernel there, not a transfer).
    const std::vector<NDArray>& parts = scan_values[i];
    const DeviceKind where = parts.empty() ? (in.device == DeviceKind::kUnset ? DeviceKind::kCpu : in.device)
                                           : parts[0].device()->kind();
    runtime::Shape shape = {static_cast<int64_t>(parts.size())};
    DType dtype = DType::kF32;
    if (parts.empty()) {
      // No iteration: [0, element dims...] of the declared type; an element dim the type does
      // not know (or that is over a symbol no run bound) is 0, the tensor being empty anyway.
      const TypeSpec& t = exe.types[f.operands[in.c + i]];
      dtype = t.dtype;
      for (size_t k = 1; k < t.dims.size(); ++k) {
        absl::StatusOr<int64_t> d =
            t.dims[k] >= 0 ? EvalDim(exe.dims[t.dims[k]], {syms, exe.symbols.size()}) : int64_t{0};
        shape.push_back(d.ok() && *d >= 0 ? *d : 0);
      }
    } else {
      dtype = parts[0].dtype;
      shape.insert(shape.end(), parts[0].shape.begin(), parts[0].shape.end());
      for (const NDArray& p : parts) {
        if (p.shape != parts[0].shape || p.dtype != dtype) {
          return absl::InvalidArgumentError(absl::StrCat("scan output ", i, " changes shape between iterations: ",
                                                         parts[0].TypeString(), " vs ", p.TypeString()));
        }
      }
    }
    ASSIGN_OR_RETURN(NDArray stacked, runtime::AllocateTensor(pool(where), dtype, std::move(shape)));
    if (tracing) {
      trace.Tick();
      for (const NDArray& p : parts) TraceRead(p);
      TraceWrite(stacked);
    }
    Device* d = dev(where);
    // Accelerators count each part's KernelCopy as a d2d copy (device.h); the ledger's bytes for
    // them are `?` when this flag is set: count them apart too.
    if (where != DeviceKind::kCpu && f.operands[in.c + scans + i] == kCopyRuntimeSized) {
      RunRecord::RuntimeSized& r = runtime_sized[static_cast<int>(CopyDirection::kDeviceToDevice)];
      r.calls += static_cast<int64_t>(parts.size());
      for (const NDArray& p : parts) r.bytes += static_cast<int64_t>(p.nbytes());
    }
    RETURN_IF_ERROR(d->Launch([&]() -> absl::Status {
      size_t off = 0;
      for (const NDArray& p : parts) {
        RETURN_IF_ERROR(d->KernelCopy(static_cast<char*>(stacked.data()) + off, p.data(), p.nbytes()));
        off += p.nbytes();
      }
      return absl::OkStatus();
    }));
    regs[dsts[carried + i]] = Object::FromTensor(std::move(stacked));
  }
  return absl::OkStatus();
}

}  // namespace hetpass::vm
