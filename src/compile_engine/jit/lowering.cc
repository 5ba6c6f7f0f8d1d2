// The CPU JIT's algorithm, and its target-independent phases 1 and 2: the lowering table, the
// analysis of a primitive function into a loop plan and its lowering (loop_plan.h). Phase 3 is
// llvm_emitter.cc, phase 4 elementwise_kernel.cc and injective_kernel.cc (kernels.h: the API).
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
#include "compile_engine/jit/loop_plan.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/shape_funcs/channel_layout.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass::jit_internal {

// ===== The lowering table ======================================================================
// (JitOp, OpForm, Step, Plan and the lowered form live in loop_plan.h, shared with the emitter.)
// The one place that maps registry ops to generated code. Which ops are candidates at all is
// the registry's answer (fusion pattern elementwise or broadcast); this table says which of them
// this backend can emit and with which operand dtypes.

namespace {

constexpr OpForm UnaryForm(ElementwiseDTypes d) {
  return d == ElementwiseDTypes::kFloat ? OpForm::kUnaryFloat : OpForm::kUnaryNumeric;
}
constexpr OpForm BinaryForm(ElementwiseDTypes d) {
  return d == ElementwiseDTypes::kFloat     ? OpForm::kBinaryFloat
         : d == ElementwiseDTypes::kInteger ? OpForm::kBinaryInteger
                                            : OpForm::kBinaryNumeric;
}

constexpr Lowering kLowerings[] = {
    // Every row of elementwise_ops.def, typed by its dtype class.
#define HETPASS_UNARY(id, name, cls, expr, doc) \
  {OpId::id, JitOp::id, UnaryForm(ElementwiseDTypes::cls)},
#define HETPASS_BINARY(id, name, cls, expr, doc) \
  {OpId::id, JitOp::id, BinaryForm(ElementwiseDTypes::cls)},
#define HETPASS_COMPARE(id, name, expr, doc) {OpId::id, JitOp::id, OpForm::kCompare},
#include "passes/shape_funcs/elementwise_ops.def"
    {OpId::kNnBiasAdd, JitOp::kBiasAdd, OpForm::kBiasAdd},
    {OpId::kWhere, JitOp::kWhere, OpForm::kWhere},
    {OpId::kCast, JitOp::kCast, OpForm::kCast},
    {OpId::kTranspose, JitOp::kTranspose, OpForm::kInjective},
    {OpId::kReshape, JitOp::kReshape, OpForm::kInjective},
    {OpId::kDynReshape, JitOp::kDynReshape, OpForm::kInjective},
    {OpId::kExpandDims, JitOp::kExpandDims, OpForm::kInjective},
    {OpId::kSqueeze, JitOp::kSqueeze, OpForm::kInjective},
    {OpId::kStridedSlice, JitOp::kStridedSlice, OpForm::kInjective},
    {OpId::kDynStridedSlice, JitOp::kDynStridedSlice, OpForm::kInjective},
    {OpId::kTake, JitOp::kTake, OpForm::kInjective},
    {OpId::kConcatenate, JitOp::kConcatenate, OpForm::kInjective},
    {OpId::kBroadcastTo, JitOp::kBroadcastTo, OpForm::kInjective},
    {OpId::kDynBroadcastTo, JitOp::kDynBroadcastTo, OpForm::kInjective},
    {OpId::kLayoutTransform, JitOp::kLayoutTransform, OpForm::kInjective},
};

}  // namespace

const Lowering* FindLowering(OpId op) {
  for (const Lowering& l : kLowerings) {
    if (l.op == op) return &l;
  }
  return nullptr;
}

namespace {

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

// ===== Phase 1: analysis (Step and Plan: loop_plan.h) ===========================================

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
    const Lowering* lowering = FindLowering(OpIdOf(op));
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
      case OpForm::kBinaryInteger:
        RETURN_IF_ERROR(same_dtype(a[0], a[1]));
        if (!SupportedDType(in) || !IsInteger(in)) return Unsupported(step, in);
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
        // Run computes the target with reshape's 0-copies rule; allowzero is left to others.
        if (attrs.GetBool("allowzero")) {
          return Unimplemented(absl::StrCat(ctx, ": allowzero is not supported by the CPU JIT"));
        }
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
      case JitOp::kLayoutTransform: {
        // ints = {source block, destination block}, 0 for NCHW (channel_layout.h).
        const std::optional<int64_t> src = ParseChannelLayout(attrs.GetString("src_layout"));
        const std::optional<int64_t> dst = ParseChannelLayout(attrs.GetString("dst_layout"));
        if (!src || !dst || rank != (*src == 0 ? 4 : 5)) {
          return Invalid(absl::StrCat(ctx, ": not a layout transform of a rank-", rank, " tensor"));
        }
        step.ints = {*src, *dst};
        return expect_rank(*dst == 0 ? 4 : 5);
      }
      default:
        return absl::InternalError(absl::StrCat(ctx, ": not an injective op"));
    }
  }

  const Function& f_;
  const bool allow_injective_;
  Plan plan_;
  absl::flat_hash_map<const Value*, int> ids_;
};

// ===== Phase 2: lowering to accesses and exprs (loop_plan.h); phase 3 is llvm_emitter.cc =====

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
      const bool divides = s.op == JitOp::kDivide || s.op == JitOp::kMod || s.op == JitOp::kFmod;
      if (divides && !FloatDType(plan_.dtypes[s.args[0]])) {
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

}  // namespace

absl::StatusOr<Plan> AnalyzeGroup(const Function& primitive, bool allow_injective) {
  return Analyzer(primitive, allow_injective).Run();
}

absl::StatusOr<Lowered> LowerPlan(const Plan& plan) { return Lowerer(plan).Run(); }

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

std::string DescribePlan(const Plan& plan) {
  std::vector<std::string> ops;
  for (const Step& s : plan.steps) {
    const size_t dot = s.op_name.rfind('.');
    ops.push_back(dot == std::string::npos ? s.op_name : s.op_name.substr(dot + 1));
  }
  return absl::StrCat("jit[", absl::StrJoin(ops, ","), "]");
}

}  // namespace hetpass::jit_internal
