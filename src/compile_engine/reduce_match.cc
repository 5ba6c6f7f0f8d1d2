// Matching of reduction and softmax groups and the checks of their arguments (see
// reduce_match.h): shared by the host's native kernels and the cuda device's NVRTC kernels, so
// that both take exactly the same groups with the same semantics.
#include "compile_engine/reduce_match.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "shape_funcs/concrete_shapes.h"

namespace hetpass::reduce_match {
namespace {

// ---- ops bound to loops --------------------------------------------------------------------

struct StepOp {
  OpId id;
  StepKind kind;
  int arity;
  bool scalar_may_be_left;  // op(c, x) is allowed as well as op(x, c)
  bool extended;            // only with MatchReduce's `extended` (the host kernels lack it)
};
constexpr StepOp kStepOps[] = {
    {OpId::kNegative, StepKind::kNegative, 1, false, false},
    {OpId::kAbs, StepKind::kAbs, 1, false, false},
    {OpId::kAdd, StepKind::kAdd, 2, true, false},
    {OpId::kSubtract, StepKind::kSubtract, 2, true, false},
    {OpId::kMultiply, StepKind::kMultiply, 2, true, false},
    {OpId::kDivide, StepKind::kDivide, 2, true, false},
    {OpId::kPower, StepKind::kPower, 2, false, false},
    {OpId::kNnRelu, StepKind::kRelu, 1, false, true},
    {OpId::kExp, StepKind::kExp, 1, false, true},
    {OpId::kSigmoid, StepKind::kSigmoid, 1, false, true},
    {OpId::kTanh, StepKind::kTanh, 1, false, true},
    {OpId::kSqrt, StepKind::kSqrt, 1, false, true},
    {OpId::kLog, StepKind::kLog, 1, false, true},
    {OpId::kFloor, StepKind::kFloor, 1, false, true},
    {OpId::kCeil, StepKind::kCeil, 1, false, true},
    {OpId::kMaximum, StepKind::kMaximum, 2, true, true},
    {OpId::kMinimum, StepKind::kMinimum, 2, true, true},
};
constexpr std::pair<OpId, ReduceKind> kReduceOps[] = {
    {OpId::kSum, ReduceKind::kSum}, {OpId::kMean, ReduceKind::kMean}, {OpId::kProd, ReduceKind::kProd},
    {OpId::kMax, ReduceKind::kMax}, {OpId::kMin, ReduceKind::kMin},
};
constexpr OpId kSoftmaxOp = OpId::kNnSoftmax;

const OpDef* CallOp(const Node& n) {
  return n.kind() == NodeKind::kCall && n.num_results() == 1 ? n.op() : nullptr;
}

// ---- match ----------------------------------------------------------------------------------

Signature MakeSignature(const Function& f) {
  Signature s;
  s.function = "@" + f.name();
  s.num_params = f.body().num_params();
  for (const auto& p : f.body().params()) s.param_names.push_back("%" + p->name());
  s.scalar_rank.assign(s.num_params, -1);
  return s;
}

int ParamOf(const Block& body, const Value* v) {
  return v->is_param() && v->param_block() == &body ? v->index() : -1;
}

bool IsF32(const Type& t) { return t.is_tensor() && t.dtype() == DType::kF32; }

// A parameter usable as a step's scalar next to a value of rank `value_rank`: f32, every dim
// the constant 1, rank <= value_rank (the broadcast leaves the value's shape alone).
bool IsScalarParam(const Block& body, const Value* v, int value_rank) {
  if (ParamOf(body, v) < 0 || !IsF32(v->type()) || v->type().rank() > value_rank) {
    return false;
  }
  for (const DimExpr& d : v->type().shape()) {
    if (!d.is_constant() || d.constant() != 1) return false;
  }
  return true;
}

// `n` as a step applied to `cur` (of rank `rank`), or nullopt. Result types need no check:
// every step and reduction keeps its operand's dtype (the registry's rules).
std::optional<Step> MatchStep(const Node& n, const Block& body, const Value* cur, int rank,
                              Signature& sig, bool extended) {
  const OpDef* op = CallOp(n);
  if (op == nullptr) return std::nullopt;
  for (const StepOp& s : kStepOps) {
    if (OpIdOf(*op) != s.id || n.num_operands() != s.arity || (s.extended && !extended)) continue;
    if (s.arity == 1) {
      if (n.operand(0) != cur) return std::nullopt;
      return Step{s.kind};
    }
    if (s.kind == StepKind::kMultiply && n.operand(0) == cur && n.operand(1) == cur) {
      return Step{StepKind::kSquare};
    }
    const bool left = n.operand(1) == cur && n.operand(0) != cur;
    if (left && !s.scalar_may_be_left) return std::nullopt;
    if (!left && n.operand(0) != cur) return std::nullopt;
    const Value* c = n.operand(left ? 0 : 1);
    if (!IsScalarParam(body, c, rank)) return std::nullopt;
    const int p = ParamOf(body, c);
    sig.scalar_rank[p] = c->type().rank();
    return Step{s.kind, p, left};
  }
  return std::nullopt;
}

// The reduced-axis mask of a reduction node over rank `rank` (reduce.cc's rules), or nullopt
// for attributes the registry rejects (an axis out of range or given twice).
std::optional<std::vector<bool>> ReducedAxes(const Node& n, int rank, bool* keepdims) {
  absl::StatusOr<Attrs> attrs = n.op()->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  *keepdims = attrs->GetBool("keepdims");
  return ReducedAxisMask(attrs->GetIntList("axis"), attrs->GetBool("exclude"), rank);
}

bool Adjacent(const std::vector<bool>& reduced) {
  const auto first = std::find(reduced.begin(), reduced.end(), true);
  const auto end = std::find(first, reduced.end(), false);
  return std::find(end, reduced.end(), true) == reduced.end();
}

std::optional<ReduceGroup> MatchReduceFrom(const Function& f, int data, bool extended) {
  const Block& body = f.body();
  ReduceGroup g;
  g.sig = MakeSignature(f);
  g.data = data;
  const Type& t = body.param(data)->type();
  // f32 with steps; with `extended` also f64 / i32 / i64 without steps (the device kernels
  // compute those in double, as the reference).
  const DType dt = t.is_tensor() ? t.dtype() : DType::kF32;
  const bool other_dtype = extended && (dt == DType::kF64 || dt == DType::kI32 || dt == DType::kI64);
  if (!IsF32(t) && !other_dtype) return std::nullopt;
  g.dtype = dt;
  g.rank = t.rank();
  const Value* cur = body.param(data);
  int rank = g.rank;
  bool have_reduce = false;
  std::vector<std::string> ops;
  for (const auto& node : body.nodes()) {
    const OpDef* op = CallOp(*node);
    if (op == nullptr) return std::nullopt;
    ops.push_back(op->name());
    if (std::optional<Step> s = MatchStep(*node, body, cur, rank, g.sig, extended)) {
      (have_reduce ? g.epilogue : g.prologue).push_back(*s);
      cur = node->result();
      continue;
    }
    const auto* r = std::find_if(std::begin(kReduceOps), std::end(kReduceOps),
                                 [&](const auto& e) { return e.first == OpIdOf(*op); });
    if (have_reduce || r == std::end(kReduceOps) || node->num_operands() != 1 ||
        node->operand(0) != cur) {
      return std::nullopt;
    }
    std::optional<std::vector<bool>> reduced = ReducedAxes(*node, rank, &g.keepdims);
    if (!reduced || (!extended && !Adjacent(*reduced))) return std::nullopt;
    g.reduced = *std::move(reduced);
    g.kind = r->second;
    rank =
        g.keepdims ? rank : static_cast<int>(std::count(g.reduced.begin(), g.reduced.end(), false));
    have_reduce = true;
    cur = node->result();
  }
  if (!have_reduce || body.results().size() != 1 || body.results()[0] != cur) return std::nullopt;
  if (g.dtype != DType::kF32 && (!g.prologue.empty() || !g.epilogue.empty())) return std::nullopt;
  // The data parameter feeds the chain only (not also a step's scalar).
  if (g.sig.scalar_rank[data] >= 0) return std::nullopt;
  g.ops = absl::StrJoin(ops, ",");
  return g;
}

}  // namespace

std::optional<ReduceGroup> MatchReduce(const Function& f, bool extended) {
  if (!IsPrimitive(f) || f.body().nodes().empty()) return std::nullopt;
  // The chain starts at a parameter of the first binding; try each in operand order.
  const Node& first = *f.body().nodes()[0];
  for (const Value* v : first.operands()) {
    const int p = ParamOf(f.body(), v);
    if (p < 0) continue;
    if (std::optional<ReduceGroup> g = MatchReduceFrom(f, p, extended)) return g;
  }
  return std::nullopt;
}

std::optional<SoftmaxGroup> MatchSoftmax(const Function& f) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  const OpDef* op = CallOp(n);
  if (op == nullptr || OpIdOf(*op) != kSoftmaxOp || n.num_operands() != 1 ||
      body.results()[0] != n.result() || ParamOf(body, n.operand(0)) != 0 ||
      body.num_params() != 1) {
    return std::nullopt;
  }
  const Type& t = body.param(0)->type();
  if (!IsF32(t) || t.rank() < 1) return std::nullopt;
  absl::StatusOr<Attrs> attrs = op->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  int64_t axis = attrs->GetInt("axis");
  if (axis < -t.rank() || axis >= t.rank()) return std::nullopt;
  SoftmaxGroup g;
  g.sig = MakeSignature(f);
  g.rank = t.rank();
  g.axis = static_cast<int>(axis < 0 ? axis + t.rank() : axis);
  return g;
}

// ---- argument checks ------------------------------------------------------------------------

std::string ShapeStr(absl::Span<const int64_t> shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ", "));
}

absl::Status CheckCount(const Signature& sig, absl::Span<const TensorArg> args) {
  if (static_cast<int>(args.size()) == sig.num_params + 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d", sig.function,
                      sig.num_params + 1, sig.num_params, args.size()));
}

absl::Status CheckTensor(const Signature& sig, const TensorArg& t, const std::string& name,
                         int rank, DType dtype) {
  if (t.dtype != dtype || static_cast<int>(t.shape.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be an %s tensor of rank %d, got %s%s", sig.function, name,
                        DTypeName(dtype), rank, DTypeName(t.dtype), ShapeStr(t.shape)));
  }
  for (int64_t d : t.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s has a negative dim: %s", sig.function, name, ShapeStr(t.shape)));
    }
  }
  if (t.data == nullptr && t.num_elements() > 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s has no data", sig.function, name));
  }
  return absl::OkStatus();
}

absl::Status CheckScalars(const Signature& sig, absl::Span<const TensorArg> args) {
  for (int p = 0; p < sig.num_params; ++p) {
    if (sig.scalar_rank[p] < 0) continue;
    const TensorArg& t = args[p];
    const bool ones = std::all_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d == 1; });
    if (t.dtype != DType::kF32 || static_cast<int>(t.shape.size()) != sig.scalar_rank[p] || !ones ||
        t.data == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s must be a one-element f32 tensor of rank %d, got %s%s", sig.function,
          sig.Arg("scalar", p), sig.scalar_rank[p], DTypeName(t.dtype), ShapeStr(t.shape)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckResult(const Signature& sig, const TensorArg& out,
                         absl::Span<const int64_t> want, DType dtype) {
  if (out.dtype == dtype &&
      std::equal(want.begin(), want.end(), out.shape.begin(), out.shape.end()) &&
      (out.data != nullptr || out.num_elements() == 0)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat("%s: result must be %s%s, got %s%s",
                                                    sig.function, DTypeName(dtype), ShapeStr(want),
                                                    DTypeName(out.dtype), ShapeStr(out.shape)));
}

std::vector<int64_t> ReducedShape(const ReduceGroup& g, absl::Span<const int64_t> in_shape) {
  std::vector<int64_t> want;
  for (int i = 0; i < g.rank; ++i) {
    if (!g.reduced[i]) {
      want.push_back(in_shape[i]);
    } else if (g.keepdims) {
      want.push_back(1);
    }
  }
  return want;
}

LineView ViewOf(absl::Span<const int64_t> shape, const std::vector<bool>& mask) {
  LineView v;
  const auto first = std::find(mask.begin(), mask.end(), true) - mask.begin();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (mask[i]) {
      v.len *= shape[i];
    } else if (static_cast<int64_t>(i) < first) {
      v.outer *= shape[i];
    } else {
      v.inner *= shape[i];
    }
  }
  return v;
}

bool IsReduceOp(const OpDef& op) {
  return std::any_of(std::begin(kReduceOps), std::end(kReduceOps),
                     [&](const auto& r) { return r.first == OpIdOf(op); });
}
bool ReduceRuns(const OpDef& op) { return IsReduceOp(op) || OpIdOf(op) == kSoftmaxOp; }
bool ReduceFuses(const OpDef& op, bool extended) {
  return IsReduceOp(op) || std::any_of(std::begin(kStepOps), std::end(kStepOps), [&](const StepOp& s) {
           return s.id == OpIdOf(op) && (extended || !s.extended);
         });
}

}  // namespace hetpass::reduce_match
