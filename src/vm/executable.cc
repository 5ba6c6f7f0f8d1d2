// The executable as data: listing, verification and the binary file format.
//
// File format (little endian): magic "HPVMEXE1", u32 format version, u64 payload size, u64
// FNV-1a hash of the payload, payload. The payload is a flat sequence of the tables; every read
// is bounds-checked and every count is checked against the bytes left, so a truncated or corrupt
// file gives an error naming what was being read, never a crash or a huge allocation. Verify()
// then checks every index once, which is what lets the interpreter skip checks per instruction.
#include "passes/vm/executable.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/file.h"
#include "passes/support/status_macros.h"

namespace hetpass::vm {
namespace {

constexpr char kMagic[8] = {'H', 'P', 'V', 'M', 'E', 'X', 'E', '1'};
// 2: alloc_tensor_dyn dims may bind symbols; 3: loop lists its scan outputs' types
// 4: ArgSpec::container; 5: loop scan size flags; 6: assumptions and kAssume
constexpr uint32_t kFormatVersion = 6;

uint64_t Fnv1a(absl::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void I32(int32_t v) { Raw(&v, 4); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void I64(int64_t v) { Raw(&v, 8); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Str(absl::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  absl::Status Need(size_t n, absl::string_view what) {
    if (in_.size() - pos_ < n) {
      return absl::DataLossError(absl::StrCat("executable truncated: reading ", what, " at byte ",
                                              pos_, " needs ", n, " bytes, ", in_.size() - pos_,
                                              " left"));
    }
    return absl::OkStatus();
  }
  template <typename T>
  absl::StatusOr<T> Get(absl::string_view what) {
    RETURN_IF_ERROR(Need(sizeof(T), what));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  absl::StatusOr<std::string> Str(absl::string_view what) {
    ASSIGN_OR_RETURN(uint64_t n, Get<uint64_t>(what));
    RETURN_IF_ERROR(Need(n, what));
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items of at least `min_item_bytes` each: bounded by the bytes left.
  absl::StatusOr<size_t> Count(absl::string_view what, size_t min_item_bytes) {
    ASSIGN_OR_RETURN(uint64_t n, Get<uint64_t>(what));
    if (min_item_bytes > 0 && n > (in_.size() - pos_) / min_item_bytes) {
      return absl::DataLossError(absl::StrCat("executable corrupt: ", what, " count ", n,
                                              " exceeds the remaining ", in_.size() - pos_,
                                              " bytes"));
    }
    return static_cast<size_t>(n);
  }
  bool done() const { return pos_ == in_.size(); }
  size_t pos() const { return pos_; }

 private:
  absl::string_view in_;
  size_t pos_ = 0;
};

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("executable corrupt: ", what));
}

void PutTensor(Writer& w, const Tensor& t) {
  w.U8(static_cast<uint8_t>(t.dtype()));
  w.U64(t.shape().size());
  for (int64_t d : t.shape()) w.I64(d);
  w.Str(absl::string_view(reinterpret_cast<const char*>(t.data()), t.nbytes()));
}

absl::StatusOr<DType> GetDType(Reader& r, absl::string_view what) {
  ASSIGN_OR_RETURN(uint8_t v, r.Get<uint8_t>(what));
  if (v >= kNumDTypes) return Corrupt(absl::StrCat(what, ": dtype ", v));
  return static_cast<DType>(v);
}

// Every device kind of devices.def (kUnset included).
constexpr int kNumDeviceKinds = 0
#define HETPASS_DEVICE(e, name, accel) +1
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
    ;

absl::StatusOr<DeviceKind> GetDevice(Reader& r, absl::string_view what) {
  ASSIGN_OR_RETURN(uint8_t v, r.Get<uint8_t>(what));
  if (v >= kNumDeviceKinds) return Corrupt(absl::StrCat(what, ": device ", v));
  return static_cast<DeviceKind>(v);
}

absl::StatusOr<Tensor> GetTensor(Reader& r) {
  ASSIGN_OR_RETURN(DType dt, GetDType(r, "constant dtype"));
  ASSIGN_OR_RETURN(size_t rank, r.Count("constant rank", 8));
  std::vector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i) {
    ASSIGN_OR_RETURN(int64_t d, r.Get<int64_t>("constant dim"));
    if (d < 0) return Corrupt("negative constant dim");
    shape.push_back(d);
  }
  ASSIGN_OR_RETURN(std::string bytes, r.Str("constant data"));
  auto t = Tensor::FromBytes(dt, shape, bytes);
  if (!t.ok()) return Corrupt(absl::StrCat("constant: ", t.status().message()));
  return t;
}

// The program rebuilt as a canonical DimExpr, so listings print sizes as the IR does.
std::string DimText(const Executable& exe, int32_t idx) {
  if (idx < 0) return "?";
  std::vector<DimExpr> st;
  for (const DimOp& op : exe.dims[idx].ops) {
    if (op.kind == DimOp::kConst) {
      st.push_back(DimExpr(op.value));
      continue;
    }
    if (op.kind == DimOp::kSymbol) {
      if (op.value < 0 || op.value >= static_cast<int64_t>(exe.symbols.size())) return "<bad>";
      st.push_back(DimExpr::Symbol(exe.symbols[op.value]));
      continue;
    }
    if (st.size() < 2) return "<bad>";
    DimExpr b = st.back();
    st.pop_back();
    DimExpr a = st.back();
    st.pop_back();
    switch (op.kind) {
      case DimOp::kAdd: st.push_back(a + b); break;
      case DimOp::kMul: st.push_back(a * b); break;
      case DimOp::kFloorDiv: st.push_back(DimExpr::FloorDiv(a, b)); break;
      case DimOp::kMod: st.push_back(DimExpr::Mod(a, b)); break;
      case DimOp::kMin: st.push_back(DimExpr::Min(a, b)); break;
      case DimOp::kMax: st.push_back(DimExpr::Max(a, b)); break;
      default: return "<bad>";
    }
  }
  return st.size() == 1 ? st[0].ToString() : "<bad>";
}

std::string TypeText(const Executable& exe, int32_t idx) {
  const TypeSpec& t = exe.types[idx];
  std::vector<std::string> dims;
  for (int32_t d : t.dims) {
    // A dim that binds a symbol prints as `=name`: it is taken from the computed shape.
    dims.push_back(d <= -2 ? absl::StrCat("=", exe.symbols[-2 - d]) : DimText(exe, d));
  }
  return absl::StrCat(DTypeName(t.dtype), "[", absl::StrJoin(dims, ", "), "]");
}

}  // namespace

absl::string_view OpcodeName(Opcode op) {
  switch (op) {
#define HETPASS_VM_OPCODE_NAME(e, name) \
  case Opcode::e:                       \
    return name;
    HETPASS_VM_OPCODES(HETPASS_VM_OPCODE_NAME)
#undef HETPASS_VM_OPCODE_NAME
  }
  return "<bad opcode>";
}

absl::StatusOr<int64_t> EvalDimSlow(const DimProgram& program, absl::Span<const int64_t> symbols) {
  int64_t stack[32];
  int sp = 0;
  for (const DimOp& op : program.ops) {
    switch (op.kind) {
      case DimOp::kConst: stack[sp++] = op.value; continue;
      case DimOp::kSymbol: stack[sp++] = symbols[op.value]; continue;
      default: break;
    }
    const int64_t b = stack[--sp];
    int64_t& a = stack[sp - 1];
    switch (op.kind) {
      case DimOp::kAdd: a += b; break;
      case DimOp::kMul: a *= b; break;
      case DimOp::kFloorDiv:
      case DimOp::kMod: {
        if (b == 0) return absl::InvalidArgumentError("division by zero in a shape expression");
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        a = op.kind == DimOp::kFloorDiv ? q : a - q * b;
        break;
      }
      case DimOp::kMin: a = std::min(a, b); break;
      case DimOp::kMax: a = std::max(a, b); break;
      default: break;
    }
  }
  return stack[0];
}

int Executable::FindFunction(absl::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int64_t Executable::InstructionCount(absl::string_view function) const {
  int64_t n = 0;
  for (const VmFunction& f : functions) {
    if (function.empty() || f.name == function) n += static_cast<int64_t>(f.code.size());
  }
  return n;
}

std::string Executable::ToListing() const {
  std::string out;
  for (const VmFunction& f : functions) {
    absl::StrAppend(&out, f.name, ": ", f.num_params, " params, ", f.num_registers, " registers, ",
                    f.code.size(), " instructions\n");
    auto regs = [&](int32_t off, int32_t n) {
      std::vector<std::string> r;
      for (int32_t i = 0; i < n; ++i) r.push_back(absl::StrCat("$", f.operands[off + i]));
      return absl::StrJoin(r, ", ");
    };
    for (size_t pc = 0; pc < f.code.size(); ++pc) {
      const Instruction& in = f.code[pc];
      std::string ops;
      const std::string dev = in.device == DeviceKind::kUnset ? "" : absl::StrCat(" @", DeviceName(in.device));
      switch (in.op) {
        case Opcode::kArg: ops = absl::StrCat("$", in.dst, ", param ", in.a); break;
        case Opcode::kConst: ops = absl::StrCat("$", in.dst, ", c", in.a, dev); break;
        case Opcode::kAllocStorage:
          ops = absl::StrCat("$", in.dst, ", ", DimText(*this, in.a), " bytes, align ", in.b, in.c != 0 ? ", pooled" : "", dev);
          break;
        case Opcode::kAllocTensor:
          ops = absl::StrCat("$", in.dst, ", $", in.a, ", offset ", in.c, ", ", TypeText(*this, in.b));
          break;
        case Opcode::kAllocTensorDyn:
          ops = absl::StrCat("$", in.dst, ", $", in.a, ", ", TypeText(*this, in.b), dev);
          break;
        case Opcode::kInvokeKernel:
          ops = absl::StrCat("k", in.a, " @", kernels[in.a].primitive, "(", regs(in.list, in.count), ")", dev);
          break;
        case Opcode::kShapeFunc:
          ops = absl::StrCat(regs(in.list + in.count, in.count2), " = sf", in.a, " @",
                             shape_funcs[in.a].primitive, "(", regs(in.list, in.count), ")");
          break;
        case Opcode::kDeviceCopy:
          ops = absl::StrCat("$", in.dst, ", $", in.a, " ->", dev,
                             in.b == kCopyRuntimeSized ? ", run-time size" : "");
          break;
        case Opcode::kShapeOf: ops = absl::StrCat("$", in.dst, ", $", in.a); break;
        case Opcode::kCall:
          ops = absl::StrCat(regs(in.list + in.count, in.count2), " = ", functions[in.a].name, "(",
                             regs(in.list, in.count), ")");
          break;
        case Opcode::kTuple: ops = absl::StrCat("$", in.dst, ", (", regs(in.list, in.count), ")"); break;
        case Opcode::kGetItem: ops = absl::StrCat("$", in.dst, ", $", in.a, "[", in.b, "]"); break;
        case Opcode::kBuiltin:
          ops = absl::StrCat("$", in.dst, ", ", BuiltinName(static_cast<Builtin>(in.a)), "(",
                             regs(in.list, in.count), ")");
          break;
        case Opcode::kMove: ops = absl::StrCat("$", in.dst, ", $", in.a); break;
        case Opcode::kIf:
          ops = absl::StrCat(regs(in.list + in.count + in.dst, in.count2), " = $", in.c, " ? ",
                             functions[in.a].name, " : ", functions[in.b].name);
          break;
        case Opcode::kLoop:
          ops = absl::StrCat(regs(in.list + in.count, in.count2), " = ", functions[in.a].name, "(",
                             regs(in.list, in.count), ")");
          break;
        case Opcode::kRet: ops = regs(in.list, in.count); break;
        case Opcode::kKill: ops = regs(in.list, in.count); break;
        case Opcode::kAssume: ops = absl::StrCat("a", in.a, " ", assumptions[in.a].condition); break;
      }
      absl::StrAppend(&out, absl::StrFormat("  %3d  %-16s %-56s ; %s\n", pc, OpcodeName(in.op), ops,
                                            pc < f.comments.size() ? f.comments[pc] : ""));
    }
  }
  absl::StrAppend(&out, "constants: ", constants.size(), "\n");
  for (size_t i = 0; i < constants.size(); ++i) {
    absl::StrAppend(&out, "  c", i, " ", constants[i].value.type().ToString(), " @",
                    DeviceName(constants[i].device), "\n");
  }
  if (!assumptions.empty()) absl::StrAppend(&out, "assumptions: ", assumptions.size(), "\n");
  for (size_t i = 0; i < assumptions.size(); ++i) {
    absl::StrAppend(&out, "  a", i, " ", assumptions[i].condition, " (", assumptions[i].reason, ")\n");
  }
  absl::StrAppend(&out, "kernel sites: ", kernels.size(), ", shape functions: ", shape_funcs.size(),
                  ", symbols: [", absl::StrJoin(symbols, ", "), "]\n");
  return out;
}

absl::Status Executable::Verify() const {
  for (size_t i = 0; i < dims.size(); ++i) {
    int depth = 0;
    for (const DimOp& op : dims[i].ops) {
      if (op.kind > DimOp::kMax) return Corrupt(absl::StrCat("dim program ", i, ": bad op"));
      if (op.kind == DimOp::kSymbol &&
          (op.value < 0 || op.value >= static_cast<int64_t>(symbols.size()))) {
        return Corrupt(absl::StrCat("dim program ", i, ": symbol slot ", op.value));
      }
      depth += (op.kind == DimOp::kConst || op.kind == DimOp::kSymbol) ? 1 : -1;
      if (depth < 1 || depth > 32) return Corrupt(absl::StrCat("dim program ", i, ": stack"));
    }
    if (depth != 1) return Corrupt(absl::StrCat("dim program ", i, ": leaves ", depth, " values"));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    for (int32_t d : types[i].dims) {
      // d <= -2 binds symbol slot -2 - d (alloc_tensor_dyn only; kAllocTensor wants d >= 0).
      if (d < -1 - static_cast<int32_t>(symbols.size()) || d >= static_cast<int32_t>(dims.size())) {
        return Corrupt(absl::StrCat("type ", i));
      }
    }
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    for (int32_t c : kernels[i].constants) {
      if (c < -1 || c >= static_cast<int32_t>(constants.size())) {
        return Corrupt(absl::StrCat("kernel site ", i, ": constant ", c));
      }
    }
  }
  for (size_t i = 0; i < assumptions.size(); ++i) {
    const AssumptionCheck& a = assumptions[i];
    bool ok = a.kind <= Assumption::Kind::kBroadcast && a.lhs >= 0 &&
              a.lhs < static_cast<int32_t>(dims.size()) && a.rhs >= 0 &&
              a.rhs < static_cast<int32_t>(dims.size());
    for (int32_t s : a.symbols) ok = ok && s >= 0 && s < static_cast<int32_t>(symbols.size());
    if (!ok) return Corrupt(absl::StrCat("assumption ", i));
  }
  const int32_t nf = static_cast<int32_t>(functions.size());
  for (const VmFunction& f : functions) {
    const std::string where = absl::StrCat("function ", f.name);
    if (f.num_params < 0 || f.num_params > f.num_registers) return Corrupt(where + ": params");
    if (!f.params.empty() && static_cast<int32_t>(f.params.size()) != f.num_params) {
      return Corrupt(where + ": parameter specs");
    }
    for (const ArgSpec& a : f.params) {
      for (const ArgDim& d : a.dims) {
        if ((d.kind == ArgDim::kBind && (d.value < 0 || d.value >= static_cast<int64_t>(symbols.size()))) ||
            (d.kind == ArgDim::kCheck && (d.value < 0 || d.value >= static_cast<int64_t>(dims.size()))) ||
            d.kind > ArgDim::kCheck) {
          return Corrupt(where + ": parameter dim");
        }
      }
    }
    if (f.code.empty() || f.code.back().op != Opcode::kRet) return Corrupt(where + ": no final ret");
    const int32_t pool = static_cast<int32_t>(f.operands.size());
    auto reg = [&](int32_t r) { return r >= 0 && r < f.num_registers; };
    for (int32_t r : f.operands) {
      if (!reg(r)) return Corrupt(absl::StrCat(where, ": operand register $", r));
    }
    for (size_t pc = 0; pc < f.code.size(); ++pc) {
      const Instruction& in = f.code[pc];
      const std::string at = absl::StrCat(where, " pc ", pc, " (", OpcodeName(in.op), ")");
      if (static_cast<int>(in.op) >= kNumOpcodes) return Corrupt(absl::StrCat(where, " pc ", pc, ": opcode"));
      if (static_cast<int>(in.device) >= kNumDeviceKinds) return Corrupt(at + ": device");
      if (in.list < 0 || in.count < 0 || in.count2 < 0 ||
          static_cast<int64_t>(in.list) + in.count + in.count2 + (in.op == Opcode::kIf ? in.dst : 0) > pool) {
        return Corrupt(at + ": operand list");
      }
      bool ok = true;
      switch (in.op) {
        case Opcode::kArg: ok = reg(in.dst) && in.a >= 0 && in.a < static_cast<int32_t>(f.params.size()); break;
        case Opcode::kConst: ok = reg(in.dst) && in.a >= 0 && in.a < static_cast<int32_t>(constants.size()); break;
        case Opcode::kAllocStorage: ok = reg(in.dst) && in.a >= 0 && in.a < static_cast<int32_t>(dims.size()) && in.b > 0; break;
        case Opcode::kAllocTensor:
          ok = reg(in.dst) && reg(in.a) && in.b >= 0 && in.b < static_cast<int32_t>(types.size()) && in.c >= 0;
          if (ok) {
            for (int32_t d : types[in.b].dims) ok = ok && d >= 0;
          }
          break;
        case Opcode::kAllocTensorDyn: ok = reg(in.dst) && reg(in.a) && in.b >= 0 && in.b < static_cast<int32_t>(types.size()); break;
        case Opcode::kInvokeKernel: ok = in.a >= 0 && in.a < static_cast<int32_t>(kernels.size()); break;
        case Opcode::kShapeFunc:
          ok = in.a >= 0 && in.a < static_cast<int32_t>(shape_funcs.size()) &&
               static_cast<int32_t>(shape_funcs[in.a].mask.size()) == in.count;
          break;
        case Opcode::kDeviceCopy:
          ok = reg(in.dst) && reg(in.a) && (in.b == 0 || in.b == kCopyRuntimeSized);
          break;
        case Opcode::kShapeOf:
        case Opcode::kMove: ok = reg(in.dst) && reg(in.a); break;
        case Opcode::kGetItem: ok = reg(in.dst) && reg(in.a) && in.b >= 0; break;
        case Opcode::kTuple: ok = reg(in.dst); break;
        case Opcode::kBuiltin:
          ok = reg(in.dst) && in.a >= 0 && in.a <= static_cast<int32_t>(Builtin::kOptGet) &&
               BuiltinAcceptsOperandCount(static_cast<Builtin>(in.a), in.count);
          break;
        case Opcode::kCall: ok = in.a >= 0 && in.a < nf; break;
        case Opcode::kIf:
          ok = in.a >= 0 && in.a < nf && in.b >= 0 && in.b < nf && reg(in.c) && in.dst >= 0;
          break;
        case Opcode::kLoop: {
          const int64_t scans = static_cast<int64_t>(in.count2) - in.b;
          ok = in.a >= 0 && in.a < nf && in.b >= 0 && in.count >= 2 + in.b && scans >= 0 &&
               in.c >= 0 && in.c + 2 * scans <= pool;
          for (int64_t i = 0; ok && i < scans; ++i) {
            const int32_t t = f.operands[in.c + i];
            const int32_t flag = f.operands[in.c + scans + i];
            ok = t >= 0 && t < static_cast<int32_t>(types.size()) &&
                 (flag == 0 || flag == kCopyRuntimeSized);
          }
          break;
        }
        case Opcode::kRet: break;
        case Opcode::kKill: break;
        case Opcode::kAssume: ok = in.a >= 0 && in.a < static_cast<int32_t>(assumptions.size()); break;
      }
      if (!ok) return Corrupt(at + ": operand out of range");
    }
  }
  return absl::OkStatus();
}

std::string Executable::Serialize() const {
  Writer w;
  w.U64(symbols.size());
  for (const auto& s : symbols) w.Str(s);
  w.U64(dims.size());
  for (const DimProgram& p : dims) {
    w.U64(p.ops.size());
    for (const DimOp& op : p.ops) {
      w.U8(op.kind);
      w.I64(op.value);
    }
  }
  w.U64(types.size());
  for (const TypeSpec& t : types) {
    w.U8(static_cast<uint8_t>(t.dtype));
    w.U64(t.dims.size());
    for (int32_t d : t.dims) w.I32(d);
  }
  w.U64(constants.size());
  for (const ConstantEntry& c : constants) {
    w.U8(static_cast<uint8_t>(c.device));
    PutTensor(w, c.value);
  }
  w.U64(kernels.size());
  for (const KernelSite& k : kernels) {
    w.Str(k.primitive);
    w.U8(static_cast<uint8_t>(k.device));
    w.U64(k.constants.size());
    for (int32_t c : k.constants) w.I32(c);
  }
  w.U64(shape_funcs.size());
  for (const ShapeFuncSite& s : shape_funcs) {
    w.Str(s.primitive);
    w.U64(s.mask.size());
    for (InputDep m : s.mask) w.U8(static_cast<uint8_t>(m));
  }
  w.U64(assumptions.size());
  for (const AssumptionCheck& a : assumptions) {
    w.U8(static_cast<uint8_t>(a.kind));
    w.I32(a.lhs);
    w.I32(a.rhs);
    w.Str(a.condition);
    w.Str(a.reason);
    w.U64(a.symbols.size());
    for (int32_t s : a.symbols) w.I32(s);
  }
  w.U64(functions.size());
  for (const VmFunction& f : functions) {
    w.Str(f.name);
    w.I32(f.num_params);
    w.I32(f.num_registers);
    w.U64(f.params.size());
    for (const ArgSpec& a : f.params) {
      w.Str(a.name);
      w.U8(static_cast<uint8_t>(a.dtype));
      w.U8(static_cast<uint8_t>(a.device));
      w.Str(a.type_text);
      w.U8(static_cast<uint8_t>(a.container | (a.any_element ? 0x80 : 0)));
      w.U64(a.dims.size());
      for (const ArgDim& d : a.dims) {
        w.U8(d.kind);
        w.I64(d.value);
      }
    }
    w.U64(f.code.size());
    for (const Instruction& in : f.code) {
      w.U8(static_cast<uint8_t>(in.op));
      w.U8(static_cast<uint8_t>(in.device));
      for (int32_t v : {in.dst, in.a, in.b, in.c, in.list, in.count, in.count2}) w.I32(v);
    }
    w.U64(f.operands.size());
    for (int32_t r : f.operands) w.I32(r);
    w.U64(f.comments.size());
    for (const auto& c : f.comments) w.Str(c);
  }
  w.Str(primitives);

  Writer file;
  file.Raw(kMagic, sizeof(kMagic));
  file.U32(kFormatVersion);
  file.U64(w.out().size());
  file.U64(Fnv1a(w.out()));
  file.out() += w.out();
  return std::move(file.out());
}

absl::StatusOr<Executable> Executable::Deserialize(absl::string_view bytes) {
  if (bytes.size() < sizeof(kMagic) + 4 + 16 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("not a hetpass VM executable (bad magic or too short)");
  }
  Reader header(bytes.substr(sizeof(kMagic)));
  ASSIGN_OR_RETURN(uint32_t version, header.Get<uint32_t>("version"));
  if (version != kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat("executable format version ", version,
                                                   " is not supported (expected ", kFormatVersion, ")"));
  }
  ASSIGN_OR_RETURN(uint64_t size, header.Get<uint64_t>("payload size"));
  ASSIGN_OR_RETURN(uint64_t hash, header.Get<uint64_t>("checksum"));
  absl::string_view payload = bytes.substr(sizeof(kMagic) + 4 + 16);
  if (payload.size() != size) {
    return absl::DataLossError(absl::StrCat("executable truncated: payload has ", payload.size(),
                                            " bytes, header says ", size));
  }
  if (Fnv1a(payload) != hash) return absl::DataLossError("executable corrupt: checksum mismatch");

  Reader r(payload);
  Executable exe;
  ASSIGN_OR_RETURN(size_t ns, r.Count("symbols", 8));
  for (size_t i = 0; i < ns; ++i) {
    ASSIGN_OR_RETURN(std::string s, r.Str("symbol"));
    exe.symbols.push_back(std::move(s));
  }
  ASSIGN_OR_RETURN(size_t nd, r.Count("dim programs", 8));
  for (size_t i = 0; i < nd; ++i) {
    DimProgram p;
    ASSIGN_OR_RETURN(size_t n, r.Count("dim ops", 9));
    for (size_t j = 0; j < n; ++j) {
      ASSIGN_OR_RETURN(uint8_t k, r.Get<uint8_t>("dim op"));
      ASSIGN_OR_RETURN(int64_t v, r.Get<int64_t>("dim op value"));
      if (k > DimOp::kMax) return Corrupt("dim op kind");
      p.ops.push_back({static_cast<DimOp::Kind>(k), v});
    }
    exe.dims.push_back(std::move(p));
  }
  ASSIGN_OR_RETURN(size_t nt, r.Count("types", 9));
  for (size_t i = 0; i < nt; ++i) {
    TypeSpec t;
    ASSIGN_OR_RETURN(t.dtype, GetDType(r, "type dtype"));
    ASSIGN_OR_RETURN(size_t n, r.Count("type dims", 4));
    for (size_t j = 0; j < n; ++j) {
      ASSIGN_OR_RETURN(int32_t d, r.Get<int32_t>("type dim"));
      t.dims.push_back(d);
    }
    exe.types.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(size_t nc, r.Count("constants", 18));
  for (size_t i = 0; i < nc; ++i) {
    ConstantEntry c;
    ASSIGN_OR_RETURN(c.device, GetDevice(r, "constant device"));
    ASSIGN_OR_RETURN(c.value, GetTensor(r));
    exe.constants.push_back(std::move(c));
  }
  ASSIGN_OR_RETURN(size_t nk, r.Count("kernel sites", 17));
  for (size_t i = 0; i < nk; ++i) {
    KernelSite k;
    ASSIGN_OR_RETURN(k.primitive, r.Str("kernel primitive"));
    ASSIGN_OR_RETURN(k.device, GetDevice(r, "kernel device"));
    ASSIGN_OR_RETURN(size_t n, r.Count("kernel constants", 4));
    for (size_t j = 0; j < n; ++j) {
      ASSIGN_OR_RETURN(int32_t c, r.Get<int32_t>("kernel constant"));
      k.constants.push_back(c);
    }
    exe.kernels.push_back(std::move(k));
  }
  ASSIGN_OR_RETURN(size_t nsf, r.Count("shape functions", 16));
  for (size_t i = 0; i < nsf; ++i) {
    ShapeFuncSite s;
    ASSIGN_OR_RETURN(s.primitive, r.Str("shape function primitive"));
    ASSIGN_OR_RETURN(size_t n, r.Count("mask", 1));
    for (size_t j = 0; j < n; ++j) {
      // A mask byte is InputDep's integer encoding; the one range check is InputDepFromInt
      // (Verify need not look again: a loaded mask is typed from here on).
      ASSIGN_OR_RETURN(uint8_t m, r.Get<uint8_t>("mask entry"));
      absl::StatusOr<InputDep> dep = InputDepFromInt(m);
      if (!dep.ok()) {
        return Corrupt(absl::StrCat("shape function ", i, " (@", s.primitive, "): ",
                                    dep.status().message()));
      }
      s.mask.push_back(*dep);
    }
    exe.shape_funcs.push_back(std::move(s));
  }
  ASSIGN_OR_RETURN(size_t na, r.Count("assumptions", 25));
  for (size_t i = 0; i < na; ++i) {
    AssumptionCheck a;
    ASSIGN_OR_RETURN(uint8_t kind, r.Get<uint8_t>("assumption kind"));
    if (kind > static_cast<uint8_t>(Assumption::Kind::kBroadcast)) return Corrupt("assumption kind");
    a.kind = static_cast<Assumption::Kind>(kind);
    ASSIGN_OR_RETURN(a.lhs, r.Get<int32_t>("assumption lhs"));
    ASSIGN_OR_RETURN(a.rhs, r.Get<int32_t>("assumption rhs"));
    ASSIGN_OR_RETURN(a.condition, r.Str("assumption condition"));
    ASSIGN_OR_RETURN(a.reason, r.Str("assumption reason"));
    ASSIGN_OR_RETURN(size_t ns, r.Count("assumption symbols", 4));
    for (size_t j = 0; j < ns; ++j) {
      ASSIGN_OR_RETURN(int32_t s, r.Get<int32_t>("assumption symbol"));
      a.symbols.push_back(s);
    }
    exe.assumptions.push_back(std::move(a));
  }
  ASSIGN_OR_RETURN(size_t nf, r.Count("functions", 40));
  for (size_t i = 0; i < nf; ++i) {
    VmFunction f;
    ASSIGN_OR_RETURN(f.name, r.Str("function name"));
    ASSIGN_OR_RETURN(f.num_params, r.Get<int32_t>("num_params"));
    ASSIGN_OR_RETURN(f.num_registers, r.Get<int32_t>("num_registers"));
    if (f.num_registers < 0 || f.num_registers > (1 << 24)) return Corrupt("register count");
    ASSIGN_OR_RETURN(size_t np, r.Count("parameter specs", 27));
    for (size_t j = 0; j < np; ++j) {
      ArgSpec a;
      ASSIGN_OR_RETURN(a.name, r.Str("parameter name"));
      ASSIGN_OR_RETURN(a.dtype, GetDType(r, "parameter dtype"));
      ASSIGN_OR_RETURN(a.device, GetDevice(r, "parameter device"));
      ASSIGN_OR_RETURN(a.type_text, r.Str("parameter type"));
      ASSIGN_OR_RETURN(uint8_t container, r.Get<uint8_t>("parameter container"));
      a.any_element = (container & 0x80) != 0;
      container &= 0x7f;
      if (container > ArgSpec::kOptionalSequence) return Corrupt("parameter container");
      a.container = static_cast<ArgSpec::Container>(container);
      ASSIGN_OR_RETURN(size_t n, r.Count("parameter dims", 9));
      for (size_t k = 0; k < n; ++k) {
        ASSIGN_OR_RETURN(uint8_t kind, r.Get<uint8_t>("parameter dim kind"));
        ASSIGN_OR_RETURN(int64_t v, r.Get<int64_t>("parameter dim value"));
        if (kind > ArgDim::kCheck) return Corrupt("parameter dim kind");
        a.dims.push_back({static_cast<ArgDim::Kind>(kind), v});
      }
      f.params.push_back(std::move(a));
    }
    ASSIGN_OR_RETURN(size_t ni, r.Count("instructions", 30));
    for (size_t j = 0; j < ni; ++j) {
      Instruction in;
      ASSIGN_OR_RETURN(uint8_t op, r.Get<uint8_t>("opcode"));
      if (op >= kNumOpcodes) return Corrupt(absl::StrCat("opcode ", op));
      in.op = static_cast<Opcode>(op);
      ASSIGN_OR_RETURN(in.device, GetDevice(r, "instruction device"));
      for (int32_t* v : {&in.dst, &in.a, &in.b, &in.c, &in.list, &in.count, &in.count2}) {
        ASSIGN_OR_RETURN(*v, r.Get<int32_t>("instruction operand"));
      }
      f.code.push_back(in);
    }
    ASSIGN_OR_RETURN(size_t no, r.Count("operand pool", 4));
    for (size_t j = 0; j < no; ++j) {
      ASSIGN_OR_RETURN(int32_t v, r.Get<int32_t>("operand"));
      f.operands.push_back(v);
    }
    ASSIGN_OR_RETURN(size_t ncm, r.Count("comments", 8));
    for (size_t j = 0; j < ncm; ++j) {
      ASSIGN_OR_RETURN(std::string c, r.Str("comment"));
      f.comments.push_back(std::move(c));
    }
    exe.functions.push_back(std::move(f));
  }
  ASSIGN_OR_RETURN(exe.primitives, r.Str("primitive functions"));
  if (!r.done()) return Corrupt(absl::StrCat("trailing bytes after offset ", r.pos()));
  RETURN_IF_ERROR(exe.Verify());
  return exe;
}

absl::Status Executable::SaveToFile(const std::string& path) const {
  for (size_t c = 0; c < constants.size(); ++c) {
    if (constants[c].value.released()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot save ", path, ": constant ", c, " (", constants[c].value.type().ToString(),
          ") was released after its kernels prepacked it (docs/runtime.md, \"Released "
          "constants\"); save the executable before loading it"));
    }
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path, " for writing"));
  const std::string bytes = Serialize();
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return absl::DataLossError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<Executable> Executable::LoadFromFile(const std::string& path) {
  ReadFileOptions options;
  options.what = "a saved executable (.hvm)";
  ASSIGN_OR_RETURN(const std::string bytes, ReadRegularFile(path, options));
  auto exe = Deserialize(bytes);
  if (!exe.ok()) return absl::Status(exe.status().code(), absl::StrCat(path, ": ", exe.status().message()));
  return exe;
}

}  // namespace hetpass::vm
