// The VM executable: register bytecode for every step manifest-alloc makes explicit, plus the
// tables the instructions index (constants, kernels, shape functions, shape expressions).
//
// Instructions (one per IR binding; `$r` registers, `dim` shape-expression programs):
//   arg            $dst, param              check the argument (dtype, rank, device, static and
//                                           repeated-symbol dims) and bind its symbols
//   const          $dst, constant           a constant, placed on its device at load
//   alloc_storage  $dst, dim, align, dev    pooled device memory of a symbolic byte size (c = 1:
//                                           released at a kill, so not kept for the next call)
//   alloc_tensor   $dst, $storage, offset, type     a view of storage (dims: dim programs)
//   alloc_tensor_dyn $dst, $dims, type, dev a tensor whose `?` dims come from a host value
//   invoke_kernel  site, $args...           launch a compiled kernel (destination passing)
//   shape_func     site, $args... -> $dsts  run a host shape function (mask decides what it reads)
//   device_copy    $dst, $src, dev          a transfer (counted by the device)
//   shape_of       $dst, $src               tensor metadata as an i64 host tensor
//   call           func, $args... -> $dsts  call another VM function (plain invoke)
//   tuple / get_item / move
//   if             $cond, then, else, $captures... -> $dsts   regions are VM functions
//   loop           body, $max, $cond, $init..., $captures... -> $dsts (ONNX Loop semantics);
//                  `c` is the operand-pool offset of one TypeSpec index per scan output (the
//                  stacked result's type: its dtype and element dims when the loop runs 0 times)
//   builtin        $dst, which, $args...    a sequence/optional builtin (ir/builtins.def, `a` its
//                                           number): moves tensor references, copies no data
//   ret            $values...
//   kill           $values...               drop the registers (memory.kill): storage returns
//                                           to its pool when its last reference goes
// Symbols (batch `n`, ...) are bound once per call by `arg` into integer slots; every size is a
// tiny postfix program over those slots, evaluated inside the instruction that needs it, so a
// dynamic-shape program has the same instructions as its static build.
//
// The executable is plain data: it prints as a listing, serialises to bytes and back
// (magic, version, checksum; every read bounds-checked), and Verify() checks every index once at
// load so the interpreter does not have to.
#ifndef HETPASS_VM_EXECUTABLE_H_
#define HETPASS_VM_EXECUTABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/ir/ir.h"
#include "passes/ir/tensor.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::vm {

#define HETPASS_VM_OPCODES(X) \
  X(kArg, "arg")                \
  X(kConst, "const")            \
  X(kAllocStorage, "alloc_storage") \
  X(kAllocTensor, "alloc_tensor") \
  X(kAllocTensorDyn, "alloc_tensor_dyn") \
  X(kInvokeKernel, "invoke_kernel") \
  X(kShapeFunc, "shape_func")   \
  X(kDeviceCopy, "device_copy") \
  X(kShapeOf, "shape_of")       \
  X(kCall, "call")              \
  X(kTuple, "tuple")            \
  X(kGetItem, "get_item")       \
  X(kMove, "move")              \
  X(kIf, "if")                  \
  X(kLoop, "loop")              \
  X(kRet, "ret")                \
  X(kKill, "kill")              \
  X(kBuiltin, "builtin")        \
  X(kAssume, "assume")

enum class Opcode : uint8_t {
#define HETPASS_VM_OPCODE_ENUM(e, name) e,
  HETPASS_VM_OPCODES(HETPASS_VM_OPCODE_ENUM)
#undef HETPASS_VM_OPCODE_ENUM
};
inline constexpr int kNumOpcodes = 19;
absl::string_view OpcodeName(Opcode op);

// Fixed-size instruction; variable operand lists live in the function's operand pool.
struct Instruction {
  Opcode op = Opcode::kRet;
  DeviceKind device = DeviceKind::kUnset;
  int32_t dst = -1;   // primary destination register (-1: none)
  int32_t a = 0;      // opcode-specific (see Executable::ToListing)
  int32_t b = 0;
  int32_t c = 0;
  int32_t list = 0;   // operand-pool offset of the register list
  int32_t count = 0;  // its length
  int32_t count2 = 0; // a second list right after the first (destinations), its length
};
// kDeviceCopy's `b`, and kLoop's per-scan-output flags (after its scan types in the operand
// pool): the copy's size is known only at run time (a `?` dim; for a loop's stacking, a part
// sized by symbols bound inside the body), so the copy ledger knows its count but not its
// bytes; the VM counts such copies apart (RunRecord::runtime_sized). 0: the size is stated.
inline constexpr int32_t kCopyRuntimeSized = 1;

// Postfix integer program over symbol slots: sizes and dims.
struct DimOp {
  enum Kind : uint8_t { kConst, kSymbol, kAdd, kMul, kFloorDiv, kMod, kMin, kMax };
  Kind kind = kConst;
  int64_t value = 0;  // constant, or symbol slot
};
struct DimProgram {
  std::vector<DimOp> ops;
};

// A tensor type with run-time dims: one entry per dim, a DimProgram index or -1 (unknown `?`).
struct TypeSpec {
  DType dtype = DType::kF32;
  // Per dim: a DimProgram index (>= 0), -1 unknown (alloc_tensor_dyn takes it from the computed
  // shape), or -2 - slot: alloc_tensor_dyn takes it from the computed shape and binds symbol
  // `slot` to it (a data-dependent dim that later sizes are written over).
  std::vector<int32_t> dims;
};

// How `arg` treats one dim of a parameter.
struct ArgDim {
  enum Kind : uint8_t { kAny, kStatic, kBind, kCheck };
  Kind kind = kAny;
  int64_t value = 0;  // kStatic: the size; kBind: the symbol slot; kCheck: a DimProgram index
};
struct ArgSpec {
  // What wraps the tensor the dtype and dims describe: a sequence (each element is checked;
  // element dims bind no symbols), an optional, or an optional sequence.
  enum Container : uint8_t { kTensor, kSequence, kOptional, kOptionalSequence };
  Container container = kTensor;
  // A sequence of `seq<?>` (element type unknown, as ONNX sequences without an element shape):
  // elements of any dtype and rank; `dtype` and `dims` are not checked.
  bool any_element = false;
  std::string name;
  DType dtype = DType::kF32;
  DeviceKind device = DeviceKind::kCpu;
  std::vector<ArgDim> dims;
  std::string type_text;  // as declared, for error messages: "f32[n, 32, 32] @sim"
};

struct ConstantEntry {
  Tensor value;
  DeviceKind device = DeviceKind::kCpu;
};

// One call site of a compiled kernel (instances are per site so weights can be prepacked).
struct KernelSite {
  std::string primitive;             // function in Executable::primitives
  DeviceKind device = DeviceKind::kCpu;
  std::vector<int32_t> constants;    // per kernel parameter: constant index, or -1
};

// A function's assumption (passes/ir/assumption.h), checked by kAssume where its symbols are
// bound: `lhs kind rhs` over two dim programs.
struct AssumptionCheck {
  Assumption::Kind kind = Assumption::Kind::kEq;
  int32_t lhs = 0;  // dim program
  int32_t rhs = 0;  // dim program
  std::string condition;              // "dyn1 == batch"
  std::string reason;                 // the op or declaration that needed it
  std::vector<int32_t> symbols;       // its symbols' slots, to show their values on failure
};

struct ShapeFuncSite {
  std::string primitive;
  std::vector<InputDep> mask;
};

struct VmFunction {
  std::string name;
  int32_t num_params = 0;  // parameters arrive in registers 0..num_params-1
  int32_t num_registers = 0;
  std::vector<ArgSpec> params;
  std::vector<Instruction> code;
  std::vector<int32_t> operands;
  std::vector<std::string> comments;  // one per instruction (the IR binding), for listings
};

struct Executable {
  std::vector<std::string> symbols;  // slot -> name
  std::vector<DimProgram> dims;
  std::vector<TypeSpec> types;
  std::vector<ConstantEntry> constants;
  std::vector<KernelSite> kernels;
  std::vector<ShapeFuncSite> shape_funcs;
  std::vector<AssumptionCheck> assumptions;
  std::vector<VmFunction> functions;  // entry points are found by name
  std::string primitives;             // text IR of every primitive function the sites name

  int FindFunction(absl::string_view name) const;
  // Number of instructions of `function` (all functions if empty).
  int64_t InstructionCount(absl::string_view function = "") const;
  // A listing: one line per instruction (opcode, operands, comment), then the tables.
  std::string ToListing() const;
  // Every index in range, every register below num_registers, lists inside the pool.
  absl::Status Verify() const;

  // Requires every constant's bytes (none released by a VM: SaveToFile says so as an error).
  std::string Serialize() const;
  // Errors (never crashes) on a wrong magic, version, checksum, truncation or bad index.
  static absl::StatusOr<Executable> Deserialize(absl::string_view bytes);
  absl::Status SaveToFile(const std::string& path) const;
  static absl::StatusOr<Executable> LoadFromFile(const std::string& path);
};

// Evaluates a DimProgram; errors on division by zero.
absl::StatusOr<int64_t> EvalDimSlow(const DimProgram& program, absl::Span<const int64_t> symbols);
inline absl::StatusOr<int64_t> EvalDim(const DimProgram& program, absl::Span<const int64_t> symbols) {
  // Most dims are a constant or a bare symbol: no stack machine for those.
  const size_t n = program.ops.size();
  const DimOp* ops = program.ops.data();
  auto leaf = [&](const DimOp& op) { return op.kind == DimOp::kConst ? op.value : symbols[op.value]; };
  if (n == 1) return leaf(ops[0]);
  if (n == 3 && ops[2].kind == DimOp::kMul && ops[0].kind <= DimOp::kSymbol &&
      ops[1].kind <= DimOp::kSymbol) {
    return leaf(ops[0]) * leaf(ops[1]);  // c*n, n*m
  }
  return EvalDimSlow(program, symbols);
}

// Lowers a module after manifest-alloc (every allocation explicit, kernels destination-passing)
// to bytecode. Entry points: every non-primitive function. Errors name the binding.
absl::StatusOr<Executable> CompileModule(const Module& module);

}  // namespace hetpass::vm

#endif  // HETPASS_VM_EXECUTABLE_H_
