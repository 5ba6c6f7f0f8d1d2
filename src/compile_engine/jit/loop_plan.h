// The CPU JIT's target-independent loop plan (see lowering.cc for the algorithm): what a
// primitive function is analysed into (phase 1: Plan, Step), its lowering to accesses and
// expressions (phase 2: Lowered) or to the injective entry point's layout (InjectiveLayout),
// and the lowering table. Nothing here knows LLVM: a code generator consumes a plan
// (llvm_emitter.h builds host LLVM IR from it; an NVPTX generator would read the same plan).
#ifndef HETPASS_COMPILE_ENGINE_JIT_LOOP_PLAN_H_
#define HETPASS_COMPILE_ENGINE_JIT_LOOP_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/ir/dim_expr.h"
#include "passes/ir/dtype.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_ids.h"

namespace hetpass::jit_internal {

// clang-format off
enum class JitOp : uint8_t {
  // The elementwise ops of passes/shape_funcs/elementwise_ops.def, named as their OpIds (a row
  // added there appears here, and -Wswitch points at the emitter's switch).
#define HETPASS_UNARY(id, name, cls, expr, doc) id,
#define HETPASS_BINARY(id, name, cls, expr, doc) id,
#define HETPASS_COMPARE(id, name, expr, doc) id,
#include "passes/shape_funcs/elementwise_ops.def"
  kBiasAdd, kWhere, kCast,
  // Injective ops (only on the injective path, CompileJitInjective).
  kTranspose, kReshape, kDynReshape, kExpandDims, kSqueeze, kStridedSlice, kDynStridedSlice,
  kTake, kConcatenate, kBroadcastTo, kDynBroadcastTo, kLayoutTransform,
};
// clang-format on

// Operand / result typing of a lowering.
enum class OpForm : uint8_t {
  kUnaryNumeric,   // T -> T, T numeric
  kUnaryFloat,     // T -> T, T f32 or f64
  kBinaryNumeric,  // (T, T) -> T, broadcasting
  kBinaryFloat,    // (T, T) -> T, T f32 or f64
  kBinaryInteger,  // (T, T) -> T, T an integer dtype
  kCompare,        // (T, T) -> bool
  kBiasAdd,        // (T[..], T[k]) -> T[..], T numeric
  kWhere,          // (C, T, T) -> T
  kCast,           // S -> attribute dtype
  kInjective,      // data movement: the result's element at an index is an element of the data
                   // (or of one of the concatenated inputs) at an index computed from it
};

inline bool SupportedDType(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF64:
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}
inline bool NumericDType(DType t) { return SupportedDType(t) && t != DType::kBool; }
inline bool FloatDType(DType t) { return t == DType::kF32 || t == DType::kF64; }
inline bool SignedIntDType(DType t) { return IsInteger(t) && !IsUnsigned(t); }

// Error flag bits returned by the generated entry points.
inline constexpr int32_t kFlagDivisionByZero = 1;
inline constexpr int32_t kFlagIndexOutOfRange = 2;  // take in mode "fast" (Run checks first)

// Beyond this many exprs (values recomputed along different broadcast paths) the group is left
// to another backend rather than emitting a huge loop body.
inline constexpr size_t kMaxExprs = 4096;

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
  bool divides_integers = false;  // an integer divide / mod / fmod (the zero-divisor flag)
  // Every parameter and result dim is a constant: the static inner-stride guess is exact, so
  // `fast` always applies and `generic` is not emitted.
  bool static_shapes = true;
};

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

// ===== The lowering table and the target-independent phases (lowering.cc) ======================

// One row of the lowering table: a registry op the JIT emits, as which JitOp and typed how.
struct Lowering {
  OpId op;
  JitOp code;
  OpForm form;
};
// nullptr for ops the JIT does not emit.
const Lowering* FindLowering(OpId op);

// Phase 1: the plan of a primitive function, or Unimplemented naming the op / dtype the JIT
// does not take. `allow_injective`: accept the injective rows too (the injective path).
absl::StatusOr<Plan> AnalyzeGroup(const Function& primitive, bool allow_injective = false);
// Phase 1 for the injective path: the plan, if the group has at least one injective op (else it
// is the elementwise path's) and its expression tree stays within kMaxExprs terms.
absl::StatusOr<Plan> AnalyzeInjective(const Function& primitive);
// Phase 2 for the elementwise path: the expression DAG and the accesses.
absl::StatusOr<Lowered> LowerPlan(const Plan& plan);
// Phase 2 for the injective path: where its entry point finds each value's dims and each
// step's run-time parameters.
InjectiveLayout MakeLayout(const Plan& plan);
// "jit[add,relu]": the ops of the plan, for Describe().
std::string DescribePlan(const Plan& plan);

}  // namespace hetpass::jit_internal

#endif  // HETPASS_COMPILE_ENGINE_JIT_LOOP_PLAN_H_
