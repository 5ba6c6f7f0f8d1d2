// CPU JIT for fused elementwise / broadcast groups, and groups with injective ops (see
// jit_elementwise.h).
//
// A primitive function of elementwise and broadcasting ops computes, at every index of its
// output, an expression of the parameters' elements at the broadcast-projected indices. So the
// whole body becomes ONE loop nest over the output that loads each parameter element, evaluates
// the expression in registers and stores the result: no intermediate buffer, one pass over
// memory. Shapes may be symbolic; everything that depends on them is decided at run time.
//
// Definitions
//   R        the output rank; the generated nest has depth max(R, 1) (depth is static: the
//            rank of a type is always known, only its dims may be symbolic).
//   pos(v)   for a body value v of rank r: the output dim each of v's dims runs along. The
//            result has pos = [0..R-1]; an operand u of a broadcasting op producing v is
//            right-aligned: pos(u)[j] = pos(v)[rank(v) - rank(u) + j]; the bias of
//            nn.bias_add runs along the data's `axis`: pos(bias) = [pos(v)[axis]].
//   access   (parameter, pos): one base pointer and one stride per output dim; the stride is 0
//            where the parameter's dim is 1 (broadcast) or absent. A parameter reached with two
//            different pos (a bias also added elsewhere) gives two accesses.
//   expr     (value, pos) pairs reached from (result, [0..R-1]): the expression DAG evaluated
//            in the innermost loop. Broadcasting commutes with elementwise ops, so computing an
//            intermediate at the projected index is exact (values reached with two different
//            pos are simply computed twice).
//
// Phase 1 (Analyze)  Check every binding against the lowering table below (op, operand and
//          result dtypes, ranks) and number the values. Unsupported -> Unimplemented naming the
//          op and dtype, so the compile engine falls back (IsJitElementwise runs phases 1-2).
// Phase 2 (Lower)    Build the expr DAG and the accesses. Each access is also classified
//          statically as contiguous or broadcast in the innermost non-unit output dim (from
//          the declared dims: f32[] or f32[n, 1] against f32[n, 512] is broadcast, the rest is
//          assumed contiguous).
// Phase 3 (Emit)     One LLVM module with two entry points (only `fast` when every dim is static:
//          the static classification is then exact)
//            i32 fast(ptr bases, ptr dims, ptr strides)     inner strides are the constants of
//                the static classification (1 or 0): the inner loop is a plain contiguous map
//                that the loop vectoriser turns into vector code; loads of broadcast (stride 0)
//                accesses are hoisted out of the inner loop;
//            i32 generic(...)                                every stride at run time; scalar.
//          bases[0] is the output, bases[1 + a] access a; dims and strides (in elements) are
//          per loop level, outermost first; strides[s * depth + level]. The result is a set of
//          error flags (bit 0: integer division by zero).
//          Aliasing: the output may be the same buffer as an input (an in-place epilogue), so
//          no data pointer is `noalias` (that would be undefined behaviour). Instead the inner
//          loop of `fast` carries llvm.loop.parallel_accesses: its iterations are independent,
//          which is true when the output and an input either do not overlap or are exactly the
//          same elements; Run checks that before every call (any other overlap is an error).
//          That lets the vectoriser work without runtime overlap checks.
//          The module is optimised at O3 with the host TargetMachine and added to the process
//          JIT (llvm_jit.h).
// Phase 4 (Run)      Per call, on the host: check dtypes and ranks of the arguments, run the
//          broadcast shape program (the same steps on concrete shapes: every operand pair must
//          broadcast, a bias must match its axis) and check that the output has exactly the
//          broadcast shape; check overlaps; compute each access's strides; collapse the output
//          dims (drop unit dims, merge adjacent dims whose strides are contiguous for every
//          access: f32[n, 512] + f32[n, 512] becomes one loop of n*512, + f32[512] stays 2-D);
//          pad to the nest depth with unit dims; call `fast` if the innermost strides match its
//          constants (any stride is fine for a unit innermost dim), else `generic`.
//
// Numerics follow the registry's reference kernels: IEEE arithmetic without fast-math;
// maximum/minimum/relu as the C++ comparisons they are defined by (NaN handling included);
// integer division truncates, reports division by zero through the flag, and INT_MIN / -1 wraps;
// casts from float to integer saturate (NaN -> 0) and truncate like Tensor::SetDouble; i64 ->
// f32 rounds through f64 as the reference does. sqrt is an LLVM intrinsic (an instruction); log,
// pow and the f64 exp are LLVM intrinsics that become libm calls, f64 tanh calls libm directly;
// those resolve from the host process. f32 exp, tanh and sigmoid are expanded into arithmetic
// (Cephes-style exp) so they vectorise: within 2 ulp of the reference over the whole range
// (tested by a sweep).
//
// Injective ops (transpose, reshape, slices, take, concatenate, ...) take a separate, scalar
// path: see "The injective path" below.
//
// Known gaps: f16/bf16, several results, reductions, dyn.squeeze/dyn.unsqueeze/tile/pad; the
// generic entry is not vectorised; log, pow and every f64 transcendental are scalar libm calls
// inside the vector loop (no vector math library); negative/abs of INT64_MIN wrap where the
// reference (which goes through double) saturates.
#include "compile_engine/jit_elementwise.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/llvm_jit.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

// ===== The lowering table ======================================================================
// The one place that maps registry ops to generated code. Which ops are candidates at all is
// the registry's answer (fusion pattern elementwise or broadcast); this table says which of them
// this backend can emit and with which operand dtypes.

// clang-format off
enum class JitOp : uint8_t {
  kRelu, kNegative, kAbs, kExp, kLog, kSqrt, kTanh, kSigmoid, kFloor, kCeil,
  kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum, kPower,
  kEqual, kLess, kGreater, kBiasAdd, kWhere, kCast,
  // Injective ops (only on the injective path, CompileJitInjective).
  kTranspose, kReshape, kDynReshape, kExpandDims, kSqueeze, kStridedSlice, kDynStridedSlice,
  kTake, kConcatenate, kBroadcastTo, kDynBroadcastTo,
};
// clang-format on

// Operand / result typing of a lowering.
enum class OpForm : uint8_t {
  kUnaryNumeric,   // T -> T, T numeric
  kUnaryFloat,     // T -> T, T f32 or f64
  kBinaryNumeric,  // (T, T) -> T, broadcasting
  kBinaryFloat,    // (T, T) -> T, T f32 or f64
  kCompare,        // (T, T) -> bool
  kBiasAdd,        // (T[..], T[k]) -> T[..], T numeric
  kWhere,          // (C, T, T) -> T
  kCast,           // S -> attribute dtype
  kInjective,      // data movement: the result's element at an index is an element of the data
                   // (or of one of the concatenated inputs) at an index computed from it
};

struct Lowering {
  absl::string_view op;
  JitOp code;
  OpForm form;
};

constexpr Lowering kLowerings[] = {
    {"nn.relu", JitOp::kRelu, OpForm::kUnaryNumeric},
    {"negative", JitOp::kNegative, OpForm::kUnaryNumeric},
    {"abs", JitOp::kAbs, OpForm::kUnaryNumeric},
    {"exp", JitOp::kExp, OpForm::kUnaryFloat},
    {"log", JitOp::kLog, OpForm::kUnaryFloat},
    {"sqrt", JitOp::kSqrt, OpForm::kUnaryFloat},
    {"floor", JitOp::kFloor, OpForm::kUnaryFloat},
    {"ceil", JitOp::kCeil, OpForm::kUnaryFloat},
    {"tanh", JitOp::kTanh, OpForm::kUnaryFloat},
    {"sigmoid", JitOp::kSigmoid, OpForm::kUnaryFloat},
    {"add", JitOp::kAdd, OpForm::kBinaryNumeric},
    {"subtract", JitOp::kSubtract, OpForm::kBinaryNumeric},
    {"multiply", JitOp::kMultiply, OpForm::kBinaryNumeric},
    {"divide", JitOp::kDivide, OpForm::kBinaryNumeric},
    {"maximum", JitOp::kMaximum, OpForm::kBinaryNumeric},
    {"minimum", JitOp::kMinimum, OpForm::kBinaryNumeric},
    {"power", JitOp::kPower, OpForm::kBinaryFloat},
    {"equal", JitOp::kEqual, OpForm::kCompare},
    {"less", JitOp::kLess, OpForm::kCompare},
    {"greater", JitOp::kGreater, OpForm::kCompare},
    {"nn.bias_add", JitOp::kBiasAdd, OpForm::kBiasAdd},
    {"where", JitOp::kWhere, OpForm::kWhere},
    {"cast", JitOp::kCast, OpForm::kCast},
    {"transpose", JitOp::kTranspose, OpForm::kInjective},
    {"reshape", JitOp::kReshape, OpForm::kInjective},
    {"dyn.reshape", JitOp::kDynReshape, OpForm::kInjective},
    {"expand_dims", JitOp::kExpandDims, OpForm::kInjective},
    {"squeeze", JitOp::kSqueeze, OpForm::kInjective},
    {"strided_slice", JitOp::kStridedSlice, OpForm::kInjective},
    {"dyn.strided_slice", JitOp::kDynStridedSlice, OpForm::kInjective},
    {"take", JitOp::kTake, OpForm::kInjective},
    {"concatenate", JitOp::kConcatenate, OpForm::kInjective},
    {"broadcast_to", JitOp::kBroadcastTo, OpForm::kInjective},
    {"dyn.broadcast_to", JitOp::kDynBroadcastTo, OpForm::kInjective},
};

const Lowering* FindLowering(absl::string_view op) {
  for (const Lowering& l : kLowerings) {
    if (l.op == op) return &l;
  }
  return nullptr;
}

int NumOperands(OpForm form) {
  switch (form) {
    case OpForm::kUnaryNumeric:
    case OpForm::kUnaryFloat:
    case OpForm::kCast:
      return 1;
    case OpForm::kWhere:
      return 3;
    case OpForm::kInjective:
      return -1;  // per op, checked by CheckInjective
    default:
      return 2;
  }
}

bool SupportedDType(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF64:
    case DType::kI8:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}
bool NumericDType(DType t) { return SupportedDType(t) && t != DType::kBool; }
bool FloatDType(DType t) { return t == DType::kF32 || t == DType::kF64; }
bool SignedIntDType(DType t) { return t == DType::kI8 || t == DType::kI32 || t == DType::kI64; }

// Error flag bits returned by the generated entry points.
constexpr int32_t kFlagDivisionByZero = 1;
constexpr int32_t kFlagIndexOutOfRange = 2;  // take in mode "fast" (Run checks first)

// Beyond this many exprs (values recomputed along different broadcast paths) the group is left
// to another backend rather than emitting a huge loop body.
constexpr size_t kMaxExprs = 4096;

// ===== Phase 1: analysis =======================================================================

enum class TakeMode : uint8_t { kClip, kWrap, kFast };

struct Step {
  JitOp op;
  OpForm form;
  std::string op_name;
  std::vector<int> args;  // value ids
  int result = -1;        // value id
  int64_t axis = 0;       // nn.bias_add, take, concatenate, expand_dims: normalised axis
  // Injective ops, from the attributes (normalised where the rank allows):
  //   transpose: ints = the permutation; reshape: ints = newshape; expand_dims: num = the
  //   number of new axes; squeeze: ints = 1 per dropped input dim, 0 per kept one;
  //   strided_slice: begin, end, strides, axes as given; broadcast_to: ints = the target;
  //   take: mode.
  std::vector<int64_t> ints;
  std::vector<int64_t> begin, end, strides, axes;
  int64_t num = 0;
  bool size_mode = false;
  TakeMode mode = TakeMode::kClip;
};

// Values are numbered: parameters 0..num_params-1, then one per binding (step k -> value
// num_params + k).
struct Plan {
  std::string fn;
  int num_params = 0;
  std::vector<std::string> names;  // "%a" for messages
  std::vector<DType> dtypes;
  std::vector<std::vector<DimExpr>> dims;
  std::vector<Step> steps;
  int result = -1;

  int rank(int v) const { return static_cast<int>(dims[v].size()); }
};

class Analyzer {
 public:
  // `allow_injective`: accept the injective ops of the lowering table (the injective path).
  explicit Analyzer(const Function& f, bool allow_injective = false)
      : f_(f), allow_injective_(allow_injective) {
    plan_.fn = f.name();
  }

  absl::StatusOr<Plan> Run() {
    const Block& body = f_.body();
    if (body.results().size() != 1) {
      return Unimplemented(
          absl::StrCat(body.results().size(), " results; the CPU JIT handles exactly one"));
    }
    for (const auto& p : body.params()) RETURN_IF_ERROR(AddValue(p.get()));
    plan_.num_params = body.num_params();
    for (const auto& node : body.nodes()) RETURN_IF_ERROR(AddNode(*node));
    auto it = ids_.find(body.results()[0]);
    if (it == ids_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("@", f_.name(), ": the returned value is not defined in the function"));
    }
    plan_.result = it->second;
    return std::move(plan_);
  }

 private:
  absl::Status Unimplemented(absl::string_view message) const {
    return absl::UnimplementedError(absl::StrCat("@", f_.name(), ": ", message));
  }
  absl::Status Invalid(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat("@", f_.name(), ": ", message));
  }

  absl::Status AddValue(const Value* v) {
    const std::string name = absl::StrCat("%", v->name());
    if (!v->type().is_tensor()) {
      return Unimplemented(absl::StrCat(name, " has type ", v->type().ToString(),
                                        "; the CPU JIT handles tensors only"));
    }
    if (!SupportedDType(v->type().dtype())) {
      return Unimplemented(absl::StrCat(name, " has dtype ", DTypeName(v->type().dtype()),
                                        ", which the CPU JIT does not support"));
    }
    ids_[v] = static_cast<int>(plan_.dtypes.size());
    plan_.names.push_back(name);
    plan_.dtypes.push_back(v->type().dtype());
    plan_.dims.push_back(v->type().shape());
    return absl::OkStatus();
  }

  absl::Status AddNode(const Node& node) {
    if (node.kind() != NodeKind::kCall || node.op() == nullptr) {
      return Unimplemented(
          absl::StrCat(node.OpName(), " bindings are not supported by the CPU JIT"));
    }
    const OpDef& op = *node.op();
    const Lowering* lowering = FindLowering(op.name());
    const bool injective = lowering != nullptr && lowering->form == OpForm::kInjective;
    const bool pattern_ok = injective ? op.pattern() <= FusionPattern::kInjective
                                      : (op.pattern() == FusionPattern::kElementwise ||
                                         op.pattern() == FusionPattern::kBroadcast);
    if (lowering == nullptr || !pattern_ok || (injective && !allow_injective_)) {
      return Unimplemented(absl::StrCat("op ", op.name(), " is not supported by the CPU JIT"));
    }
    if (node.num_results() != 1 ||
        (!injective && node.num_operands() != NumOperands(lowering->form))) {
      return Invalid(absl::StrCat(op.name(), " has ", node.num_operands(), " operands and ",
                                  node.num_results(), " results"));
    }
    Step step;
    step.op = lowering->code;
    step.form = lowering->form;
    step.op_name = op.name();
    for (const Value* operand : node.operands()) {
      auto it = ids_.find(operand);
      if (it == ids_.end()) {
        return Invalid(absl::StrCat("operand %", operand->name(), " of ", op.name(),
                                    " is not defined before its use in the function"));
      }
      step.args.push_back(it->second);
    }
    RETURN_IF_ERROR(AddValue(node.result(0)));
    const int result = static_cast<int>(plan_.dtypes.size()) - 1;
    step.result = result;
    RETURN_IF_ERROR(CheckTypes(node, step, result));
    plan_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  absl::Status Unsupported(const Step& step, DType t) const {
    return Unimplemented(
        absl::StrCat(step.op_name, " on ", DTypeName(t), " is not supported by the CPU JIT"));
  }

  absl::Status CheckTypes(const Node& node, Step& step, int result) {
    if (step.form == OpForm::kInjective) return CheckInjective(node, step, result);
    const std::vector<int>& a = step.args;
    const DType out = plan_.dtypes[result];
    const DType in = plan_.dtypes[a[0]];
    const std::string ctx = absl::StrCat(step.op_name, " ", plan_.names[result]);
    auto same_dtype = [&](int x, int y) -> absl::Status {
      if (plan_.dtypes[x] == plan_.dtypes[y]) return absl::OkStatus();
      return Invalid(absl::StrCat(ctx, ": operand dtypes differ: ", DTypeName(plan_.dtypes[x]),
                                  " vs ", DTypeName(plan_.dtypes[y])));
    };
    auto result_dtype = [&](DType expected) -> absl::Status {
      if (out == expected) return absl::OkStatus();
      return Invalid(
          absl::StrCat(ctx, " has dtype ", DTypeName(out), ", expected ", DTypeName(expected)));
    };
    switch (step.form) {
      case OpForm::kUnaryNumeric:
        if (!NumericDType(in)) return Unsupported(step, in);
        RETURN_IF_ERROR(result_dtype(in));
        break;
      case OpForm::kUnaryFloat:
        if (!FloatDType(in)) return Unsupported(step, in);
        RETURN_IF_ERROR(result_dtype(in));
        break;
      case OpForm::kBinaryNumeric:
      case OpForm::kBiasAdd:
        RETURN_IF_ERROR(same_dtype(a[0], a[1]));
        if (!NumericDType(in)) return Unsupported(step, in);
        RETURN_IF_ERROR(result_dtype(in));
        break;
      case OpForm::kBinaryFloat:
        RETURN_IF_ERROR(same_dtype(a[0], a[1]));
        if (!FloatDType(in)) return Unsupported(step, in);
        RETURN_IF_ERROR(result_dtype(in));
        break;
      case OpForm::kCompare:
        RETURN_IF_ERROR(same_dtype(a[0], a[1]));
        RETURN_IF_ERROR(result_dtype(DType::kBool));
        break;
      case OpForm::kWhere:
        RETURN_IF_ERROR(same_dtype(a[1], a[2]));
        RETURN_IF_ERROR(result_dtype(plan_.dtypes[a[1]]));
        break;
      case OpForm::kCast:
        RETURN_IF_ERROR(result_dtype(node.attrs().GetDType("dtype")));
        break;
      case OpForm::kInjective:
        break;  // CheckInjective
    }
    // Ranks: the result of a broadcasting op has the largest operand rank; bias_add keeps the
    // data's rank and takes a 1-D bias.
    if (step.form == OpForm::kBiasAdd) {
      const int rank = plan_.rank(a[0]);
      if (plan_.rank(a[1]) != 1 || plan_.rank(result) != rank) {
        return Invalid(absl::StrCat(ctx, ": expects a 1-D bias and a result of the data's rank"));
      }
      int64_t axis = node.attrs().GetInt("axis");
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) {
        return Invalid(absl::StrCat(ctx, ": axis ", node.attrs().GetInt("axis"),
                                    " is out of range for rank ", rank));
      }
      step.axis = axis;
    } else {
      int rank = 0;
      for (int v : a) rank = std::max(rank, plan_.rank(v));
      if (plan_.rank(result) != rank) {
        return Invalid(absl::StrCat(ctx, " has rank ", plan_.rank(result), ", expected ", rank));
      }
    }
    return absl::OkStatus();
  }

  // Injective ops: operand counts, dtypes, ranks and attributes; run-time operands (dyn.*
  // targets, begin/end/strides) must be integer parameters, read on the host by Run.
  absl::Status CheckInjective(const Node& node, Step& step, int result) {
    const std::vector<int>& a = step.args;
    const std::string ctx = absl::StrCat(step.op_name, " ", plan_.names[result]);
    ASSIGN_OR_RETURN(Attrs attrs, node.op()->CheckAttrs(node.attrs()));
    int expected_operands = 1;
    switch (step.op) {
      case JitOp::kDynReshape:
      case JitOp::kDynBroadcastTo:
      case JitOp::kTake:
        expected_operands = 2;
        break;
      case JitOp::kDynStridedSlice:
        expected_operands = 4;
        break;
      case JitOp::kConcatenate:
        expected_operands = std::max<int>(1, static_cast<int>(a.size()));
        break;
      default:
        break;
    }
    if (static_cast<int>(a.size()) != expected_operands) {
      return Invalid(absl::StrCat(ctx, ": ", a.size(), " operands, expected ", expected_operands));
    }
    const DType data = plan_.dtypes[a[0]];
    if (plan_.dtypes[result] != data) {
      return Invalid(absl::StrCat(ctx, " has dtype ", DTypeName(plan_.dtypes[result]),
                                  ", expected ", DTypeName(data)));
    }
    const int rank = plan_.rank(a[0]);
    const int out_rank = plan_.rank(result);
    auto host_ints = [&](int i) -> absl::Status {
      const int v = a[i];
      if (v >= plan_.num_params || !IsInteger(plan_.dtypes[v]) || plan_.rank(v) > 1) {
        return Unimplemented(absl::StrCat(ctx, ": operand ", plan_.names[v],
                                          " must be a 0-D or 1-D integer parameter of the group "
                                          "(its values are read on the host)"));
      }
      return absl::OkStatus();
    };
    auto expect_rank = [&](int want) -> absl::Status {
      if (out_rank == want) return absl::OkStatus();
      return Invalid(absl::StrCat(ctx, " has rank ", out_rank, ", expected ", want));
    };
    auto normalize = [&](int64_t axis, int64_t n) -> absl::StatusOr<int64_t> {
      if (axis < -n || axis >= n) {
        return Invalid(absl::StrCat(ctx, ": axis ", axis, " is out of range for rank ", n));
      }
      return axis < 0 ? axis + n : axis;
    };
    switch (step.op) {
      case JitOp::kTranspose: {
        std::vector<int64_t> perm = attrs.GetIntList("axes");
        if (perm.empty()) {
          for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
        }
        std::vector<bool> seen(rank, false);
        if (static_cast<int>(perm.size()) != rank) {
          return Invalid(absl::StrCat(ctx, ": axes is not a permutation of rank ", rank));
        }
        for (int64_t& p : perm) {
          ASSIGN_OR_RETURN(p, normalize(p, rank));
          if (seen[p]) return Invalid(absl::StrCat(ctx, ": axes is not a permutation"));
          seen[p] = true;
        }
        step.ints = std::move(perm);
        return expect_rank(rank);
      }
      case JitOp::kReshape:
        step.ints = attrs.GetIntList("newshape");
        return expect_rank(static_cast<int>(step.ints.size()));
      case JitOp::kDynReshape:
        RETURN_IF_ERROR(host_ints(1));
        if (plan_.rank(a[1]) != 1) return Invalid(absl::StrCat(ctx, ": newshape must be 1-D"));
        return absl::OkStatus();
      case JitOp::kExpandDims: {
        step.num = attrs.GetInt("num_newaxis");
        if (step.num < 0) return Invalid(absl::StrCat(ctx, ": num_newaxis must be >= 0"));
        ASSIGN_OR_RETURN(step.axis, normalize(attrs.GetInt("axis"), rank + 1));
        return expect_rank(rank + static_cast<int>(step.num));
      }
      case JitOp::kSqueeze: {
        // Which dims go is decided by the declared type, as in the shape rule.
        step.ints.assign(rank, 0);
        const std::vector<int64_t>& axes = attrs.GetIntList("axis");
        const std::vector<DimExpr>& in = plan_.dims[a[0]];
        for (int i = 0; i < rank && axes.empty(); ++i) {
          step.ints[i] = in[i].is_constant() && in[i].constant() == 1;
        }
        for (int64_t axis : axes) {
          ASSIGN_OR_RETURN(int64_t n, normalize(axis, rank));
          step.ints[n] = 1;
        }
        int dropped = 0;
        for (int64_t d : step.ints) dropped += static_cast<int>(d);
        return expect_rank(rank - dropped);
      }
      case JitOp::kStridedSlice:
        step.begin = attrs.GetIntList("begin");
        step.end = attrs.GetIntList("end");
        step.strides = attrs.GetIntList("strides");
        step.axes = attrs.GetIntList("axes");
        [[fallthrough]];
      case JitOp::kDynStridedSlice: {
        const std::string& mode = attrs.GetString("slice_mode");
        if (mode != "end" && mode != "size") {
          return Invalid(absl::StrCat(ctx, ": slice_mode must be 'end' or 'size'"));
        }
        step.size_mode = mode == "size";
        for (size_t i = 1; i < a.size(); ++i) RETURN_IF_ERROR(host_ints(i));
        return expect_rank(rank);
      }
      case JitOp::kTake: {
        if (!IsInteger(plan_.dtypes[a[1]])) {
          return Invalid(absl::StrCat(ctx, ": indices must be integers"));
        }
        ASSIGN_OR_RETURN(step.axis, normalize(attrs.GetInt("axis"), rank));
        const std::string& mode = attrs.GetString("mode");
        if (mode == "clip") {
          step.mode = TakeMode::kClip;
        } else if (mode == "wrap") {
          step.mode = TakeMode::kWrap;
        } else if (mode == "fast") {
          step.mode = TakeMode::kFast;
          // Out-of-range indices are an error even where no output element reads them: Run
          // checks every index, so they must be at hand.
          if (a[1] >= plan_.num_params) {
            return Unimplemented(
                absl::StrCat(ctx, ": mode \"fast\" needs the indices as a parameter"));
          }
        } else {
          return Invalid(absl::StrCat(ctx, ": mode must be clip, wrap or fast"));
        }
        return expect_rank(rank - 1 + plan_.rank(a[1]));
      }
      case JitOp::kConcatenate: {
        for (int v : a) {
          if (plan_.dtypes[v] != data || plan_.rank(v) != rank) {
            return Invalid(absl::StrCat(ctx, ": inputs differ in dtype or rank"));
          }
        }
        ASSIGN_OR_RETURN(step.axis, normalize(attrs.GetInt("axis"), rank));
        return expect_rank(rank);
      }
      case JitOp::kBroadcastTo:
        step.ints = attrs.GetIntList("shape");
        if (static_cast<int>(step.ints.size()) < rank) {
          return Invalid(absl::StrCat(ctx, ": cannot broadcast to a lower rank"));
        }
        return expect_rank(static_cast<int>(step.ints.size()));
      case JitOp::kDynBroadcastTo:
        RETURN_IF_ERROR(host_ints(1));
        if (plan_.rank(a[1]) != 1 || out_rank < rank) {
          return Invalid(absl::StrCat(ctx, ": expects a 1-D shape of at least the data's rank"));
        }
        return absl::OkStatus();
      default:
        return absl::InternalError(absl::StrCat(ctx, ": not an injective op"));
    }
  }

  const Function& f_;
  const bool allow_injective_;
  Plan plan_;
  absl::flat_hash_map<const Value*, int> ids_;
};

// ===== Phase 2: lowering to accesses and exprs =================================================

struct Access {
  int param;
  std::vector<int> pos;   // output dim of each of the parameter's dims
  bool inner_contiguous;  // static guess: stride 1 (true) or 0 (false) in the innermost dim
};

struct Expr {
  int value;
  int access = -1;        // parameters: the access loaded
  std::vector<int> args;  // bindings: expr ids of the operands
};

struct Lowered {
  int out_rank = 0;
  int depth = 1;  // loop nest depth: max(out_rank, 1)
  std::vector<Access> accesses;
  std::vector<Expr> exprs;  // operands before users
  int root = -1;
  bool divides_integers = false;
  // Every parameter and result dim is a constant: the static inner-stride guess is exact, so
  // `fast` always applies and `generic` is not emitted.
  bool static_shapes = true;
};

class Lowerer {
 public:
  explicit Lowerer(const Plan& plan) : plan_(plan) {}

  absl::StatusOr<Lowered> Run() {
    out_.out_rank = plan_.rank(plan_.result);
    out_.depth = std::max(out_.out_rank, 1);
    // The innermost output dim that is not statically 1: what `fast` treats as its inner loop.
    const std::vector<DimExpr>& out_dims = plan_.dims[plan_.result];
    for (int d = out_.out_rank - 1; d >= 0; --d) {
      if (!(out_dims[d].is_constant() && out_dims[d].constant() == 1)) {
        inner_dim_ = d;
        break;
      }
    }
    std::vector<int> identity(out_.out_rank);
    for (int d = 0; d < out_.out_rank; ++d) identity[d] = d;
    ASSIGN_OR_RETURN(out_.root, Place(plan_.result, identity));
    for (const Step& s : plan_.steps) {
      if (s.op == JitOp::kDivide && !FloatDType(plan_.dtypes[s.args[0]])) {
        out_.divides_integers = true;
      }
    }
    for (int v = 0; v < plan_.num_params; ++v) {
      for (const DimExpr& d : plan_.dims[v]) out_.static_shapes &= d.is_constant();
    }
    for (const DimExpr& d : out_dims) out_.static_shapes &= d.is_constant();
    return std::move(out_);
  }

 private:
  absl::StatusOr<int> Place(int value, const std::vector<int>& pos) {
    auto key = std::make_pair(value, pos);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    Expr e{value, -1, {}};
    if (value < plan_.num_params) {
      e.access = AccessFor(value, pos);
    } else {
      const Step& step = plan_.steps[value - plan_.num_params];
      for (size_t i = 0; i < step.args.size(); ++i) {
        const int arg = step.args[i];
        std::vector<int> arg_pos;
        if (step.form == OpForm::kBiasAdd && i == 1) {
          arg_pos = {pos[step.axis]};
        } else {
          const int offset = static_cast<int>(pos.size()) - plan_.rank(arg);
          arg_pos.assign(pos.begin() + offset, pos.end());
        }
        ASSIGN_OR_RETURN(int id, Place(arg, arg_pos));
        e.args.push_back(id);
      }
    }
    if (out_.exprs.size() >= kMaxExprs) {
      return absl::UnimplementedError(
          absl::StrCat("@", plan_.fn, ": the fused expression needs more than ", kMaxExprs,
                       " terms (values recomputed along different broadcast paths)"));
    }
    out_.exprs.push_back(std::move(e));
    const int id = static_cast<int>(out_.exprs.size()) - 1;
    memo_.emplace(std::move(key), id);
    return id;
  }

  int AccessFor(int param, const std::vector<int>& pos) {
    for (size_t a = 0; a < out_.accesses.size(); ++a) {
      if (out_.accesses[a].param == param && out_.accesses[a].pos == pos) {
        return static_cast<int>(a);
      }
    }
    bool contiguous = false;
    for (size_t j = 0; j < pos.size(); ++j) {
      if (pos[j] != inner_dim_) continue;
      const DimExpr& d = plan_.dims[param][j];
      contiguous = !(d.is_constant() && d.constant() == 1);
    }
    out_.accesses.push_back(Access{param, pos, contiguous});
    return static_cast<int>(out_.accesses.size()) - 1;
  }

  const Plan& plan_;
  Lowered out_;
  int inner_dim_ = -1;
  std::map<std::pair<int, std::vector<int>>, int> memo_;
};

// ===== Phase 3: LLVM IR ========================================================================

// Where the injective entry point finds the run-time dims of every value and the per-step
// run-time parameters (see "The injective path" below).
struct InjectiveLayout {
  std::vector<int> dim_offset;  // per value: its first entry in `dims`
  int num_dims = 0;
  // Per step: its first entry in `aux` (-1: none). Slices: start and stride per data dim;
  // reshapes: per data dim k >= 1 the multiplier of the division by that dim (see Divide).
  std::vector<int> aux_offset;
  int num_aux = 0;
  // Some reshape divides by a run-time dim: a second entry point, `wide`, divides with udiv
  // for element counts of 2^32 and more, where the multipliers are not exact.
  bool needs_wide = false;
};

class Emitter {
 public:
  Emitter(const Plan& plan, const Lowered& lowered, llvm::Module& module)
      : plan_(plan),
        lowered_(lowered),
        module_(module),
        ctx_(module.getContext()),
        b_(ctx_),
        i1_(llvm::Type::getInt1Ty(ctx_)),
        i8_(llvm::Type::getInt8Ty(ctx_)),
        i32_(llvm::Type::getInt32Ty(ctx_)),
        i64_(llvm::Type::getInt64Ty(ctx_)),
        ptr_(llvm::PointerType::getUnqual(ctx_)) {}

  // Emits one entry point; `fast` selects the constant-inner-stride variant.
  void EmitEntry(const std::string& name, bool fast) {
    fast_ = fast;
    auto* type = llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn_->setDoesNotThrow();
    for (unsigned i = 0; i < 3; ++i) {
      // The argument arrays are host metadata, distinct from every tensor and never written.
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      fn_->addParamAttr(i, llvm::Attribute::NoCapture);
      fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);

    const int depth = lowered_.depth;
    const int slots = static_cast<int>(lowered_.accesses.size()) + 1;
    llvm::Value* bases = fn_->getArg(0);
    llvm::Value* dims = fn_->getArg(1);
    llvm::Value* strides = fn_->getArg(2);
    std::vector<llvm::Value*> base(slots);
    for (int s = 0; s < slots; ++s) {
      base[s] = b_.CreateAlignedLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, bases, s),
                                     llvm::Align(8), absl::StrCat("base", s));
    }
    dims_.assign(depth, nullptr);
    strides_.assign(slots, std::vector<llvm::Value*>(depth, nullptr));
    for (int d = 0; d < depth; ++d) {
      dims_[d] = b_.CreateAlignedLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, dims, d),
                                      llvm::Align(8), absl::StrCat("dim", d));
      for (int s = 0; s < slots; ++s) {
        if (fast_ && d == depth - 1) {
          const bool one = s == 0 || lowered_.accesses[s - 1].inner_contiguous;
          strides_[s][d] = b_.getInt64(one ? 1 : 0);
        } else {
          strides_[s][d] = b_.CreateAlignedLoad(
              i64_, b_.CreateConstInBoundsGEP1_64(i64_, strides, s * depth + d), llvm::Align(8),
              absl::StrCat("stride", s, "_", d));
        }
      }
    }
    flag_ = nullptr;
    if (lowered_.divides_integers) {
      flag_ = b_.CreateAlloca(i32_, nullptr, "flags");
      b_.CreateStore(b_.getInt32(0), flag_);
    }
    access_group_ = llvm::MDNode::getDistinct(ctx_, {});
    inner_loop_id_ = MakeLoopId();

    EmitLevel(0, base);
    llvm::Value* flags = b_.getInt32(0);
    if (flag_ != nullptr) flags = b_.CreateLoad(i32_, flag_);
    b_.CreateRet(flags);
  }

  // The injective path's entry point: i32 name(ptr bases, ptr dims, ptr aux), a scalar loop
  // nest over the output; bases[0] is the output, bases[1 + p] parameter p.
  void EmitInjectiveEntry(const std::string& name, const InjectiveLayout& layout, bool wide) {
    fast_ = false;
    wide_ = wide;
    auto* type = llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn_->setDoesNotThrow();
    for (unsigned i = 0; i < 3; ++i) {
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      fn_->addParamAttr(i, llvm::Attribute::NoCapture);
      fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
    auto load_i64 = [&](llvm::Value* array, int i, const std::string& what) -> llvm::Value* {
      return b_.CreateAlignedLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, array, i),
                                  llvm::Align(8), what);
    };
    llvm::Value* bases = fn_->getArg(0);
    inj_bases_.clear();
    for (int p = 0; p <= plan_.num_params; ++p) {
      inj_bases_.push_back(b_.CreateAlignedLoad(
          ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, bases, p), llvm::Align(8)));
    }
    inj_dims_.assign(plan_.dims.size(), {});
    for (size_t v = 0; v < plan_.dims.size(); ++v) {
      for (size_t j = 0; j < plan_.dims[v].size(); ++j) {
        const DimExpr& d = plan_.dims[v][j];
        inj_dims_[v].push_back(d.is_constant() ? b_.getInt64(d.constant())
                                               : load_i64(fn_->getArg(1),
                                                          layout.dim_offset[v] + j,
                                                          absl::StrCat("d", v, "_", j)));
      }
    }
    aux_.clear();
    for (int i = 0; i < layout.num_aux; ++i) {
      aux_.push_back(load_i64(fn_->getArg(2), i, absl::StrCat("aux", i)));
    }
    aux_offset_ = &layout.aux_offset;
    flag_ = b_.CreateAlloca(i32_, nullptr, "flags");
    b_.CreateStore(b_.getInt32(0), flag_);
    memo_.clear();
    access_group_ = llvm::MDNode::getDistinct(ctx_, {});
    std::vector<llvm::Value*> idx;
    EmitInjectiveLevel(idx, b_.getInt64(0));
    b_.CreateRet(b_.CreateLoad(i32_, flag_));
  }

 private:
  // ---- the injective path ----

  // for (i = 0; i < dim; ++i) over output dim idx.size(); the body stores the result at the
  // linear index `lin`.
  void EmitInjectiveLevel(std::vector<llvm::Value*>& idx, llvm::Value* lin) {
    const int d = static_cast<int>(idx.size());
    const int out = plan_.result;
    if (d == plan_.rank(out)) {
      llvm::Value* result = Eval(out, idx);
      const DType t = plan_.dtypes[out];
      if (t == DType::kBool) result = b_.CreateZExt(result, i8_);
      b_.CreateAlignedStore(result, b_.CreateInBoundsGEP(MemType(t), inj_bases_[0], lin),
                            llvm::Align(DTypeSize(t)))
          ->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
      return;
    }
    llvm::Value* n = inj_dims_[out][d];
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("loop", d), fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("body", d), fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("exit", d), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, absl::StrCat("i", d));
    iv->addIncoming(b_.getInt64(0), preheader);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, n), body, exit);
    b_.SetInsertPoint(body);
    const auto saved = memo_;  // values computed inside the loop do not dominate its exit
    idx.push_back(iv);
    EmitInjectiveLevel(idx, b_.CreateAdd(b_.CreateMul(lin, n), iv));
    idx.pop_back();
    memo_ = saved;
    llvm::Value* iv_next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    // The innermost loop: its iterations are independent (Run refuses any overlap of the
    // output with an input), so loads and stores are marked parallel and LLVM may vectorise
    // it without run-time alias checks (it does where the reads are contiguous, e.g. a take
    // of rows). Outer loops: neither vectorised nor unrolled (quicker to compile).
    const bool innermost = d + 1 == plan_.rank(out);
    fast_ = innermost;
    b_.CreateBr(header)->setMetadata(llvm::LLVMContext::MD_loop, MakeLoopId());
    fast_ = false;
    iv->addIncoming(iv_next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
  }

  // Value v's element at `idx` (one i64 per dim of v), in registers.
  llvm::Value* Eval(int v, const std::vector<llvm::Value*>& idx) {
    auto key = std::make_pair(v, idx);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    llvm::Value* r = v < plan_.num_params ? LoadParam(v, idx)
                                          : EvalStep(plan_.steps[v - plan_.num_params], idx);
    memo_.emplace(std::move(key), r);
    return r;
  }

  llvm::Value* LoadParam(int v, const std::vector<llvm::Value*>& idx) {
    llvm::Value* offset = b_.getInt64(0);
    for (size_t j = 0; j < idx.size(); ++j) {
      offset = j == 0 ? idx[0] : b_.CreateAdd(b_.CreateMul(offset, inj_dims_[v][j]), idx[j]);
    }
    const DType t = plan_.dtypes[v];
    llvm::LoadInst* x = b_.CreateAlignedLoad(
        MemType(t), b_.CreateInBoundsGEP(MemType(t), inj_bases_[1 + v], offset),
        llvm::Align(DTypeSize(t)));
    x->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
    return t == DType::kBool ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
  }

  // NumPy broadcasting of value a into an index of higher (or equal) rank: right-aligned,
  // unit dims read element 0.
  std::vector<llvm::Value*> BroadcastIndex(int a, const std::vector<llvm::Value*>& idx) {
    const int rank = plan_.rank(a);
    const size_t offset = idx.size() - rank;
    std::vector<llvm::Value*> r(rank);
    for (int j = 0; j < rank; ++j) {
      const DimExpr& d = plan_.dims[a][j];
      llvm::Value* i = idx[offset + j];
      if (d.is_constant()) {
        r[j] = d.constant() == 1 ? b_.getInt64(0) : i;
      } else {
        r[j] = b_.CreateSelect(b_.CreateICmpEQ(inj_dims_[a][j], b_.getInt64(1)), b_.getInt64(0), i);
      }
    }
    return r;
  }

  llvm::Value* EvalStep(const Step& step, const std::vector<llvm::Value*>& idx) {
    const std::vector<int>& a = step.args;
    if (step.form != OpForm::kInjective) {
      std::vector<llvm::Value*> operands;
      for (size_t i = 0; i < a.size(); ++i) {
        if (step.form == OpForm::kBiasAdd && i == 1) {
          operands.push_back(Eval(a[1], {idx[step.axis]}));
        } else {
          operands.push_back(Eval(a[i], BroadcastIndex(a[i], idx)));
        }
      }
      return EmitStep(step, operands);
    }
    const int data = a[0];
    const int rank = plan_.rank(data);
    std::vector<llvm::Value*> in;
    switch (step.op) {
      case JitOp::kTranspose:
        in.resize(rank);
        for (int j = 0; j < rank; ++j) in[step.ints[j]] = idx[j];
        return Eval(data, in);
      case JitOp::kReshape:
      case JitOp::kDynReshape: {
        // Linearise over the result's dims, delinearise over the data's.
        llvm::Value* lin = b_.getInt64(0);
        const int v = step.result;
        for (size_t j = 0; j < idx.size(); ++j) {
          lin = j == 0 ? idx[0] : b_.CreateAdd(b_.CreateMul(lin, inj_dims_[v][j]), idx[j]);
        }
        in.resize(rank);
        const int offset = (*aux_offset_)[step.result - plan_.num_params];
        for (int k = rank - 1; k > 0; --k) {
          llvm::Value* d = inj_dims_[data][k];
          llvm::Value* q = Divide(lin, d, offset + k);
          in[k] = b_.CreateSub(lin, b_.CreateMul(q, d));
          lin = q;
        }
        if (rank > 0) in[0] = lin;
        return Eval(data, in);
      }
      case JitOp::kExpandDims:
        for (int j = 0; j < static_cast<int>(idx.size()); ++j) {
          if (j < step.axis || j >= step.axis + step.num) in.push_back(idx[j]);
        }
        return Eval(data, in);
      case JitOp::kSqueeze: {
        size_t next = 0;
        for (int j = 0; j < rank; ++j) in.push_back(step.ints[j] ? b_.getInt64(0) : idx[next++]);
        return Eval(data, in);
      }
      case JitOp::kStridedSlice:
      case JitOp::kDynStridedSlice: {
        const int offset = (*aux_offset_)[step.result - plan_.num_params];
        for (int j = 0; j < rank; ++j) {
          in.push_back(b_.CreateAdd(aux_[offset + 2 * j],
                                    b_.CreateMul(idx[j], aux_[offset + 2 * j + 1])));
        }
        return Eval(data, in);
      }
      case JitOp::kTake:
        return EvalTake(step, idx);
      case JitOp::kConcatenate:
        return EvalConcatenate(step, idx);
      case JitOp::kBroadcastTo:
      case JitOp::kDynBroadcastTo:
        return Eval(data, BroadcastIndex(data, idx));
      default:
        return nullptr;  // excluded by Analyze
    }
  }

  // lin / d for 0 <= lin < 2^32 (the not-`wide` entry) and a run-time 1 <= d < 2^32: the high
  // half of lin * m, m = floor((2^64 - 1) / d) + 1 from aux (0 for d = 1, selected away);
  // exact in that range (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
  // 2019), and a multiply instead of a 64-bit divide on every element. Constant divisors are
  // left to LLVM.
  llvm::Value* Divide(llvm::Value* lin, llvm::Value* d, int aux_index) {
    if (wide_ || llvm::isa<llvm::Constant>(d)) return b_.CreateUDiv(lin, d);
    llvm::Type* i128 = llvm::Type::getInt128Ty(ctx_);
    llvm::Value* product =
        b_.CreateMul(b_.CreateZExt(lin, i128), b_.CreateZExt(aux_[aux_index], i128));
    llvm::Value* q = b_.CreateTrunc(b_.CreateLShr(product, 64), i64_);
    return b_.CreateSelect(b_.CreateICmpEQ(d, b_.getInt64(1)), lin, q);
  }

  // take: the index read from `indices` at the result index's middle dims, resolved into
  // [0, n) by the mode exactly as the reference does (Run has checked what can fail).
  llvm::Value* EvalTake(const Step& step, const std::vector<llvm::Value*>& idx) {
    const int data = step.args[0], indices = step.args[1];
    const int ri = plan_.rank(indices);
    const int axis = static_cast<int>(step.axis);
    std::vector<llvm::Value*> at(idx.begin() + axis, idx.begin() + axis + ri);
    llvm::Value* k = Eval(indices, at);
    k = b_.CreateIntCast(k, i64_, SignedIntDType(plan_.dtypes[indices]));
    llvm::Value* n = inj_dims_[data][axis];
    llvm::Value* zero = b_.getInt64(0);
    switch (step.mode) {
      case TakeMode::kClip: {
        k = b_.CreateSelect(b_.CreateICmpSLT(k, zero), zero, k);
        llvm::Value* last = b_.CreateSub(n, b_.getInt64(1));
        k = b_.CreateSelect(b_.CreateICmpSGT(k, last), last, k);
        break;
      }
      case TakeMode::kWrap: {
        llvm::Value* r = b_.CreateSRem(k, n);
        k = b_.CreateSelect(b_.CreateICmpSLT(r, zero), b_.CreateAdd(r, n), r);
        break;
      }
      case TakeMode::kFast: {
        k = b_.CreateSelect(b_.CreateICmpSLT(k, zero), b_.CreateAdd(k, n), k);
        llvm::Value* bad = b_.CreateICmpUGE(k, n);
        llvm::Value* flags = b_.CreateLoad(i32_, flag_);
        llvm::Value* bit = b_.CreateSelect(bad, b_.getInt32(kFlagIndexOutOfRange), b_.getInt32(0));
        b_.CreateStore(b_.CreateOr(flags, bit), flag_);
        k = b_.CreateSelect(bad, zero, k);
        break;
      }
    }
    std::vector<llvm::Value*> in(idx.begin(), idx.begin() + axis);
    in.push_back(k);
    in.insert(in.end(), idx.begin() + axis + ri, idx.end());
    return Eval(data, in);
  }

  // concatenate: a branch per input, chosen by the range the axis index falls in; only the
  // chosen input is read.
  llvm::Value* EvalConcatenate(const Step& step, const std::vector<llvm::Value*>& idx) {
    const std::vector<int>& a = step.args;
    const int axis = static_cast<int>(step.axis);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "concat.merge", fn_);
    std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> incoming;
    llvm::Value* begin = b_.getInt64(0);
    for (size_t i = 0; i < a.size(); ++i) {
      llvm::Value* end = b_.CreateAdd(begin, inj_dims_[a[i]][axis]);
      llvm::BasicBlock* next = nullptr;
      if (i + 1 < a.size()) {
        llvm::BasicBlock* then = llvm::BasicBlock::Create(ctx_, "concat.in", fn_);
        next = llvm::BasicBlock::Create(ctx_, "concat.next", fn_);
        b_.CreateCondBr(b_.CreateICmpSLT(idx[axis], end), then, next);
        b_.SetInsertPoint(then);
      }
      const auto saved = memo_;
      std::vector<llvm::Value*> in = idx;
      in[axis] = b_.CreateSub(idx[axis], begin);
      llvm::Value* x = Eval(a[i], in);
      memo_ = saved;
      incoming.emplace_back(x, b_.GetInsertBlock());
      b_.CreateBr(merge);
      if (next != nullptr) b_.SetInsertPoint(next);
      begin = end;
    }
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(incoming[0].first->getType(), incoming.size());
    for (const auto& [x, block] : incoming) phi->addIncoming(x, block);
    return phi;
  }

  llvm::Type* RegType(DType t) const {
    switch (t) {
      case DType::kF32:
        return llvm::Type::getFloatTy(ctx_);
      case DType::kF64:
        return llvm::Type::getDoubleTy(ctx_);
      case DType::kI8:
      case DType::kU8:
        return i8_;
      case DType::kI32:
        return i32_;
      case DType::kI64:
        return i64_;
      case DType::kBool:
        return i1_;
      default:
        return nullptr;  // excluded by Analyze
    }
  }
  llvm::Type* MemType(DType t) const { return t == DType::kBool ? i8_ : RegType(t); }
  DType SlotDType(int slot) const {
    return slot == 0 ? plan_.dtypes[plan_.result] : plan_.dtypes[lowered_.accesses[slot - 1].param];
  }

  // !{self, parallel_accesses(group)} for `fast`; !{self, no vectorise, no unroll} for
  // `generic` (rarely used: keep it small and quick to compile).
  llvm::MDNode* MakeLoopId() {
    llvm::SmallVector<llvm::Metadata*, 4> ops;
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, std::nullopt);
    ops.push_back(self.get());
    if (fast_) {
      ops.push_back(llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.parallel_accesses"), access_group_}));
    } else {
      ops.push_back(
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                   llvm::ConstantAsMetadata::get(b_.getFalse())}));
      ops.push_back(
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    }
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    return id;
  }

  // One loop level: for (i = 0; i < dims[d]; ++i) { inner levels or the body }. `ptr` holds,
  // per slot, the address of the first element of this level's slice.
  void EmitLevel(int d, const std::vector<llvm::Value*>& ptr) {
    const int depth = lowered_.depth;
    const bool innermost = d == depth - 1;
    const int slots = static_cast<int>(ptr.size());
    if (innermost) EmitHoistedLoads(ptr);
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("loop", d), fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("body", d), fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("exit", d), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, absl::StrCat("i", d));
    iv->addIncoming(b_.getInt64(0), preheader);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, dims_[d]), body, exit);
    b_.SetInsertPoint(body);
    if (innermost) {
      EmitBody(iv, ptr);
    } else {
      std::vector<llvm::Value*> next(slots);
      for (int s = 0; s < slots; ++s) {
        next[s] =
            b_.CreateInBoundsGEP(MemType(SlotDType(s)), ptr[s], b_.CreateMul(iv, strides_[s][d]));
      }
      EmitLevel(d + 1, next);
    }
    llvm::Value* iv_next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true,
                                        /*HasNSW=*/true);
    llvm::BranchInst* back = b_.CreateBr(header);
    if (innermost) back->setMetadata(llvm::LLVMContext::MD_loop, inner_loop_id_);
    iv->addIncoming(iv_next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
  }

  // `fast`: broadcast accesses (stride 0 in the inner loop) are loaded once per inner loop.
  // Their memory never overlaps the output (Run checks), so the value cannot change inside it.
  void EmitHoistedLoads(const std::vector<llvm::Value*>& ptr) {
    hoisted_.assign(lowered_.accesses.size(), nullptr);
    if (!fast_) return;
    for (size_t a = 0; a < lowered_.accesses.size(); ++a) {
      if (!lowered_.accesses[a].inner_contiguous) hoisted_[a] = Load(a + 1, ptr[a + 1], false);
    }
  }

  llvm::Value* Load(int slot, llvm::Value* address, bool in_parallel_loop) {
    const DType t = SlotDType(slot);
    llvm::LoadInst* load = b_.CreateAlignedLoad(MemType(t), address, llvm::Align(DTypeSize(t)));
    if (in_parallel_loop) load->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
    if (t == DType::kBool) return b_.CreateICmpNE(load, b_.getInt8(0));
    return load;
  }

  llvm::Value* Address(int slot, llvm::Value* base, llvm::Value* iv) {
    const int inner = lowered_.depth - 1;
    llvm::Value* index = iv;
    if (!fast_) index = b_.CreateMul(iv, strides_[slot][inner]);
    return b_.CreateInBoundsGEP(MemType(SlotDType(slot)), base, index);
  }

  void EmitBody(llvm::Value* iv, const std::vector<llvm::Value*>& ptr) {
    std::vector<llvm::Value*> values(lowered_.exprs.size(), nullptr);
    for (size_t e = 0; e < lowered_.exprs.size(); ++e) {
      const Expr& expr = lowered_.exprs[e];
      if (expr.access >= 0) {
        const int slot = expr.access + 1;
        values[e] = hoisted_[expr.access] != nullptr
                        ? hoisted_[expr.access]
                        : Load(slot, Address(slot, ptr[slot], iv), fast_);
        continue;
      }
      const Step& step = plan_.steps[expr.value - plan_.num_params];
      std::vector<llvm::Value*> args;
      for (int a : expr.args) args.push_back(values[a]);
      values[e] = EmitStep(step, args);
    }
    llvm::Value* result = values[lowered_.root];
    const DType out = plan_.dtypes[plan_.result];
    if (out == DType::kBool) result = b_.CreateZExt(result, i8_);
    llvm::StoreInst* store =
        b_.CreateAlignedStore(result, Address(0, ptr[0], iv), llvm::Align(DTypeSize(out)));
    if (fast_) store->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
  }

  llvm::Value* ToBool(llvm::Value* x, DType t) {
    if (t == DType::kBool) return x;
    if (FloatDType(t)) return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }

  // Tensor::SetDouble / SetInt64 semantics (see the file comment).
  llvm::Value* Convert(llvm::Value* x, DType from, DType to) {
    if (from == to) return x;
    if (to == DType::kBool) return ToBool(x, from);
    llvm::Type* dst = RegType(to);
    if (FloatDType(from) && FloatDType(to)) return b_.CreateFPCast(x, dst);
    if (FloatDType(from)) {
      llvm::Value* wide =
          b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i64_, x->getType()}, {x});
      return b_.CreateTrunc(wide, dst);
    }
    if (FloatDType(to)) {
      llvm::Type* f64 = llvm::Type::getDoubleTy(ctx_);
      llvm::Value* d = SignedIntDType(from) ? b_.CreateSIToFP(x, f64) : b_.CreateUIToFP(x, f64);
      return to == DType::kF64 ? d : b_.CreateFPTrunc(d, dst);
    }
    return b_.CreateIntCast(x, dst, SignedIntDType(from));
  }

  llvm::Value* LibmCall(absl::string_view f32_name, absl::string_view f64_name, llvm::Value* x) {
    const bool is_f32 = x->getType()->isFloatTy();
    const absl::string_view name = is_f32 ? f32_name : f64_name;
    llvm::FunctionCallee callee =
        module_.getOrInsertFunction(llvm::StringRef(name.data(), name.size()),
                                    llvm::FunctionType::get(x->getType(), {x->getType()}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotAccessMemory();
      f->setDoesNotThrow();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    llvm::CallInst* call = b_.CreateCall(callee, {x});
    call->setDoesNotAccessMemory();
    call->setDoesNotThrow();
    return call;
  }

  // ---- f32 transcendentals in plain arithmetic ----
  // libm calls (expf, tanhf) cannot be vectorised without a vector math library: the loop would
  // make one call per element. These expansions vectorise with the rest of the group and stay
  // within a few ulp of the correctly rounded result (the tests sweep the whole range).

  llvm::Value* F32(double v) { return llvm::ConstantFP::get(llvm::Type::getFloatTy(ctx_), v); }
  llvm::Value* MulAdd(llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, m, c});
  }

  // e^x as in Cephes' expf: n = rint(x log2 e); r = x - n ln 2 with ln 2 split in two so n*C1
  // is exact (Cody-Waite); e^r by a degree-7 polynomial on [-ln2/2, ln2/2]; times 2^n, built
  // from exponent bits in two halves so that results down to the subnormal range and up to
  // overflow (inf) come out right. x is clamped to [-104, 89] first (exp is 0 or inf beyond);
  // NaN is passed through.
  llvm::Value* ExpF32(llvm::Value* x) {
    llvm::Value* is_nan = b_.CreateFCmpUNO(x, x);
    llvm::Value* xc = b_.CreateSelect(b_.CreateFCmpOGT(x, F32(89.0)), F32(89.0), x);
    xc = b_.CreateSelect(b_.CreateFCmpOLT(xc, F32(-104.0)), F32(-104.0), xc);
    xc = b_.CreateSelect(is_nan, F32(0.0), xc);
    llvm::Value* n =
        b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(xc, F32(1.44269504088896341)));
    llvm::Value* r = b_.CreateFSub(xc, b_.CreateFMul(n, F32(0.693359375)));
    r = b_.CreateFSub(r, b_.CreateFMul(n, F32(-2.12194440e-4)));
    llvm::Value* p = F32(1.9875691500e-4);
    for (double k :
         {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}) {
      p = MulAdd(p, r, F32(k));
    }
    llvm::Value* e_r = b_.CreateFAdd(MulAdd(p, b_.CreateFMul(r, r), r), F32(1.0));
    llvm::Value* ni = b_.CreateFPToSI(n, i32_);  // in [-151, 129]
    llvm::Value* n1 = b_.CreateAShr(ni, 1);
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    auto pow2 = [&](llvm::Value* k) {  // 2^k for k in [-126, 127]
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, b_.getInt32(127)), 23),
                              llvm::Type::getFloatTy(ctx_));
    };
    llvm::Value* result = b_.CreateFMul(b_.CreateFMul(e_r, pow2(n1)), pow2(n2));
    return b_.CreateSelect(is_nan, x, result);
  }

  // tanh: for |x| < 0.55 its odd Taylor series through x^17 (the first omitted term is below
  // 1e-8 relative there); above, 1 - 2 / (e^2|x| + 1) with x's sign (no cancellation once
  // tanh > 0.5; e^2|x| = inf gives exactly 1).
  llvm::Value* TanhF32(llvm::Value* x) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* q = F32(6404582.0 / 10854718875.0);
    for (double k : {-929569.0 / 638512875.0, 21844.0 / 6081075.0, -1382.0 / 155925.0,
                     62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0}) {
      q = MulAdd(q, x2, F32(k));
    }
    llvm::Value* small = MulAdd(b_.CreateFMul(x, x2), q, x);
    llvm::Value* e = ExpF32(b_.CreateFMul(ax, F32(2.0)));
    llvm::Value* big = b_.CreateFSub(F32(1.0), b_.CreateFDiv(F32(2.0), b_.CreateFAdd(e, F32(1.0))));
    big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, F32(0.55)), small, big);
  }

  // sigmoid in the stable form: e = e^-|x|, s = 1 / (1 + e); x >= 0 ? s : e * s. Unlike
  // 1 / (1 + e^-x) in f32 it keeps the tiny results for x < -88 (e^-x would overflow).
  llvm::Value* SigmoidF32(llvm::Value* x) {
    llvm::Value* e = ExpF32(b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
    llvm::Value* s = b_.CreateFDiv(F32(1.0), b_.CreateFAdd(F32(1.0), e));
    return b_.CreateSelect(b_.CreateFCmpOGE(x, F32(0.0)), s, b_.CreateFMul(e, s));
  }

  llvm::Value* EmitDivide(llvm::Value* x, llvm::Value* y, DType t) {
    if (FloatDType(t)) return b_.CreateFDiv(x, y);
    llvm::Type* type = x->getType();
    llvm::Value* zero = b_.CreateICmpEQ(y, llvm::ConstantInt::get(type, 0));
    llvm::Value* one = llvm::ConstantInt::get(type, 1);
    llvm::Value* quotient;
    if (SignedIntDType(t)) {
      // INT_MIN / -1 traps in hardware; x / -1 is -x (wrapping), as the int64 reference gives
      // after truncation.
      llvm::Value* minus_one = b_.CreateICmpEQ(y, llvm::ConstantInt::getSigned(type, -1));
      llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), one, y);
      quotient = b_.CreateSelect(minus_one, b_.CreateNeg(x), b_.CreateSDiv(x, safe));
    } else {
      quotient = b_.CreateUDiv(x, b_.CreateSelect(zero, one, y));
    }
    llvm::Value* flags = b_.CreateLoad(i32_, flag_);
    llvm::Value* bit = b_.CreateSelect(zero, b_.getInt32(kFlagDivisionByZero), b_.getInt32(0));
    b_.CreateStore(b_.CreateOr(flags, bit), flag_);
    return quotient;
  }

  llvm::Value* EmitStep(const Step& step, const std::vector<llvm::Value*>& v) {
    const DType t =
        step.form == OpForm::kWhere ? plan_.dtypes[step.args[1]] : plan_.dtypes[step.args[0]];
    const bool fp = FloatDType(t);
    const bool is_signed = SignedIntDType(t);
    llvm::Value* x = v[0];
    llvm::Type* type = x->getType();
    auto zero = [&]() -> llvm::Value* {
      return fp ? llvm::ConstantFP::get(type, 0.0) : llvm::ConstantInt::get(type, 0);
    };
    auto less = [&](llvm::Value* p, llvm::Value* q) -> llvm::Value* {
      if (fp) return b_.CreateFCmpOLT(p, q);
      return is_signed ? b_.CreateICmpSLT(p, q) : b_.CreateICmpULT(p, q);
    };
    switch (step.op) {
      case JitOp::kRelu:  // x > 0 ? x : 0
        return b_.CreateSelect(less(zero(), x), x, zero());
      case JitOp::kNegative:
        return fp ? b_.CreateFNeg(x) : b_.CreateNeg(x);
      case JitOp::kAbs:
        if (fp) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        if (!is_signed) return x;
        return b_.CreateSelect(less(x, zero()), b_.CreateNeg(x), x);
      case JitOp::kExp:
        if (t == DType::kF32) return ExpF32(x);
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
      case JitOp::kLog:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
      case JitOp::kSqrt:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case JitOp::kFloor:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
      case JitOp::kCeil:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
      case JitOp::kTanh:
        if (t == DType::kF32) return TanhF32(x);
        return LibmCall("tanhf", "tanh", x);
      case JitOp::kSigmoid: {  // 1 / (1 + e^-x), as the reference computes it
        if (t == DType::kF32) return SigmoidF32(x);
        llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
        llvm::Value* e = b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(x));
        return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      }
      case JitOp::kAdd:
      case JitOp::kBiasAdd:
        return fp ? b_.CreateFAdd(x, v[1]) : b_.CreateAdd(x, v[1]);
      case JitOp::kSubtract:
        return fp ? b_.CreateFSub(x, v[1]) : b_.CreateSub(x, v[1]);
      case JitOp::kMultiply:
        return fp ? b_.CreateFMul(x, v[1]) : b_.CreateMul(x, v[1]);
      case JitOp::kDivide:
        return EmitDivide(x, v[1], t);
      case JitOp::kMaximum:  // std::max(x, y) = x < y ? y : x
        return b_.CreateSelect(less(x, v[1]), v[1], x);
      case JitOp::kMinimum:  // std::min(x, y) = y < x ? y : x
        return b_.CreateSelect(less(v[1], x), v[1], x);
      case JitOp::kPower:
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, v[1]);
      case JitOp::kEqual:
        return fp ? b_.CreateFCmpOEQ(x, v[1]) : b_.CreateICmpEQ(x, v[1]);
      case JitOp::kLess:
        return less(x, v[1]);
      case JitOp::kGreater:
        return less(v[1], x);
      case JitOp::kWhere:
        return b_.CreateSelect(ToBool(x, plan_.dtypes[step.args[0]]), v[1], v[2]);
      case JitOp::kCast:
        return Convert(x, t, plan_.dtypes[step.result]);
      case JitOp::kTranspose:
      case JitOp::kReshape:
      case JitOp::kDynReshape:
      case JitOp::kExpandDims:
      case JitOp::kSqueeze:
      case JitOp::kStridedSlice:
      case JitOp::kDynStridedSlice:
      case JitOp::kTake:
      case JitOp::kConcatenate:
      case JitOp::kBroadcastTo:
      case JitOp::kDynBroadcastTo:
        return nullptr;  // index maps, not arithmetic: EvalStep
    }
    return nullptr;
  }

  const Plan& plan_;
  const Lowered& lowered_;
  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Type* i1_;
  llvm::Type* i8_;
  llvm::Type* i32_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;

  // Per entry point.
  bool fast_ = false;
  llvm::Function* fn_ = nullptr;
  std::vector<llvm::Value*> dims_;
  std::vector<std::vector<llvm::Value*>> strides_;  // [slot][level]
  std::vector<llvm::Value*> hoisted_;
  llvm::Value* flag_ = nullptr;
  llvm::MDNode* access_group_ = nullptr;
  llvm::MDNode* inner_loop_id_ = nullptr;

  // The injective entry point.
  std::vector<llvm::Value*> inj_bases_;               // [0] output, [1 + p] parameter p
  std::vector<std::vector<llvm::Value*>> inj_dims_;   // [value][dim]: constant or loaded
  std::vector<llvm::Value*> aux_;
  const std::vector<int>* aux_offset_ = nullptr;
  bool wide_ = false;
  // (value, index) -> its element; only looked up, never iterated.
  std::map<std::pair<int, std::vector<llvm::Value*>>, llvm::Value*> memo_;
};

struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::string fast_name;
  std::string generic_name;  // empty for static shapes
};

BuiltModule BuildModule(const Plan& plan, const Lowered& lowered, const std::string& symbol) {
  BuiltModule m;
  m.context = std::make_unique<llvm::LLVMContext>();
  m.module = std::make_unique<llvm::Module>(symbol, *m.context);
  m.fast_name = symbol + "_fast";
  Emitter emitter(plan, lowered, *m.module);
  emitter.EmitEntry(m.fast_name, /*fast=*/true);
  if (!lowered.static_shapes) {
    m.generic_name = symbol + "_generic";
    emitter.EmitEntry(m.generic_name, /*fast=*/false);
  }
  return m;
}

// ===== Phase 4: the kernel at run time =========================================================

using KernelFn = int32_t (*)(void* const* bases, const int64_t* dims, const int64_t* strides);
using Shape = absl::InlinedVector<int64_t, 6>;

struct Program {
  Plan plan;
  Lowered lowered;
  std::unique_ptr<JitCode> code;
  KernelFn fast = nullptr;
  KernelFn generic = nullptr;  // nullptr for static shapes (never needed)
  std::string description;
};

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string TypeString(const Plan& plan, int v) {
  return Type::Tensor(plan.dtypes[v], plan.dims[v]).ToString();
}

bool Overlaps(const TensorArg& a, const TensorArg& b) {
  const auto* a0 = static_cast<const char*>(a.data);
  const auto* b0 = static_cast<const char*>(b.data);
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// NumPy broadcast of `b` into `acc` (right-aligned).
bool BroadcastInto(Shape& acc, absl::Span<const int64_t> b) {
  if (b.size() > acc.size()) acc.insert(acc.begin(), b.size() - acc.size(), 1);
  const size_t offset = acc.size() - b.size();
  for (size_t j = 0; j < b.size(); ++j) {
    int64_t& d = acc[offset + j];
    if (d == b[j] || b[j] == 1) continue;
    if (d != 1) return false;
    d = b[j];
  }
  return true;
}

// The shape of elementwise step `v` from its operands' (NumPy broadcasting; bias_add's bias
// must match its axis).
absl::Status BroadcastStepShape(const Plan& plan, const Step& step, int v,
                                absl::Span<Shape> shapes) {
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", plan.fn, ": ", message));
  };
  Shape& out = shapes[v];
  if (step.form == OpForm::kBiasAdd) {
    out = shapes[step.args[0]];
    const int64_t bias = shapes[step.args[1]][0];
    if (bias != out[step.axis]) {
      return invalid(absl::StrCat(step.op_name, " ", plan.names[v], ": bias has ", bias,
                                  " elements but data axis ", step.axis, " has ", out[step.axis]));
    }
    return absl::OkStatus();
  }
  out.clear();
  for (int a : step.args) {
    if (!BroadcastInto(out, shapes[a])) {
      std::vector<std::string> operand_shapes;
      for (int b : step.args) operand_shapes.push_back(ShapeString(shapes[b]));
      return invalid(absl::StrCat(step.op_name, " ", plan.names[v], ": operand shapes ",
                                  absl::StrJoin(operand_shapes, ", "), " do not broadcast"));
    }
  }
  return absl::OkStatus();
}

absl::Status RunProgram(const Program& p, absl::Span<const TensorArg> args) {
  const Plan& plan = p.plan;
  const Lowered& lowered = p.lowered;
  const int np = plan.num_params;
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", plan.fn, ": ", message));
  };
  if (static_cast<int>(args.size()) != np + 1) {
    return invalid(absl::StrCat("kernel expects ", np + 1, " arguments (", np,
                                " parameters and 1 result), got ", args.size()));
  }
  auto arg_name = [&](int i) {
    return i < np ? absl::StrCat("argument ", i, " (", plan.names[i], ")")
                  : absl::StrCat("argument ", i, " (result 0)");
  };
  // Arguments against the declared types (dtype, rank, static dims).
  for (int i = 0; i <= np; ++i) {
    const int v = i < np ? i : plan.result;
    const TensorArg& a = args[i];
    if (a.dtype != plan.dtypes[v]) {
      return invalid(absl::StrCat(arg_name(i), " has dtype ", DTypeName(a.dtype), ", expected ",
                                  DTypeName(plan.dtypes[v])));
    }
    bool ok = static_cast<int>(a.shape.size()) == plan.rank(v);
    for (size_t d = 0; ok && d < a.shape.size(); ++d) {
      const DimExpr& declared = plan.dims[v][d];
      ok = a.shape[d] >= 0 && (!declared.is_constant() || declared.constant() == a.shape[d]);
    }
    if (!ok) {
      return invalid(absl::StrCat(arg_name(i), " has shape ", ShapeString(a.shape),
                                  ", which does not fit its type ", TypeString(plan, v)));
    }
  }
  // The broadcast shape program.
  absl::InlinedVector<Shape, 8> shapes(plan.dtypes.size());
  for (int i = 0; i < np; ++i) shapes[i].assign(args[i].shape.begin(), args[i].shape.end());
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    RETURN_IF_ERROR(BroadcastStepShape(plan, plan.steps[k], np + static_cast<int>(k),
                                       absl::MakeSpan(shapes)));
  }
  const TensorArg& out = args[np];
  const Shape& expected = shapes[plan.result];
  if (!std::equal(expected.begin(), expected.end(), out.shape.begin(), out.shape.end())) {
    return invalid(absl::StrCat(arg_name(np), " has shape ", ShapeString(out.shape),
                                ", expected the broadcast shape ", ShapeString(expected)));
  }
  if (out.num_elements() == 0) return absl::OkStatus();
  if (out.data == nullptr) return invalid(absl::StrCat(arg_name(np), " has no data"));
  for (int i = 0; i < np; ++i) {
    const TensorArg& a = args[i];
    if (a.num_elements() == 0) continue;
    if (a.data == nullptr) return invalid(absl::StrCat(arg_name(i), " has no data"));
    if (!Overlaps(a, out)) continue;
    // The only overlap the parallel inner loop allows: the very same elements.
    const bool same =
        a.data == out.data && DTypeSize(a.dtype) == DTypeSize(out.dtype) &&
        std::equal(a.shape.begin(), a.shape.end(), out.shape.begin(), out.shape.end());
    if (!same) {
      return invalid(absl::StrCat(arg_name(i),
                                  " overlaps the output without being the same buffer of the "
                                  "same shape"));
    }
  }

  // Per-slot strides over the output dims, then collapsed loop levels.
  const int rank = lowered.out_rank;
  const int depth = lowered.depth;
  const int slots = static_cast<int>(lowered.accesses.size()) + 1;
  absl::InlinedVector<int64_t, 48> st(static_cast<size_t>(slots) * std::max(rank, 1), 0);
  int64_t out_stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    st[d] = out_stride;
    out_stride *= out.shape[d];
  }
  for (int a = 0; a < slots - 1; ++a) {
    const Access& access = lowered.accesses[a];
    const absl::Span<const int64_t> shape = args[access.param].shape;
    int64_t contiguous = 1;
    for (int j = static_cast<int>(shape.size()) - 1; j >= 0; --j) {
      if (shape[j] != 1) st[(a + 1) * rank + access.pos[j]] = contiguous;
      contiguous *= shape[j];
    }
  }
  absl::InlinedVector<int64_t, 6> level_dims;
  absl::InlinedVector<int64_t, 48> level_strides;  // [level][slot]
  for (int d = 0; d < rank; ++d) {
    const int64_t n = out.shape[d];
    if (n == 1) continue;
    if (!level_dims.empty()) {
      const size_t last = level_dims.size() - 1;
      bool merge = true;
      for (int s = 0; s < slots && merge; ++s) {
        merge = level_strides[last * slots + s] == st[s * rank + d] * n;
      }
      if (merge) {
        level_dims[last] *= n;
        for (int s = 0; s < slots; ++s) level_strides[last * slots + s] = st[s * rank + d];
        continue;
      }
    }
    level_dims.push_back(n);
    for (int s = 0; s < slots; ++s) level_strides.push_back(st[s * rank + d]);
  }
  const int used = static_cast<int>(level_dims.size());
  absl::InlinedVector<int64_t, 6> dims(depth, 1);
  absl::InlinedVector<int64_t, 48> strides(static_cast<size_t>(slots) * depth, 0);
  for (int l = 0; l < used; ++l) {
    const int level = depth - used + l;
    dims[level] = level_dims[l];
    for (int s = 0; s < slots; ++s) strides[s * depth + level] = level_strides[l * slots + s];
  }
  // `fast` assumes the statically classified inner strides; a unit inner level takes any.
  const int inner = depth - 1;
  bool fast = true;
  for (int s = 0; s < slots; ++s) {
    const int64_t want = (s == 0 || lowered.accesses[s - 1].inner_contiguous) ? 1 : 0;
    int64_t& have = strides[s * depth + inner];
    if (dims[inner] == 1) have = want;
    fast = fast && have == want;
  }

  absl::InlinedVector<void*, 8> bases(slots);
  bases[0] = out.data;
  for (int a = 0; a < slots - 1; ++a) bases[a + 1] = args[lowered.accesses[a].param].data;
  const KernelFn fn = fast ? p.fast : p.generic;
  if (fn == nullptr) {
    return absl::InternalError(absl::StrCat("@", plan.fn,
                                            ": the inner strides of static shapes "
                                            "differ from the compiled ones"));
  }
  const int32_t flags = fn(bases.data(), dims.data(), strides.data());
  if ((flags & kFlagDivisionByZero) != 0) return invalid("integer division by zero");
  return absl::OkStatus();
}

class JitElementwiseInstance : public KernelInstance {
 public:
  explicit JitElementwiseInstance(std::shared_ptr<const Program> program)
      : program_(std::move(program)) {}
  absl::Status Run(absl::Span<const TensorArg> args) override {
    return RunProgram(*program_, args);
  }

 private:
  std::shared_ptr<const Program> program_;
};

class JitElementwiseKernel : public CompiledKernel {
 public:
  explicit JitElementwiseKernel(std::shared_ptr<const Program> program)
      : program_(std::move(program)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      absl::Span<const Tensor* const> constants) const override {
    // Nothing to prepack: constants are read like any argument.
    return std::make_unique<JitElementwiseInstance>(program_);
  }
  std::string Describe() const override { return program_->description; }

 private:
  std::shared_ptr<const Program> program_;
};

std::string Describe(const Plan& plan) {
  std::vector<std::string> ops;
  for (const Step& s : plan.steps) {
    const size_t dot = s.op_name.rfind('.');
    ops.push_back(dot == std::string::npos ? s.op_name : s.op_name.substr(dot + 1));
  }
  return absl::StrCat("jit[", absl::StrJoin(ops, ","), "]");
}

struct Prepared {
  Plan plan;
  Lowered lowered;
  BuiltModule built;
};

absl::StatusOr<Prepared> Prepare(const Function& primitive, LlvmJit& jit,
                                 const LlvmJitOptions& options) {
  Prepared p;
  ASSIGN_OR_RETURN(p.plan, Analyzer(primitive).Run());
  ASSIGN_OR_RETURN(p.lowered, Lowerer(p.plan).Run());
  p.built =
      BuildModule(p.plan, p.lowered, jit.UniqueSymbol(absl::StrCat("jit_", primitive.name())));
  RETURN_IF_ERROR(jit.Optimize(*p.built.module, options));
  return p;
}

// ===== The injective path ======================================================================
// Groups of elementwise ops plus injective ops (transpose, reshape, dyn.reshape, expand_dims,
// squeeze, strided_slice, dyn.strided_slice, take, concatenate, broadcast_to,
// dyn.broadcast_to), as TVM schedules them: ONE scalar loop nest over the output index space;
// the result's element at an index is evaluated by walking the expression back to the
// parameters, each op mapping its output index to its operands' indices:
//   elementwise  right-aligned broadcast (a unit dim reads index 0); bias: the data's axis
//   transpose    in[perm[j]] = out[j]
//   reshape      linearise over the result's dims, delinearise over the data's (run-time dims)
//   expand_dims  drop the new axes;  squeeze: insert 0 at the dropped dims
//   strided_slice  in[j] = start[j] + out[j] * stride[j] (start/stride computed by Run from the
//                attributes or, for dyn.strided_slice, from the run-time begin/end/strides)
//   take         read the index at the middle dims, resolve it by the mode (clip, wrap, fast)
//   concatenate  a branch per input on the axis index range; only that input is read
//   broadcast_to right-aligned broadcast
// Loads of a (value, index) pair are shared within one element; loop-invariant index
// arithmetic is hoisted by LLVM (O3). There are no intermediate buffers. The innermost loop
// carries llvm.loop.parallel_accesses (Run refuses any overlap of the output with an input),
// so LLVM vectorises it where that pays (contiguous reads, e.g. the rows of a take) without
// run-time alias checks; outer loops are neither vectorised nor unrolled (compile time).
// Reshape divides by run-time dims with multipliers computed by Run (a 64-bit multiply
// instead of a 64-bit divide per dim and element, exact below 2^32 elements); a second entry
// point with plain udiv serves element counts from 2^32 on.
//
// squeeze without axes drops the dims that are statically 1 (as the shape rule does at
// compile time); the reference kernel, run on concrete shapes, would also drop a symbolic dim
// that is 1 at run time and then miss the declared rank.
//
// Known gaps (Unimplemented, so the reference kernels run them): dyn.squeeze, dyn.unsqueeze,
// tile, nn.pad, image.resize2d; dyn.* operands computed inside the group; take in mode "fast"
// on computed indices.
//
// Run (per call, host): the shape program on concrete shapes (every op's shape rule, with the
// reference kernels' errors: element counts of reshape, squeezed dims that are not 1, slice
// strides of 0, broadcast_to targets, take on an empty axis and, in mode "fast", every index
// checked like the reference does even if no output element reads it); the run-time values of
// dyn.* operands are read from their arguments (parameters of the group, on the host); every
// intermediate must fit its declared type (the emitted code uses declared constant dims); then
// dims of every value and the slice starts/strides are passed to the entry point. The output
// must not overlap any input (the kernel reads inputs at permuted indices).

using Ints = absl::InlinedVector<int64_t, 8>;

struct InjectiveProgram {
  Plan plan;
  InjectiveLayout layout;
  std::unique_ptr<JitCode> code;
  KernelFn fn = nullptr;       // (bases, dims, aux)
  KernelFn fn_wide = nullptr;  // element counts >= 2^32 (layout.needs_wide only)
  std::string description;
};

InjectiveLayout MakeLayout(const Plan& plan) {
  InjectiveLayout layout;
  for (size_t v = 0; v < plan.dims.size(); ++v) {
    layout.dim_offset.push_back(layout.num_dims);
    layout.num_dims += static_cast<int>(plan.dims[v].size());
  }
  for (const Step& s : plan.steps) {
    const bool slice = s.op == JitOp::kStridedSlice || s.op == JitOp::kDynStridedSlice;
    const bool reshape = s.op == JitOp::kReshape || s.op == JitOp::kDynReshape;
    layout.aux_offset.push_back(slice || reshape ? layout.num_aux : -1);
    if (slice) layout.num_aux += 2 * plan.rank(s.args[0]);
    if (reshape) {
      layout.num_aux += plan.rank(s.args[0]);
      for (size_t k = 1; k < plan.dims[s.args[0]].size(); ++k) {
        layout.needs_wide |= !plan.dims[s.args[0]][k].is_constant();
      }
    }
  }
  return layout;
}

// The values of a 0-D or 1-D integer argument.
Ints HostInts(const TensorArg& a) {
  Ints out;
  const int64_t n = a.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (a.dtype) {
      case DType::kI8:
        out.push_back(static_cast<const int8_t*>(a.data)[i]);
        break;
      case DType::kU8:
        out.push_back(static_cast<const uint8_t*>(a.data)[i]);
        break;
      case DType::kI32:
        out.push_back(static_cast<const int32_t*>(a.data)[i]);
        break;
      default:
        out.push_back(static_cast<const int64_t*>(a.data)[i]);
        break;
    }
  }
  return out;
}

// Relay's reshape target (0 copies the input dim, one -1 is inferred) on concrete dims.
absl::StatusOr<Shape> ReshapeTarget(const Shape& in, const Ints& newshape) {
  Shape out;
  int infer_at = -1;
  int64_t total = 1, known = 1;
  for (int64_t d : in) total *= d;
  for (size_t i = 0; i < newshape.size(); ++i) {
    int64_t x = newshape[i];
    if (x == 0) {
      if (i >= in.size()) return absl::InvalidArgumentError("newshape 0 copies a missing dim");
      x = in[i];
    } else if (x == -1) {
      if (infer_at >= 0) return absl::InvalidArgumentError("newshape has more than one -1");
      infer_at = static_cast<int>(i);
      out.push_back(-1);
      continue;
    } else if (x < 0) {
      return absl::InvalidArgumentError(absl::StrCat("newshape value ", x, " is not supported"));
    }
    out.push_back(x);
    known *= x;
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot infer -1: ", total,
                                                     " elements do not split into ",
                                                     ShapeString(out)));
    }
    out[infer_at] = total / known;
  } else if (total != known) {
    return absl::InvalidArgumentError(absl::StrCat("element count mismatch: ", ShapeString(in),
                                                   " has ", total, " elements, ",
                                                   ShapeString(out), " has ", known));
  }
  return out;
}

// NumPy/Relay slicing on concrete dims (the arithmetic of the strided_slice shape rule):
// per data axis, the result length, and start / stride into aux.
absl::Status SliceShape(const Shape& in, const Ints& begin, const Ints& end, const Ints& strides,
                        const Ints& axes_attr, bool size_mode, Shape& out, int64_t* aux) {
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;  // shape_rules::kMaxDim
  const size_t n = begin.size();
  const int64_t rank = static_cast<int64_t>(in.size());
  if (end.size() != n) return absl::InvalidArgumentError("begin and end differ in length");
  if (!strides.empty() && strides.size() != 1 && strides.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("strides has ", strides.size(), " values; expected 1 or ", n));
  }
  Ints axes = axes_attr;
  if (axes.empty()) {
    if (static_cast<int64_t>(n) > rank) {
      return absl::InvalidArgumentError(absl::StrCat(n, " begin values for rank ", rank));
    }
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  } else if (axes.size() != n) {
    return absl::InvalidArgumentError("axes and begin differ in length");
  }
  absl::InlinedVector<bool, 8> seen(rank, false);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is out of range"));
    }
    if (a < 0) a += rank;
    if (seen[a]) return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is given twice"));
    seen[a] = true;
  }
  out = in;
  for (int64_t j = 0; j < rank; ++j) aux[2 * j] = 0, aux[2 * j + 1] = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = axes[i], d = in[a];
    int64_t b = begin[i], e = end[i];
    int64_t s = strides.empty() ? 1 : strides[strides.size() == 1 ? 0 : i];
    if (size_mode) {
      if (b < 0) b += d;
      e = e == -1 ? kMax : b + e;
      s = 1;
    }
    if (s == 0) return absl::InvalidArgumentError("strides must be non-zero");
    auto clamp = [&](int64_t x, int64_t lo, int64_t hi) {
      if (x >= kMax) return hi;
      if (x <= -kMax) return lo;
      if (x < 0) x += d;
      return std::min(std::max(x, lo), hi);
    };
    int64_t start, len;
    if (s > 0) {
      start = clamp(b, 0, d);
      len = (std::max<int64_t>(clamp(e, 0, d) - start, 0) + s - 1) / s;
    } else {
      start = clamp(b, -1, d - 1);
      len = (std::max<int64_t>(start - clamp(e, -1, d - 1), 0) + (-s) - 1) / (-s);
    }
    out[a] = len;
    aux[2 * a] = start;
    aux[2 * a + 1] = s;
  }
  return absl::OkStatus();
}

// The shape of injective step `v`; slices also fill their start/stride entries of aux.
absl::Status InjectiveStepShape(const Plan& plan, const Step& step, int v,
                                absl::Span<const TensorArg> args, absl::Span<Shape> shapes,
                                int64_t* aux) {
  const std::vector<int>& a = step.args;
  const Shape& in = shapes[a[0]];
  Shape& out = shapes[v];
  out.clear();
  switch (step.op) {
    case JitOp::kTranspose:
      for (int64_t p : step.ints) out.push_back(in[p]);
      return absl::OkStatus();
    case JitOp::kReshape:
    case JitOp::kDynReshape: {
      const Ints target = step.op == JitOp::kReshape ? Ints(step.ints.begin(), step.ints.end())
                                                     : HostInts(args[a[1]]);
      if (static_cast<int>(target.size()) != plan.rank(v)) {
        return absl::InvalidArgumentError(absl::StrCat("newshape has ", target.size(),
                                                       " values for a result of rank ",
                                                       plan.rank(v)));
      }
      ASSIGN_OR_RETURN(out, ReshapeTarget(in, target));
      for (size_t k = 1; k < in.size(); ++k) {
        const uint64_t d = static_cast<uint64_t>(in[k]);
        aux[k] = d <= 1 ? 0 : static_cast<int64_t>(UINT64_MAX / d + 1);
      }
      return absl::OkStatus();
    }
    case JitOp::kExpandDims:
      out = in;
      out.insert(out.begin() + step.axis, step.num, 1);
      return absl::OkStatus();
    case JitOp::kSqueeze:
      for (size_t j = 0; j < in.size(); ++j) {
        if (step.ints[j] == 0) {
          out.push_back(in[j]);
        } else if (in[j] != 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("cannot squeeze axis ", j, " of size ", in[j]));
        }
      }
      return absl::OkStatus();
    case JitOp::kStridedSlice:
      return SliceShape(in, Ints(step.begin.begin(), step.begin.end()),
                        Ints(step.end.begin(), step.end.end()),
                        Ints(step.strides.begin(), step.strides.end()),
                        Ints(step.axes.begin(), step.axes.end()), step.size_mode, out, aux);
    case JitOp::kDynStridedSlice:
      return SliceShape(in, HostInts(args[a[1]]), HostInts(args[a[2]]), HostInts(args[a[3]]), {},
                        step.size_mode, out, aux);
    case JitOp::kTake: {
      const Shape& indices = shapes[a[1]];
      const int64_t axis = step.axis, n = in[axis];
      out.assign(in.begin(), in.begin() + axis);
      out.insert(out.end(), indices.begin(), indices.end());
      out.insert(out.end(), in.begin() + axis + 1, in.end());
      int64_t outer = 1, num_indices = 1;
      for (int64_t j = 0; j < axis; ++j) outer *= in[j];
      for (int64_t d : indices) num_indices *= d;
      if (outer == 0 || num_indices == 0) return absl::OkStatus();  // nothing is resolved
      if (n <= 0) {
        return absl::InvalidArgumentError("take: no index is in range for an axis of size 0");
      }
      if (step.mode != TakeMode::kFast) return absl::OkStatus();
      for (int64_t i : HostInts(args[a[1]])) {
        if (i < -n || i >= n) {
          return absl::InvalidArgumentError(
              absl::StrCat("take: index ", i, " is out of range for an axis of size ", n));
        }
      }
      return absl::OkStatus();
    }
    case JitOp::kConcatenate:
      out = in;
      for (size_t i = 1; i < a.size(); ++i) {
        const Shape& s = shapes[a[i]];
        for (size_t d = 0; d < s.size(); ++d) {
          if (static_cast<int64_t>(d) == step.axis) {
            out[d] += s[d];
          } else if (s[d] != out[d]) {
            return absl::InvalidArgumentError(absl::StrCat(
                "concatenate: input ", i, " has ", s[d], " at axis ", d, ", expected ", out[d]));
          }
        }
      }
      return absl::OkStatus();
    case JitOp::kBroadcastTo:
    case JitOp::kDynBroadcastTo: {
      const Ints target = step.op == JitOp::kBroadcastTo ? Ints(step.ints.begin(), step.ints.end())
                                                         : HostInts(args[a[1]]);
      if (static_cast<int>(target.size()) != plan.rank(v)) {
        return absl::InvalidArgumentError(absl::StrCat("broadcast_to: target has ", target.size(),
                                                       " dims for a result of rank ", plan.rank(v)));
      }
      const size_t offset = target.size() - in.size();
      for (size_t j = 0; j < target.size(); ++j) {
        const bool bad = target[j] < 0 || (j >= offset && in[j - offset] != 1 &&
                                           in[j - offset] != target[j]);
        if (bad) {
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot broadcast ", ShapeString(in), " to ", ShapeString(target)));
        }
      }
      out.assign(target.begin(), target.end());
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("not an injective op");
  }
}

absl::Status RunInjective(const InjectiveProgram& p, absl::Span<const TensorArg> args) {
  const Plan& plan = p.plan;
  const int np = plan.num_params;
  auto invalid = [&](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("@", plan.fn, ": ", message));
  };
  if (static_cast<int>(args.size()) != np + 1) {
    return invalid(absl::StrCat("kernel expects ", np + 1, " arguments (", np,
                                " parameters and 1 result), got ", args.size()));
  }
  for (int i = 0; i <= np; ++i) {
    const int v = i < np ? i : plan.result;
    if (args[i].dtype != plan.dtypes[v] || static_cast<int>(args[i].shape.size()) != plan.rank(v)) {
      return invalid(absl::StrCat("argument ", i, " is ", DTypeName(args[i].dtype),
                                  ShapeString(args[i].shape), ", which does not fit its type ",
                                  TypeString(plan, v)));
    }
    if (args[i].data == nullptr && args[i].num_elements() > 0) {
      return invalid(absl::StrCat("argument ", i, " has no data"));
    }
  }
  // The shape program; every value must fit its declared type.
  absl::InlinedVector<Shape, 8> shapes(plan.dtypes.size());
  absl::InlinedVector<int64_t, 16> aux(p.layout.num_aux, 0);
  for (int i = 0; i < np; ++i) shapes[i].assign(args[i].shape.begin(), args[i].shape.end());
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step& step = plan.steps[k];
    const int v = np + static_cast<int>(k);
    if (step.form != OpForm::kInjective) {
      RETURN_IF_ERROR(BroadcastStepShape(plan, step, v, absl::MakeSpan(shapes)));
    } else {
      const int offset = p.layout.aux_offset[k];
      absl::Status s = InjectiveStepShape(plan, step, v, args, absl::MakeSpan(shapes),
                                          offset >= 0 ? aux.data() + offset : nullptr);
      if (!s.ok()) return invalid(absl::StrCat(step.op_name, " ", plan.names[v], ": ", s.message()));
    }
  }
  for (size_t v = 0; v < shapes.size(); ++v) {
    bool ok = static_cast<int>(shapes[v].size()) == plan.rank(v);
    for (size_t d = 0; ok && d < shapes[v].size(); ++d) {
      const DimExpr& declared = plan.dims[v][d];
      ok = shapes[v][d] >= 0 && (!declared.is_constant() || declared.constant() == shapes[v][d]);
    }
    if (!ok) {
      return invalid(absl::StrCat(plan.names[v], " has shape ", ShapeString(shapes[v]),
                                  ", which does not fit its type ", TypeString(plan, v)));
    }
  }
  const TensorArg& out = args[np];
  const Shape& expected = shapes[plan.result];
  if (!std::equal(expected.begin(), expected.end(), out.shape.begin(), out.shape.end())) {
    return invalid(absl::StrCat("argument ", np, " (result 0) has shape ", ShapeString(out.shape),
                                ", expected ", ShapeString(expected)));
  }
  if (out.num_elements() == 0) return absl::OkStatus();
  for (int i = 0; i < np; ++i) {
    if (args[i].num_elements() == 0) continue;
    if (Overlaps(args[i], out)) {
      return invalid(absl::StrCat("argument ", i, " (", plan.names[i],
                                  ") overlaps the output; the injective JIT reads its inputs at "
                                  "permuted indices"));
    }
  }
  absl::InlinedVector<int64_t, 64> dims(p.layout.num_dims);
  for (size_t v = 0; v < shapes.size(); ++v) {
    std::copy(shapes[v].begin(), shapes[v].end(), dims.begin() + p.layout.dim_offset[v]);
  }
  absl::InlinedVector<void*, 8> bases(np + 1);
  bases[0] = out.data;
  for (int i = 0; i < np; ++i) bases[i + 1] = args[i].data;
  bool wide = false;
  for (const Shape& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    wide |= n >= (int64_t{1} << 32);
  }
  const KernelFn fn = wide && p.fn_wide != nullptr ? p.fn_wide : p.fn;
  const int32_t flags = fn(bases.data(), dims.data(), aux.data());
  if ((flags & kFlagDivisionByZero) != 0) return invalid("integer division by zero");
  if ((flags & kFlagIndexOutOfRange) != 0) return invalid("take: index out of range");
  return absl::OkStatus();
}

class JitInjectiveInstance : public KernelInstance {
 public:
  explicit JitInjectiveInstance(std::shared_ptr<const InjectiveProgram> program)
      : program_(std::move(program)) {}
  absl::Status Run(absl::Span<const TensorArg> args) override {
    return RunInjective(*program_, args);
  }

 private:
  std::shared_ptr<const InjectiveProgram> program_;
};

class JitInjectiveKernel : public CompiledKernel {
 public:
  explicit JitInjectiveKernel(std::shared_ptr<const InjectiveProgram> program)
      : program_(std::move(program)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      absl::Span<const Tensor* const>) const override {
    return std::make_unique<JitInjectiveInstance>(program_);
  }
  std::string Describe() const override { return program_->description; }

 private:
  std::shared_ptr<const InjectiveProgram> program_;
};

// Phase 1 for the injective path: the plan, if the group has at least one injective op (else
// it is the elementwise path's).
absl::StatusOr<Plan> AnalyzeInjective(const Function& primitive) {
  ASSIGN_OR_RETURN(Plan plan, Analyzer(primitive, /*allow_injective=*/true).Run());
  // The loop body evaluates every use of a value at its own index: bound the expression tree.
  std::vector<size_t> terms(plan.dtypes.size(), 1);
  bool injective = false;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    size_t n = 1;
    for (int a : plan.steps[k].args) n += terms[a];
    terms[plan.num_params + k] = std::min(n, kMaxExprs + 1);
    injective |= plan.steps[k].form == OpForm::kInjective;
  }
  if (!injective) {
    return absl::UnimplementedError(
        absl::StrCat("@", primitive.name(), ": no injective op (the elementwise JIT's group)"));
  }
  if (terms[plan.result] > kMaxExprs) {
    return absl::UnimplementedError(absl::StrCat(
        "@", primitive.name(), ": the fused expression needs more than ", kMaxExprs, " terms"));
  }
  return plan;
}

BuiltModule BuildInjectiveModule(const Plan& plan, const InjectiveLayout& layout,
                                 const std::string& symbol) {
  BuiltModule m;
  m.context = std::make_unique<llvm::LLVMContext>();
  m.module = std::make_unique<llvm::Module>(symbol, *m.context);
  m.fast_name = symbol;
  Lowered lowered;  // the injective entry does not use the elementwise accesses
  lowered.out_rank = plan.rank(plan.result);
  lowered.depth = std::max(lowered.out_rank, 1);
  Emitter emitter(plan, lowered, *m.module);
  emitter.EmitInjectiveEntry(symbol, layout, /*wide=*/false);
  if (layout.needs_wide) {
    m.generic_name = symbol + "_wide";
    emitter.EmitInjectiveEntry(m.generic_name, layout, /*wide=*/true);
  }
  return m;
}

}  // namespace

bool IsJitElementwise(const Function& primitive) {
  absl::StatusOr<Plan> plan = Analyzer(primitive).Run();
  return plan.ok() && Lowerer(*plan).Run().ok();
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitElementwise(
    const Function& primitive, const JitElementwiseOptions& options) {
  ASSIGN_OR_RETURN(LlvmJit * jit, LlvmJit::Get());
  LlvmJitOptions jit_options;
  jit_options.dump_ir = options.dump_llvm_ir;
  ASSIGN_OR_RETURN(Prepared prepared, Prepare(primitive, *jit, jit_options));
  auto program = std::make_shared<Program>();
  program->plan = std::move(prepared.plan);
  program->lowered = std::move(prepared.lowered);
  program->description = Describe(program->plan);
  std::vector<std::string> symbols = {prepared.built.fast_name};
  if (!prepared.built.generic_name.empty()) symbols.push_back(prepared.built.generic_name);
  ASSIGN_OR_RETURN(program->code, jit->Add(std::move(prepared.built.context),
                                           std::move(prepared.built.module), symbols));
  program->fast = reinterpret_cast<KernelFn>(program->code->symbol(0));
  if (symbols.size() > 1) program->generic = reinterpret_cast<KernelFn>(program->code->symbol(1));
  return std::make_unique<JitElementwiseKernel>(std::move(program));
}

bool IsJitInjective(const Function& primitive) { return AnalyzeInjective(primitive).ok(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileJitInjective(
    const Function& primitive, const JitElementwiseOptions& options) {
  ASSIGN_OR_RETURN(LlvmJit * jit, LlvmJit::Get());
  LlvmJitOptions jit_options;
  jit_options.dump_ir = options.dump_llvm_ir;
  auto program = std::make_shared<InjectiveProgram>();
  ASSIGN_OR_RETURN(program->plan, AnalyzeInjective(primitive));
  program->layout = MakeLayout(program->plan);
  program->description = Describe(program->plan);
  BuiltModule built = BuildInjectiveModule(
      program->plan, program->layout, jit->UniqueSymbol(absl::StrCat("jit_", primitive.name())));
  RETURN_IF_ERROR(jit->Optimize(*built.module, jit_options));
  std::vector<std::string> symbols = {built.fast_name};
  if (!built.generic_name.empty()) symbols.push_back(built.generic_name);
  ASSIGN_OR_RETURN(program->code,
                   jit->Add(std::move(built.context), std::move(built.module), symbols));
  program->fn = reinterpret_cast<KernelFn>(program->code->symbol(0));
  if (symbols.size() > 1) program->fn_wide = reinterpret_cast<KernelFn>(program->code->symbol(1));
  return std::make_unique<JitInjectiveKernel>(std::move(program));
}

absl::StatusOr<std::string> JitElementwiseOptimizedIr(const Function& primitive) {
  ASSIGN_OR_RETURN(LlvmJit * jit, LlvmJit::Get());
  ASSIGN_OR_RETURN(Prepared prepared, Prepare(primitive, *jit, {}));
  return LlvmJit::PrintModule(*prepared.built.module);
}

}  // namespace hetpass
