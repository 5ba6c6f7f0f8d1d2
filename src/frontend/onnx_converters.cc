// ONNX op converters: one function per ONNX op type, each emitting registry ops through
// ImportContext (onnx_context.h), and the table that maps op types to them.
//
// Conventions:
//   - Attributes are read with defaults from the ONNX schema of the op at opsets 11-17. Inputs
//     that moved from attribute to input over that range (Unsqueeze/Squeeze/ReduceSum axes at
//     13, Pad pads at 11) are read from wherever the node's opset puts them.
//   - Where an input's VALUES decide the output shape (Reshape.shape, Slice.*, Expand.shape,
//     Tile.repeats, TopK.K, ...) a constant input gives the static registry op with the values
//     as attributes (reshape, strided_slice, ...), a computed one the dyn.* op, whose per-input
//     mask says `value` so the device planner keeps that input on the host.
//   - Weights are folded here only where the layout has to change (MatMul's B is transposed
//     for nn.dense, BatchNormalization becomes one multiply and one add); everything else is
//     left to fold-constants.
//   - A converter that meets a form it cannot map returns Unimplemented naming op, node and
//     opset (ImportContext::Unimplemented); it never crashes on user input.
#include "frontend/onnx_context.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

using Outs = absl::StatusOr<std::vector<Value*>>;
using Ins = std::vector<Value*>;

// ---- attribute helpers -----------------------------------------------------------------------

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, absl::string_view name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t IntAttr(const onnx::NodeProto& n, absl::string_view name, int64_t def) {
  const auto* a = FindAttr(n, name);
  return a ? a->i() : def;
}
float FloatAttr(const onnx::NodeProto& n, absl::string_view name, float def) {
  const auto* a = FindAttr(n, name);
  return a ? a->f() : def;
}
std::string StringAttr(const onnx::NodeProto& n, absl::string_view name, std::string def) {
  const auto* a = FindAttr(n, name);
  return a ? a->s() : def;
}
std::optional<std::vector<int64_t>> IntsAttr(const onnx::NodeProto& n, absl::string_view name) {
  const auto* a = FindAttr(n, name);
  if (a == nullptr) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Value* In(const Ins& in, size_t i) { return i < in.size() ? in[i] : nullptr; }

absl::StatusOr<Value*> Need(ImportContext& ctx, const Ins& in, size_t i) {
  Value* v = In(in, i);
  if (v == nullptr) return ctx.Error(absl::StrFormat("input %d is required", i));
  return v;
}

// The integer values of a constant input, or nullopt when it is computed.
std::optional<std::vector<int64_t>> ConstInts(ImportContext& ctx, const Value* v) {
  auto t = ctx.ConstValue(v);
  if (!t) return std::nullopt;
  return t->ToInt64s();
}

absl::StatusOr<std::vector<int64_t>> RequireConstInts(ImportContext& ctx, const Value* v,
                                                      absl::string_view what) {
  auto r = ConstInts(ctx, v);
  if (!r) return ctx.Unimplemented(absl::StrCat(what, " must be a constant"));
  return *r;
}

int64_t NormAxis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

absl::StatusOr<int> NeedRank(ImportContext& ctx, const Value* v) {
  const int r = ctx.RankOf(v);
  if (r < 0) return ctx.Unimplemented("needs the rank of its input, which is not known");
  return r;
}

Outs One(absl::StatusOr<Value*> v) {
  if (!v.ok()) return v.status();
  return std::vector<Value*>{*v};
}

// 2-D transpose: folded for constants, an op otherwise.
absl::StatusOr<Value*> Transpose2D(ImportContext& ctx, Value* v) {
  if (auto t = ctx.ConstValue(v); t && t->rank() == 2) {
    const int64_t r = t->shape()[0], c = t->shape()[1];
    Tensor out = Tensor::Zeros(t->dtype(), {c, r});
    const size_t es = DTypeSize(t->dtype());
    const uint8_t* src = t->data();
    uint8_t* dst = out.mutable_data();
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        std::memcpy(dst + (j * r + i) * es, src + (i * c + j) * es, es);
      }
    }
    return ctx.Const(std::move(out));
  }
  return ctx.Op("transpose", {v}, {{"axes", std::vector<int64_t>{1, 0}}});
}

// ---- elementwise -----------------------------------------------------------------------------

template <const char* kOp>
Outs Unary(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(ctx.Op(kOp, {x}));
}

template <const char* kOp>
Outs Binary(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  return One(ctx.Op(kOp, {a, b}));
}

// Max / Min / Sum: variadic, folded left.
template <const char* kOp>
Outs Variadic(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * acc, Need(ctx, in, 0));
  for (size_t i = 1; i < in.size(); ++i) {
    ASSIGN_OR_RETURN(Value * b, Need(ctx, in, i));
    ASSIGN_OR_RETURN(acc, ctx.Op(kOp, {acc, b}));
  }
  return std::vector<Value*>{acc};
}

constexpr char kRelu[] = "nn.relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp",
               kLog[] = "log", kSqrt[] = "sqrt", kNeg[] = "negative", kAbs[] = "abs",
               kFloor[] = "floor", kCeil[] = "ceil",
               kAdd[] = "add", kSub[] = "subtract", kMul[] = "multiply", kDiv[] = "divide",
               kPow[] = "power", kEqual[] = "equal", kLess[] = "less", kGreater[] = "greater",
               kMaximum[] = "maximum", kMinimum[] = "minimum";

// Pow's exponent may have another dtype than the base; the result has the base's.
Outs Pow(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  if (ctx.TypeOf(a).is_tensor() && ctx.TypeOf(b).is_tensor() && ctx.DTypeOf(a) != ctx.DTypeOf(b)) {
    ASSIGN_OR_RETURN(b, ctx.Op("cast", {b}, {{"dtype", ctx.DTypeOf(a)}}));
  }
  return One(ctx.Op("power", {a, b}));
}

Outs Reciprocal(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(ctx.Op("divide", {ctx.ScalarLike(x, 1.0), x}));
}

// Boolean logic through where / equal (the registry has no logical ops).
Outs Not(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(ctx.Op("equal", {x, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
}
Outs And(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  return One(ctx.Op("where", {a, b, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
}
Outs Or(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  return One(ctx.Op("where", {a, ctx.Const(Tensor::Scalar(DType::kBool, 1)), b}));
}

Outs GreaterOrEqual(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * lt, ctx.Op("less", {a, b}));
  return One(ctx.Op("equal", {lt, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
}
Outs LessOrEqual(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * gt, ctx.Op("greater", {a, b}));
  return One(ctx.Op("equal", {gt, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
}

// LeakyRelu: x > 0 ? x : alpha * x.
Outs LeakyRelu(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * pos, ctx.Op("greater", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * ax, ctx.Op("multiply", {x, ctx.ScalarLike(x, FloatAttr(n, "alpha", 0.01f))}));
  return One(ctx.Op("where", {pos, x, ax}));
}

// HardSigmoid: max(0, min(1, alpha * x + beta)).
Outs HardSigmoid(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, ctx.ScalarLike(x, FloatAttr(n, "alpha", 0.2f))}));
  ASSIGN_OR_RETURN(y, ctx.Op("add", {y, ctx.ScalarLike(x, FloatAttr(n, "beta", 0.5f))}));
  ASSIGN_OR_RETURN(y, ctx.Op("minimum", {y, ctx.ScalarLike(x, 1.0)}));
  return One(ctx.Op("maximum", {y, ctx.ScalarLike(x, 0.0)}));
}

// Mean of several inputs: their sum divided by the count.
Outs MeanOf(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * acc, Need(ctx, in, 0));
  for (size_t i = 1; i < in.size(); ++i) {
    ASSIGN_OR_RETURN(Value * b, Need(ctx, in, i));
    ASSIGN_OR_RETURN(acc, ctx.Op("add", {acc, b}));
  }
  if (in.size() == 1) return std::vector<Value*>{acc};
  return One(ctx.Op("divide", {acc, ctx.ScalarLike(acc, static_cast<double>(in.size()))}));
}

Outs Identity(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return std::vector<Value*>{x};
}

// Dropout in inference: the identity; the mask output is not produced. A training_mode that
// is not a constant false is refused (the result would be random).
Outs Dropout(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (Value* training = In(in, 2)) {
    auto t = ctx.ConstValue(training);
    if (!t || t->num_elements() != 1 || t->GetInt64(0) != 0) {
      return ctx.Unimplemented("training_mode that is not a constant false");
    }
  }
  return std::vector<Value*>{x};
}

Outs Clip(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  Value* lo = In(in, 1);
  Value* hi = In(in, 2);
  if (ctx.opset() < 11) {  // attributes before opset 11 (not reached: opsets 11-17)
    lo = ctx.ScalarLike(x, FloatAttr(n, "min", -std::numeric_limits<float>::infinity()));
    hi = ctx.ScalarLike(x, FloatAttr(n, "max", std::numeric_limits<float>::infinity()));
  }
  if (lo != nullptr) {
    ASSIGN_OR_RETURN(x, ctx.Op("maximum", {x, lo}));
  }
  if (hi != nullptr) {
    ASSIGN_OR_RETURN(x, ctx.Op("minimum", {x, hi}));
  }
  return std::vector<Value*>{x};
}

Outs Cast(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  auto dt = DTypeFromOnnx(static_cast<int32_t>(IntAttr(n, "to", 0)));
  if (!dt.ok()) return ctx.Unimplemented(dt.status().message());
  if (ctx.TypeOf(x).is_tensor() && ctx.DTypeOf(x) == *dt) return std::vector<Value*>{x};
  return One(ctx.Op("cast", {x}, {{"dtype", *dt}}));
}

Outs Where(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * c, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * y, Need(ctx, in, 2));
  return One(ctx.Op("where", {c, x, y}));
}

// ---- linear algebra --------------------------------------------------------------------------

// Y = alpha * A' B' + beta * C, with nn.dense(A', W) = A' W^T, so W = B'^T.
Outs Gemm(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  Value* c = In(in, 2);
  const float alpha = FloatAttr(n, "alpha", 1.0f), beta = FloatAttr(n, "beta", 1.0f);
  if (IntAttr(n, "transA", 0) != 0) {
    ASSIGN_OR_RETURN(a, Transpose2D(ctx, a));
  }
  Value* w = b;
  if (IntAttr(n, "transB", 0) == 0) {
    ASSIGN_OR_RETURN(w, Transpose2D(ctx, b));
  }
  ASSIGN_OR_RETURN(Value * y, ctx.Op("nn.dense", {a, w}));
  if (alpha != 1.0f) {
    ASSIGN_OR_RETURN(y, ctx.Op("multiply", {y, ctx.ScalarLike(y, alpha)}));
  }
  if (c != nullptr && beta != 0.0f) {
    if (beta != 1.0f) {
      ASSIGN_OR_RETURN(c, ctx.Op("multiply", {c, ctx.ScalarLike(c, beta)}));
    }
    // A bias C[N] is nn.bias_add: the dense group then fuses into one GEMM with a bias
    // post-op. Otherwise C broadcasts unidirectionally to [M, N]: NumPy add.
    const Type ct = ctx.TypeOf(c);
    const Type yt = ctx.TypeOf(y);
    if (ct.is_tensor() && yt.is_tensor() && ct.rank() == 1 && yt.rank() == 2 &&
        ct.shape()[0] == yt.shape()[1] && !ct.shape()[0].is_unknown()) {
      ASSIGN_OR_RETURN(y, ctx.Op("nn.bias_add", {y, c}, {{"axis", int64_t{-1}}}));
    } else {
      ASSIGN_OR_RETURN(y, ctx.Op("add", {y, c}));
    }
  }
  return std::vector<Value*>{y};
}

// MatMul with a 2-D right side: nn.dense (batched left sides allowed: data[.., K]).
// Batched right sides (attention's Q K^T) have no registry op yet; they are lowered to
// broadcast multiply + sum: A[.., m, k, 1] * B[.., 1, k, n] summed over k. Exact, but it
// materialises [.., m, k, n]: fine for the small attention blocks it meets, not a GEMM.
Outs MatMul(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  const int rb = ctx.RankOf(b), ra = ctx.RankOf(a);
  if (ra < 2 || rb < 2) {
    return ctx.Unimplemented(absl::StrFormat(
        "MatMul of rank %d by rank %d: 1-D operands are not supported yet", ra, rb));
  }
  if (rb == 2) {
    ASSIGN_OR_RETURN(Value * w, Transpose2D(ctx, b));
    return One(ctx.Op("nn.dense", {a, w}));
  }
  // Batched operands (attention's Q x K^T, P x V): one batched GEMM.
  return One(ctx.Op("nn.batch_matmul", {a, b}));
}

// ---- shape manipulation ----------------------------------------------------------------------

Outs Reshape(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, 1));
  auto shape = ConstInts(ctx, s);
  const bool allowzero = IntAttr(n, "allowzero", 0) != 0;
  if (allowzero && (!shape || std::count(shape->begin(), shape->end(), 0) > 0)) {
    return ctx.Unimplemented("allowzero = 1 with a zero (or computed) target dim");
  }
  // ONNX 0 (copy) and -1 (infer) are the registry's reshape semantics too.
  if (shape) return One(ctx.Op("reshape", {x}, {{"newshape", *shape}}));
  // The IR's tensors have a static rank: a target shape whose length is known only at run time
  // (a rank-dynamic reshape, e.g. built from Size and Concat) is not representable yet.
  const Type st = ctx.TypeOf(s);
  if (st.is_tensor() && (st.rank() != 1 || !st.shape()[0].is_constant())) {
    return ctx.Unimplemented(absl::StrCat("a target shape of run-time length ", st.ToString(),
                                          " (the output rank would be dynamic)"));
  }
  return One(ctx.Op("dyn.reshape", {x, s}));
}

Outs Shape(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
  const auto* start = FindAttr(n, "start");
  const auto* end = FindAttr(n, "end");
  if (start == nullptr && end == nullptr) return std::vector<Value*>{s};
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(NormAxis(v, rank), 0, rank); };
  const int64_t b = clamp(start ? start->i() : 0), e = clamp(end ? end->i() : rank);
  return One(ctx.Op("strided_slice", {s},
                    {{"begin", std::vector<int64_t>{b}}, {"end", std::vector<int64_t>{e}}}));
}

// Size: the element count, an i64 scalar computed on the host from the shape alone
// (prod(shape_of(x)); no data of x is read, so no copy).
Outs Size(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
  return One(ctx.Op("prod", {s}, {{"axis", std::vector<int64_t>{}}, {"keepdims", false}}));
}

Outs Gather(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  // ONNX indices may be negative (from the end): "wrap" resolves them; clip would not.
  std::string mode = "clip";
  auto ci = ConstInts(ctx, idx);
  if (!ci || std::any_of(ci->begin(), ci->end(), [](int64_t v) { return v < 0; })) mode = "wrap";
  return One(ctx.Op("take", {x, idx}, {{"axis", IntAttr(n, "axis", 0)}, {"mode", mode}}));
}

// GatherND with batch_dims 0 and indices [.., 1] (boolean-mask indexing as PyTorch exports
// it: x[mask] = GatherND(x, NonZero(mask)^T)) is a take along axis 0.
Outs GatherND(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 1));
  if (IntAttr(n, "batch_dims", 0) != 0) return ctx.Unimplemented("batch_dims != 0");
  const Type ti = ctx.TypeOf(idx);
  if (!ti.is_tensor() || ti.rank() < 1 || !ti.shape().back().is_constant() ||
      ti.shape().back().constant() != 1) {
    return ctx.Unimplemented("only indices whose last dim is statically 1");
  }
  ASSIGN_OR_RETURN(Value * flat, ctx.Op("squeeze", {idx}, {{"axis", std::vector<int64_t>{ti.rank() - 1}}}));
  return One(ctx.Op("take", {x, flat}, {{"axis", int64_t{0}}, {"mode", std::string("wrap")}}));
}

// Split into constant sizes (attribute below opset 13, input from 13; equal parts of a
// static dim when absent): one strided_slice per output.
Outs Split(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", 0), rank);
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    if (auto a = IntsAttr(n, "split")) sizes = *a;
  } else if (Value* sv = In(in, 1)) {
    ASSIGN_OR_RETURN(sizes, RequireConstInts(ctx, sv, "split"));
  }
  const int64_t outs = n.output_size();
  if (sizes.empty()) {
    const DimExpr d = ctx.TypeOf(x).shape()[axis];
    if (!d.is_constant() || outs == 0 || d.constant() % outs != 0) {
      return ctx.Unimplemented("equal split of a symbolic or indivisible dim");
    }
    sizes.assign(outs, d.constant() / outs);
  }
  if (static_cast<int64_t>(sizes.size()) != outs) {
    return ctx.Error("split sizes and outputs differ in number");
  }
  std::vector<Value*> results;
  int64_t begin = 0;
  for (int64_t sz : sizes) {
    // Sizes are user input: each must be >= 0 and their running sum must fit in int64.
    if (sz < 0) return ctx.Error(absl::StrFormat("split size %d is negative", sz));
    int64_t end;
    if (__builtin_add_overflow(begin, sz, &end)) {
      return ctx.Error(absl::StrFormat("split sizes [%s] overflow int64 when summed",
                                       absl::StrJoin(sizes, ", ")));
    }
    ASSIGN_OR_RETURN(Value * part,
                     ctx.Op("strided_slice", {x},
                            {{"begin", std::vector<int64_t>{begin}},
                             {"end", std::vector<int64_t>{end}},
                             {"axes", std::vector<int64_t>{axis}}}));
    results.push_back(part);
    begin = end;
  }
  return results;
}

Outs Concat(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  std::vector<Value*> parts;
  for (Value* v : in) {
    if (v != nullptr) parts.push_back(v);
  }
  if (parts.empty()) return ctx.Error("needs at least one input");
  if (parts.size() == 1) return parts;
  return One(ctx.Op("concatenate", parts, {{"axis", IntAttr(n, "axis", 0)}}));
}

// axes: an attribute below opset 13, a constant input from 13.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(ImportContext& ctx,
                                                           const onnx::NodeProto& n,
                                                           const Ins& in, int64_t input_since) {
  if (ctx.opset() < input_since) return IntsAttr(n, "axes");
  Value* a = In(in, 1);
  if (a == nullptr) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(auto v, RequireConstInts(ctx, a, "axes"));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

// The static length of a computed (non-constant) axes input of Squeeze-13/Unsqueeze-13: it fixes
// the output rank of dyn.squeeze/dyn.unsqueeze, so a length known only at run time (a
// rank-dynamic result) is not representable yet.
absl::StatusOr<int64_t> ComputedAxesLength(ImportContext& ctx, const Value* axes) {
  const Type t = ctx.TypeOf(axes);
  if (t.is_tensor() && t.rank() != 1) {
    return ctx.Error(absl::StrFormat("axes must be 1-D, got %s", t.ToString()));
  }
  if (!t.is_tensor() || !t.shape()[0].is_constant()) {
    return ctx.Unimplemented(absl::StrCat("computed axes of run-time length ",
                                          t.is_tensor() ? t.ToString() : "?",
                                          " (the output rank would be dynamic)"));
  }
  return t.shape()[0].constant();
}

// Unsqueeze: axes (output positions, any order) an attribute below opset 13, an input from 13.
// Constant axes give a chain of expand_dims, computed ones dyn.unsqueeze (axes read on the
// host at run time, x's shape only).
Outs Unsqueeze(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (Value* av = In(in, 1); ctx.opset() >= 13 && av != nullptr && !ConstInts(ctx, av)) {
    ASSIGN_OR_RETURN(int64_t len, ComputedAxesLength(ctx, av));
    if (len == 0) return ctx.Error("axes is empty");
    return One(ctx.Op("dyn.unsqueeze", {x, av}));
  }
  ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, n, in, 13));
  if (!axes || axes->empty()) return ctx.Error("axes is required");
  // Normalised against the output rank and checked here: the expand_dims chain below would
  // accept a repeated axis silently (ONNX forbids it).
  int rank = ctx.RankOf(x);
  if (std::any_of(axes->begin(), axes->end(), [](int64_t a) { return a < 0; })) {
    ASSIGN_OR_RETURN(rank, NeedRank(ctx, x));
  }
  const int64_t out_rank = rank + static_cast<int64_t>(axes->size());
  std::vector<int64_t> sorted;
  for (int64_t a : *axes) {
    const int64_t norm = a < 0 ? a + out_rank : a;
    if (norm < 0 || (rank >= 0 && norm >= out_rank)) {
      return ctx.Error(absl::StrFormat("axis %d is out of range for output rank %d", a, out_rank));
    }
    sorted.push_back(norm);
  }
  std::sort(sorted.begin(), sorted.end());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    return ctx.Error(absl::StrFormat("axis %d is given twice", *dup));
  }
  // Inserting in ascending order of output position is exact.
  for (int64_t a : sorted) {
    ASSIGN_OR_RETURN(x, ctx.Op("expand_dims", {x}, {{"axis", a}}));
  }
  return std::vector<Value*>{x};
}

// Squeeze: axes an attribute below opset 13, an input from 13. Absent or empty axes remove
// every statically-1 dim (squeeze with no axis); constant axes give squeeze, computed ones
// dyn.squeeze (axes read on the host at run time, x's shape only).
Outs Squeeze(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  std::vector<int64_t> a;  // empty: every statically-1 dim
  if (Value* av = In(in, 1); ctx.opset() >= 13 && av != nullptr && !ConstInts(ctx, av)) {
    ASSIGN_OR_RETURN(int64_t len, ComputedAxesLength(ctx, av));
    if (len > 0) return One(ctx.Op("dyn.squeeze", {x, av}));
    // A computed axes input that is always empty reads as absent, as an empty constant does.
  } else {
    ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, n, in, 13));
    if (axes) a = *axes;
    if (std::any_of(a.begin(), a.end(), [](int64_t v) { return v < 0; })) {
      ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
      for (int64_t& v : a) v = NormAxis(v, rank);
    }
  }
  return One(ctx.Op("squeeze", {x}, {{"axis", a}}));
}

Outs Flatten(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", 1), rank);
  if (axis < 0 || axis > rank) return ctx.Error(absl::StrFormat("axis %d out of range", axis));
  const Type t = ctx.TypeOf(x);
  auto static_prod = [&](int64_t b, int64_t e) -> std::optional<int64_t> {
    int64_t p = 1;
    for (int64_t i = b; i < e; ++i) {
      if (!t.shape()[i].is_constant()) return std::nullopt;
      // On overflow, leave the product to the reshape rule, which reports it.
      if (__builtin_mul_overflow(p, t.shape()[i].constant(), &p)) return std::nullopt;
    }
    return p;
  };
  std::vector<int64_t> newshape;
  if (axis == 0) {
    newshape = {1, -1};
  } else if (axis == 1) {
    newshape = {0, -1};
  } else if (auto tail = static_prod(axis, rank)) {
    newshape = {-1, *tail};
  } else if (auto head = static_prod(0, axis)) {
    newshape = {*head, -1};
  } else {
    // Run-time dims on both sides: [prod(shape[:axis]), prod(shape[axis:])] computed on the
    // host from the shape alone (shape_of is metadata: no copy), then dyn.reshape.
    ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
    auto part = [&](int64_t b, int64_t e) -> absl::StatusOr<Value*> {
      ASSIGN_OR_RETURN(Value * piece, ctx.Op("strided_slice", {s},
                                             {{"begin", std::vector<int64_t>{b}},
                                              {"end", std::vector<int64_t>{e}}}));
      return ctx.Op("prod", {piece}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}});
    };
    ASSIGN_OR_RETURN(Value * rows, part(0, axis));
    ASSIGN_OR_RETURN(Value * cols, part(axis, rank));
    ASSIGN_OR_RETURN(Value * target, ctx.Op("concatenate", {rows, cols}, {{"axis", int64_t{0}}}));
    return One(ctx.Op("dyn.reshape", {x, target}));
  }
  return One(ctx.Op("reshape", {x}, {{"newshape", newshape}}));
}

Outs Transpose(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  auto perm = IntsAttr(n, "perm");
  return One(ctx.Op("transpose", {x}, {{"axes", perm ? *perm : std::vector<int64_t>{}}}));
}

Outs Slice(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * starts, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * ends, Need(ctx, in, 2));
  Value* axes_v = In(in, 3);
  Value* steps_v = In(in, 4);
  auto s = ConstInts(ctx, starts), e = ConstInts(ctx, ends);
  auto axes = axes_v ? ConstInts(ctx, axes_v) : std::optional<std::vector<int64_t>>();
  auto steps = steps_v ? ConstInts(ctx, steps_v) : std::optional<std::vector<int64_t>>();
  if ((axes_v && !axes) || (steps_v && !steps)) {
    return ctx.Unimplemented("computed axes or steps");
  }
  if (s && e) {
    const size_t k = s->size();
    std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>();
    if (!axes) {
      for (size_t i = 0; i < k; ++i) ax.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> st = steps ? *steps : std::vector<int64_t>(k, 1);
    if (e->size() != k || ax.size() != k || st.size() != k) {
      return ctx.Error("starts, ends, axes and steps differ in length");
    }
    return One(ctx.Op("strided_slice", {x},
                      {{"begin", *s}, {"end", *e}, {"strides", st}, {"axes", ax}}));
  }
  // Computed starts/ends: dyn.strided_slice takes begin/end/strides for the leading dims in
  // order, so for axes other than 0..k-1 the full vectors are assembled on the host: each
  // sliced axis takes its element of starts/ends, every other axis [0, INT64_MAX) step 1.
  const int64_t k = s ? static_cast<int64_t>(s->size())
                      : (e ? static_cast<int64_t>(e->size()) : -1);
  Type ts = ctx.TypeOf(starts);
  const int64_t klen = k >= 0 ? k
                       : (ts.is_tensor() && ts.rank() == 1 && ts.shape()[0].is_constant()
                              ? ts.shape()[0].constant()
                              : -1);
  if (klen < 0) return ctx.Unimplemented("computed starts/ends of unknown length");
  std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>();
  if (!axes) {
    for (int64_t i = 0; i < klen; ++i) ax.push_back(i);
  }
  std::vector<int64_t> st = steps ? *steps : std::vector<int64_t>(klen, 1);
  if (static_cast<int64_t>(ax.size()) != klen || static_cast<int64_t>(st.size()) != klen) {
    return ctx.Error("starts, ends, axes and steps differ in length");
  }
  bool leading = true;
  for (int64_t i = 0; i < klen; ++i) leading = leading && ax[i] == i;
  const DType it = ctx.DTypeOf(starts);
  if (leading) {
    Value* stv = ctx.Const(Tensor::FromInt64s(it, {klen}, st));
    return One(ctx.Op("dyn.strided_slice", {x, starts, ends, stv}));
  }
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  std::vector<int64_t> pos(rank, -1);  // axis -> index into starts/ends
  for (int64_t j = 0; j < klen; ++j) {
    const int64_t a = NormAxis(ax[j], rank);
    if (a < 0 || a >= rank || pos[a] >= 0) return ctx.Error("axes out of range or repeated");
    pos[a] = j;
  }
  int last = 0;
  for (int a = 0; a < rank; ++a) {
    if (pos[a] >= 0) last = a + 1;
  }
  auto assemble = [&](Value* v, int64_t fill) -> absl::StatusOr<Value*> {
    if (auto c = ConstInts(ctx, v)) {
      std::vector<int64_t> full;
      for (int a = 0; a < last; ++a) full.push_back(pos[a] < 0 ? fill : (*c)[pos[a]]);
      return ctx.Const(Tensor::FromInt64s(it, {last}, full));
    }
    if (ctx.DTypeOf(v) != it) {
      ASSIGN_OR_RETURN(v, ctx.Op("cast", {v}, {{"dtype", it}}));
    }
    std::vector<Value*> parts;
    for (int a = 0; a < last; ++a) {
      if (pos[a] < 0) {
        parts.push_back(ctx.Const(Tensor::FromInt64s(it, {1}, {fill})));
        continue;
      }
      ASSIGN_OR_RETURN(Value * piece,
                       ctx.Op("strided_slice", {v},
                              {{"begin", std::vector<int64_t>{pos[a]}},
                               {"end", std::vector<int64_t>{pos[a] + 1}}}));
      parts.push_back(piece);
    }
    if (parts.size() == 1) return parts[0];
    return ctx.Op("concatenate", parts, {{"axis", int64_t{0}}});
  };
  ASSIGN_OR_RETURN(Value * b, assemble(starts, 0));
  ASSIGN_OR_RETURN(Value * en, assemble(ends, it == DType::kI32 ? std::numeric_limits<int32_t>::max()
                                                         : std::numeric_limits<int64_t>::max()));
  std::vector<int64_t> full_steps;
  for (int a = 0; a < last; ++a) full_steps.push_back(pos[a] < 0 ? 1 : st[pos[a]]);
  Value* stv = ctx.Const(Tensor::FromInt64s(it, {last}, full_steps));
  return One(ctx.Op("dyn.strided_slice", {x, b, en, stv}));
}

// ONNX Expand broadcasts both ways: out = broadcast(x.shape, shape), so a target dim of 1
// keeps the input's dim. broadcast_to is one-way; the two agree when no target 1 meets an
// input dim that may be larger. Otherwise the target is computed on the host as
// maximum(shape, shape_of(x)), both left-padded with ones to the output rank.
Outs Expand(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, 1));
  const Type tx = ctx.TypeOf(x);
  auto shape = ConstInts(ctx, s);
  if (shape && tx.is_tensor()) {
    const int64_t k = static_cast<int64_t>(shape->size()), r = tx.rank();
    bool one_way = true;
    for (int64_t i = 0; i < std::min(k, r); ++i) {
      const DimExpr& d = tx.shape()[r - 1 - i];
      if ((*shape)[k - 1 - i] == 1 && !(d.is_constant() && d.constant() == 1)) one_way = false;
    }
    if (one_way && k >= r) return One(ctx.Op("broadcast_to", {x}, {{"shape", *shape}}));
  }
  const Type ts = ctx.TypeOf(s);
  if (!tx.is_tensor() || !ts.is_tensor() || ts.rank() != 1 || !ts.shape()[0].is_constant()) {
    return ctx.Unimplemented("needs the input's rank and the length of shape");
  }
  const int64_t k = ts.shape()[0].constant(), r = tx.rank(), out_rank = std::max(k, r);
  const DType it = ctx.DTypeOf(s);
  auto pad = [&](Value* v, int64_t len) -> absl::StatusOr<Value*> {
    if (len == out_rank) return v;
    Value* ones = ctx.Const(Tensor::FromInt64s(it, {out_rank - len},
                                               std::vector<int64_t>(out_rank - len, 1)));
    return ctx.Op("concatenate", {ones, v}, {{"axis", int64_t{0}}});
  };
  ASSIGN_OR_RETURN(Value * sx, ctx.Op("shape_of", {x}, {{"dtype", it}}));
  ASSIGN_OR_RETURN(sx, pad(sx, r));
  ASSIGN_OR_RETURN(Value * sp, pad(s, k));
  ASSIGN_OR_RETURN(Value * target, ctx.Op("maximum", {sp, sx}));
  return One(ctx.Op("dyn.broadcast_to", {x, target}));
}

Outs Tile(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * r, Need(ctx, in, 1));
  if (auto reps = ConstInts(ctx, r)) return One(ctx.Op("tile", {x}, {{"reps", *reps}}));
  return One(ctx.Op("dyn.tile", {x, r}));
}

// Largest ConstantOfShape result the importer materialises as a constant.
constexpr int64_t kMaxFoldedElements = 1 << 16;

Outs ConstantOfShape(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, 0));
  Tensor fill = Tensor::Scalar(DType::kF32, 0.0);
  if (const auto* a = FindAttr(n, "value")) {
    auto t = TensorFromProto(a->t());
    if (!t.ok()) return ctx.Error(t.status().message());
    if (t->num_elements() != 1) return ctx.Error("value must have one element");
    fill = t->Reshaped({});
  }
  auto shape = ConstInts(ctx, s);
  if (shape) {
    auto count = CheckedNumElements(*shape);
    if (!count.ok()) return ctx.Error(count.status().message());
  }
  // A constant shape is materialised when small; large fills stay ops (sized at run time).
  if (shape && CheckedNumElements(*shape).value_or(0) <= kMaxFoldedElements) {
    Tensor out = Tensor::Zeros(fill.dtype(), *shape);
    for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, fill.GetDouble(0));
    return std::vector<Value*>{ctx.Const(std::move(out))};
  }
  if (fill.GetDouble(0) == 0.0) {
    return One(ctx.Op("dyn.zeros", {s}, {{"dtype", fill.dtype()}}));
  }
  return One(ctx.Op("dyn.full", {ctx.Const(fill), s}, {{"dtype", fill.dtype()}}));
}

Outs Range(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * start, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * limit, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * delta, Need(ctx, in, 2));
  return One(ctx.Op("arange", {start, limit, delta}, {{"dtype", ctx.DTypeOf(start)}}));
}

Outs NonZero(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  // argwhere gives [count, rank]; ONNX wants [rank, count].
  ASSIGN_OR_RETURN(Value * w, ctx.Op("argwhere", {x}));
  return One(ctx.Op("transpose", {w}, {{"axes", std::vector<int64_t>{1, 0}}}));
}

Outs TopK(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * k, Need(ctx, in, 1));
  Attrs attrs{{"axis", IntAttr(n, "axis", -1)},
              {"is_ascend", IntAttr(n, "largest", 1) == 0},
              {"dtype", DType::kI64}};
  Node* node = nullptr;
  if (auto kv = ConstInts(ctx, k)) {
    if (kv->size() != 1) return ctx.Error("K must have one element");
    attrs.Set("k", (*kv)[0]);
    ASSIGN_OR_RETURN(node, ctx.OpNode("topk", {x}, attrs));
  } else {
    ASSIGN_OR_RETURN(Value * ks, ctx.Op("reshape", {k}, {{"newshape", std::vector<int64_t>{}}}));
    ASSIGN_OR_RETURN(node, ctx.OpNode("dyn.topk", {x, ks}, attrs));
  }
  return std::vector<Value*>{node->result(0), node->result(1)};
}

Outs Pad(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  std::string mode = StringAttr(n, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") {
    return ctx.Unimplemented(absl::StrCat("mode '", mode, "'"));
  }
  if (In(in, 3) != nullptr) return ctx.Unimplemented("the axes input");
  ASSIGN_OR_RETURN(Value * pads, Need(ctx, in, 1));
  Value* cv = In(in, 2);
  auto pv = ConstInts(ctx, pads);
  if (pv) {
    // ONNX [b0, b1, ..., e0, e1, ...] -> registry [b0, e0, b1, e1, ...].
    const size_t r = pv->size() / 2;
    std::vector<int64_t> width;
    for (size_t i = 0; i < r; ++i) {
      width.push_back((*pv)[i]);
      width.push_back((*pv)[i + r]);
    }
    double value = 0;
    if (cv != nullptr) {
      auto c = ctx.ConstValue(cv);
      if (!c) return ctx.Unimplemented("a computed constant_value");
      if (c->num_elements() > 0) value = c->GetDouble(0);
    }
    return One(ctx.Op("nn.pad", {x},
                      {{"pad_width", width}, {"pad_value", value}, {"pad_mode", mode}}));
  }
  // Computed pads: reorder on the host with reshape [2, r] -> transpose -> reshape [-1].
  ASSIGN_OR_RETURN(Value * p2, ctx.Op("reshape", {pads}, {{"newshape", std::vector<int64_t>{2, -1}}}));
  ASSIGN_OR_RETURN(Value * pt, ctx.Op("transpose", {p2}, {{"axes", std::vector<int64_t>{1, 0}}}));
  ASSIGN_OR_RETURN(Value * pw, ctx.Op("reshape", {pt}, {{"newshape", std::vector<int64_t>{-1}}}));
  if (cv == nullptr) cv = ctx.ScalarLike(x, 0.0);
  return One(ctx.Op("dyn.nn.pad", {x, pw, cv}, {{"pad_mode", mode}}));
}

// ---- nn --------------------------------------------------------------------------------------

absl::Status CheckAutoPad(ImportContext& ctx, const onnx::NodeProto& n) {
  const std::string auto_pad = StringAttr(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return ctx.Unimplemented(absl::StrCat("auto_pad = ", auto_pad, " (give explicit pads)"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> Ints(const onnx::NodeProto& n, absl::string_view name,
                          std::vector<int64_t> def) {
  auto v = IntsAttr(n, name);
  return v ? *v : def;
}

Outs Conv(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * w, Need(ctx, in, 1));
  RETURN_IF_ERROR(CheckAutoPad(ctx, n));
  const int rw = ctx.RankOf(w);
  if (rw != 4) {
    return ctx.Unimplemented(absl::StrFormat("only 2-D convolution (weight rank 4, got %d)", rw));
  }
  Attrs attrs{{"strides", Ints(n, "strides", {1, 1})},
              {"padding", Ints(n, "pads", {0, 0, 0, 0})},
              {"dilation", Ints(n, "dilations", {1, 1})},
              {"groups", IntAttr(n, "group", 1)}};
  ASSIGN_OR_RETURN(Value * y, ctx.Op("nn.conv2d", {x, w}, attrs));
  if (Value* b = In(in, 2)) {
    ASSIGN_OR_RETURN(y, ctx.Op("nn.bias_add", {y, b}, {{"axis", int64_t{1}}}));
  }
  return std::vector<Value*>{y};
}

// ---- ConvTranspose ---------------------------------------------------------------------------

// The padding of one spatial axis of a ConvTranspose whose output size is given (output_shape,
// or input * stride under SAME_*): ONNX's total_padding = stride * (in - 1) + output_padding +
// dilation * (k - 1) + 1 - out, split with the odd unit at the end for SAME_UPPER and at the
// start otherwise. A negative total (the output is asked to be longer than the kernels reach)
// cannot be padding; like ONNX Runtime we clamp it to 0 and lengthen the far end instead
// (output_padding), which is what test_convtranspose_output_shape expects (a zero last row).
struct TransposePads {
  int64_t begin = 0, end = 0, extra_output_padding = 0;
};
TransposePads PadsForOutputSize(int64_t total, bool same_upper) {
  TransposePads p;
  if (total < 0) {
    p.extra_output_padding = -total;
    return p;
  }
  p.begin = same_upper ? total / 2 : total - total / 2;
  p.end = total - p.begin;
  return p;
}

// ConvTranspose-11 (current through opset 17) as nn.conv2d_transpose; 1-D as 2-D with a unit
// height (expand_dims / squeeze around it); 3-D is not supported. Explicit pads, auto_pad
// (NOTSET, VALID, SAME_UPPER, SAME_LOWER) and output_shape (which overrides pads) all become
// explicit padding: SAME_* needs only the kernel extent, because its total padding
// output_padding + dilation * (k - 1) + 1 - stride does not depend on the input size (so a
// dynamic input stays dynamic); output_shape needs static input sizes. The bias is an
// nn.bias_add on the channel axis, as for Conv.
Outs ConvTranspose(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * w, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 3) {
    return ctx.Error(absl::StrFormat("X must have rank >= 3 (N, C, spatial...), got %d", rank));
  }
  const int spatial = rank - 2;
  if (spatial > 2) {
    return ctx.Unimplemented(
        absl::StrFormat("%d-D transposed convolution (only 1-D and 2-D are supported)", spatial));
  }
  const int rw = ctx.RankOf(w);
  if (rw >= 0 && rw != rank) {
    return ctx.Error(absl::StrFormat("W must have the rank of X (%d), got %d", rank, rw));
  }
  // Per-spatial-axis attributes, checked for length.
  auto axis_attr = [&](absl::string_view name, int64_t def,
                       int per_axis) -> absl::StatusOr<std::vector<int64_t>> {
    std::vector<int64_t> v = Ints(n, name, std::vector<int64_t>(per_axis * spatial, def));
    if (static_cast<int>(v.size()) != per_axis * spatial) {
      return ctx.Error(absl::StrFormat("%s must have %d values for %d-D input, got %d", name,
                                       per_axis * spatial, spatial, v.size()));
    }
    return v;
  };
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, axis_attr("strides", 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> dilations, axis_attr("dilations", 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> output_padding, axis_attr("output_padding", 0, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, axis_attr("pads", 0, 2));
  const std::string auto_pad = StringAttr(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return ctx.Error(absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  // The kernel extent: kernel_shape, else W's static spatial dims (needed only to compute pads).
  const Type wt = ctx.TypeOf(w);
  std::vector<std::optional<int64_t>> kernel(spatial);
  for (int i = 0; i < spatial && wt.is_tensor() && wt.rank() == rank; ++i) {
    const DimExpr& d = wt.shape()[2 + i];
    if (d.is_constant()) kernel[i] = d.constant();
  }
  if (auto ks = IntsAttr(n, "kernel_shape")) {
    if (static_cast<int>(ks->size()) != spatial) {
      return ctx.Error(absl::StrFormat("kernel_shape must have %d values, got %d", spatial,
                                       ks->size()));
    }
    for (int i = 0; i < spatial; ++i) {
      if (kernel[i] && *kernel[i] != (*ks)[i]) {
        return ctx.Error(absl::StrFormat("kernel_shape %s does not match W's spatial dims",
                                         absl::StrJoin(*ks, "x")));
      }
      kernel[i] = (*ks)[i];
    }
  }
  std::optional<std::vector<int64_t>> output_shape = IntsAttr(n, "output_shape");
  if (output_shape) {
    // Exporters write the spatial sizes; a full [N, C, spatial...] shape is accepted too.
    if (static_cast<int>(output_shape->size()) == rank) {
      output_shape->erase(output_shape->begin(), output_shape->begin() + 2);
    }
    if (static_cast<int>(output_shape->size()) != spatial) {
      return ctx.Error(absl::StrFormat("output_shape must have %d values, got %d", spatial,
                                       output_shape->size()));
    }
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * spatial, 0);
  if (output_shape || same) {
    const Type xt = ctx.TypeOf(x);
    for (int i = 0; i < spatial; ++i) {
      if (!kernel[i]) {
        return ctx.Unimplemented("auto_pad SAME_* or output_shape with a kernel size that is "
                                 "not known (give kernel_shape or a constant W)");
      }
      const int64_t reach = output_padding[i] + dilations[i] * (*kernel[i] - 1) + 1;
      int64_t total;
      if (output_shape) {
        const DimExpr& d = xt.shape()[2 + i];
        if (!d.is_constant()) {
          return ctx.Unimplemented(
              "output_shape with a dynamic input size (the padding would be run-time data)");
        }
        total = strides[i] * (d.constant() - 1) + reach - (*output_shape)[i];
      } else {
        total = reach - strides[i];  // output = input * stride
      }
      const TransposePads p = PadsForOutputSize(total, auto_pad == "SAME_UPPER");
      pads[i] = p.begin;
      pads[spatial + i] = p.end;
      output_padding[i] += p.extra_output_padding;
    }
  }
  // ONNX pads are [x1_begin, x2_begin, x1_end, x2_end]: for 2-D exactly the registry's
  // (top, left, bottom, right). 1-D gets a unit height with no padding.
  Attrs attrs;
  if (spatial == 2) {
    attrs = {{"strides", strides},
             {"padding", pads},
             {"output_padding", output_padding},
             {"dilation", dilations}};
  } else {
    attrs = {{"strides", std::vector<int64_t>{1, strides[0]}},
             {"padding", std::vector<int64_t>{0, pads[0], 0, pads[1]}},
             {"output_padding", std::vector<int64_t>{0, output_padding[0]}},
             {"dilation", std::vector<int64_t>{1, dilations[0]}}};
    const Attrs unit_height{{"axis", int64_t{2}}};
    ASSIGN_OR_RETURN(x, ctx.Op("expand_dims", {x}, unit_height));
    ASSIGN_OR_RETURN(w, ctx.Op("expand_dims", {w}, unit_height));
  }
  attrs.Set("groups", IntAttr(n, "group", 1));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("nn.conv2d_transpose", {x, w}, attrs));
  if (spatial == 1) {
    ASSIGN_OR_RETURN(y, ctx.Op("squeeze", {y}, {{"axis", std::vector<int64_t>{2}}}));
  }
  if (Value* b = In(in, 2)) {
    ASSIGN_OR_RETURN(y, ctx.Op("nn.bias_add", {y, b}, {{"axis", int64_t{1}}}));
  }
  return std::vector<Value*>{y};
}

// ---- RoiAlign --------------------------------------------------------------------------------

// RoiAlign-10 and -16 as image.roi_align. The two differ in coordinate_transformation_mode:
// RoiAlign-10 (opsets 10-15) has no such attribute and behaves as output_half_pixel (no half
// pixel offset, rois at least 1 x 1: torchvision's aligned = False); RoiAlign-16 adds it with
// the default half_pixel. An attribute the node's opset does not define is an error rather
// than silently honoured.
Outs RoiAlign(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * rois, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * batch_indices, Need(ctx, in, 2));
  std::string mode = "output_half_pixel";
  if (ctx.opset() >= 16) {
    mode = StringAttr(n, "coordinate_transformation_mode", "half_pixel");
  } else if (FindAttr(n, "coordinate_transformation_mode") != nullptr) {
    return ctx.Error("coordinate_transformation_mode is an attribute of RoiAlign-16; below "
                     "opset 16 the mode is always output_half_pixel");
  }
  Attrs attrs{{"mode", StringAttr(n, "mode", "avg")},
              {"output_height", IntAttr(n, "output_height", 1)},
              {"output_width", IntAttr(n, "output_width", 1)},
              {"sampling_ratio", IntAttr(n, "sampling_ratio", 0)},
              {"spatial_scale", static_cast<double>(FloatAttr(n, "spatial_scale", 1.0f))},
              {"coordinate_transformation_mode", mode}};
  return One(ctx.Op("image.roi_align", {x, rois, batch_indices}, attrs));
}

Outs MaxPool(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  RETURN_IF_ERROR(CheckAutoPad(ctx, n));
  if (n.output_size() > 1 && !n.output(1).empty()) {
    return ctx.Unimplemented("the Indices output");
  }
  auto kernel = IntsAttr(n, "kernel_shape");
  if (!kernel || kernel->size() != 2) return ctx.Unimplemented("only 2-D max pooling");
  if (IntAttr(n, "storage_order", 0) != 0) return ctx.Unimplemented("storage_order = 1");
  Attrs attrs{{"pool_size", *kernel},
              {"strides", Ints(n, "strides", {1, 1})},
              {"padding", Ints(n, "pads", {0, 0, 0, 0})},
              {"dilation", Ints(n, "dilations", {1, 1})},
              {"ceil_mode", IntAttr(n, "ceil_mode", 0) != 0}};
  return One(ctx.Op("nn.max_pool2d", {x}, attrs));
}

Outs GlobalAveragePool(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  std::vector<int64_t> axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return One(ctx.Op("mean", {x}, {{"axis", axes}, {"keepdims", true}}));
}

// ReduceX: axes an attribute (ReduceSum: an input from opset 13); empty = all axes.
template <const char* kOp>
Outs Reduce(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const bool axes_input = std::string(kOp) == "sum" && ctx.opset() >= 13;
  std::optional<std::vector<int64_t>> axes;
  if (axes_input) {
    if (Value* av = In(in, 1); av != nullptr && !ConstInts(ctx, av)) {
      // Computed axes: a statically empty input means what an empty constant means (every
      // axis, or none with noop_with_empty_axes) whatever its values. Other lengths need a sum
      // whose axes are read on the host at run time (a dyn.sum), which the registry lacks.
      const Type at = ctx.TypeOf(av);
      if (!at.is_tensor() || at.rank() != 1 || !at.shape()[0].is_constant() ||
          at.shape()[0].constant() != 0) {
        return ctx.Unimplemented(absl::StrCat(
            "axes computed at run time (", at.is_tensor() ? at.ToString() : "?",
            "): only constant or statically empty axes are supported (no dyn.sum yet)"));
      }
      axes = std::vector<int64_t>{};
    } else {
      ASSIGN_OR_RETURN(axes, AxesOf(ctx, n, in, 13));
    }
    if ((!axes || axes->empty()) && IntAttr(n, "noop_with_empty_axes", 0) != 0) {
      return std::vector<Value*>{x};
    }
  } else {
    axes = IntsAttr(n, "axes");
  }
  std::vector<int64_t> a = axes ? *axes : std::vector<int64_t>{};
  return One(ctx.Op(kOp, {x}, {{"axis", a}, {"keepdims", IntAttr(n, "keepdims", 1) != 0}}));
}
constexpr char kMean[] = "mean", kSum[] = "sum", kMax[] = "max", kMin[] = "min",
               kProd[] = "prod";

// LayerNormalization-17: normalise over axes [axis, rank); Mean and InvStdDev keep the
// reduced dims as 1, which is the keepdims form of mean.
Outs LayerNormalization(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scale, Need(ctx, in, 1));
  Value* bias = In(in, 2);
  if (IntAttr(n, "stash_type", 1) != 1) return ctx.Unimplemented("stash_type != 1");
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", -1), rank);
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i) axes.push_back(i);
  Attrs red{{"axis", axes}, {"keepdims", true}};
  ASSIGN_OR_RETURN(Value * mu, ctx.Op("mean", {x}, red));
  ASSIGN_OR_RETURN(Value * d, ctx.Op("subtract", {x, mu}));
  ASSIGN_OR_RETURN(Value * d2, ctx.Op("multiply", {d, d}));
  ASSIGN_OR_RETURN(Value * var, ctx.Op("mean", {d2}, red));
  ASSIGN_OR_RETURN(Value * ve, ctx.Op("add", {var, ctx.ScalarLike(x, FloatAttr(n, "epsilon", 1e-5f))}));
  ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {ve}));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("divide", {d, sd}));
  ASSIGN_OR_RETURN(y, ctx.Op("multiply", {y, scale}));
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(y, ctx.Op("add", {y, bias}));
  }
  std::vector<Value*> outs = {y, mu};
  if (n.output_size() > 2 && !n.output(2).empty()) {
    ASSIGN_OR_RETURN(Value * inv, ctx.Op("divide", {ctx.ScalarLike(x, 1.0), sd}));
    outs.push_back(inv);
  }
  return outs;
}

// ArgMax / ArgMin: one axis, i64 indices.
template <const char* kOp>
Outs ArgReduce(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(ctx.Op(kOp, {x},
                    {{"axis", std::vector<int64_t>{IntAttr(n, "axis", 0)}},
                     {"keepdims", IntAttr(n, "keepdims", 1) != 0},
                     {"select_last_index", IntAttr(n, "select_last_index", 0) != 0},
                     {"dtype", DType::kI64}}));
}
constexpr char kArgmax[] = "argmax", kArgmin[] = "argmin";

// ReduceL1 / ReduceL2 / ReduceSumSquare / ReduceLogSum / ReduceLogSumExp as a sum of a
// transformed input (axes an attribute at opsets 11-17).
enum class SumForm { kL1, kL2, kSquare, kLog, kLogExp };
template <SumForm kForm>
Outs ReduceSumOf(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  auto axes = IntsAttr(n, "axes");
  Value* t = x;
  if (kForm == SumForm::kL1) {
    ASSIGN_OR_RETURN(t, ctx.Op("abs", {x}));
  } else if (kForm == SumForm::kL2 || kForm == SumForm::kSquare) {
    ASSIGN_OR_RETURN(t, ctx.Op("multiply", {x, x}));
  } else if (kForm == SumForm::kLogExp) {
    ASSIGN_OR_RETURN(t, ctx.Op("exp", {x}));
  }
  ASSIGN_OR_RETURN(Value * r, ctx.Op("sum", {t},
                                     {{"axis", axes ? *axes : std::vector<int64_t>{}},
                                      {"keepdims", IntAttr(n, "keepdims", 1) != 0}}));
  if (kForm == SumForm::kL2) return One(ctx.Op("sqrt", {r}));
  if (kForm == SumForm::kLog || kForm == SumForm::kLogExp) return One(ctx.Op("log", {r}));
  return std::vector<Value*>{r};
}

Outs Softmax(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const int64_t axis = IntAttr(n, "axis", ctx.opset() >= 13 ? -1 : 1);
  if (ctx.opset() < 13) {
    // Softmax-11 normalises over the flattened dims from axis: equal to a 1-axis softmax
    // only when axis is the last one.
    ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
    if (NormAxis(axis, rank) != rank - 1) {
      return ctx.Unimplemented("Softmax-11 over several trailing axes");
    }
  }
  return One(ctx.Op("nn.softmax", {x}, {{"axis", axis}}));
}

// Inference BatchNormalization: y = x * a + b with a = scale / sqrt(var + eps) and
// b = bias - mean * a, folded here into [C, 1, ..., 1] constants.
Outs BatchNormalization(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (IntAttr(n, "training_mode", 0) != 0) return ctx.Unimplemented("training_mode = 1");
  std::optional<Tensor> p[4];
  Value* pv[4];
  bool all_const = true;
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(pv[i], Need(ctx, in, i + 1));
    p[i] = ctx.ConstValue(pv[i]);
    all_const = all_const && p[i].has_value();
  }
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (!all_const) {
    // Computed statistics: the same formula as ops, reshaped to [C, 1, ..., 1].
    std::vector<int64_t> cshape = {-1};
    for (int i = 2; i < rank; ++i) cshape.push_back(1);
    ASSIGN_OR_RETURN(Value * ve,
                     ctx.Op("add", {pv[3], ctx.ScalarLike(pv[3], FloatAttr(n, "epsilon", 1e-5f))}));
    ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {ve}));
    ASSIGN_OR_RETURN(Value * a, ctx.Op("divide", {pv[0], sd}));
    ASSIGN_OR_RETURN(Value * ma, ctx.Op("multiply", {pv[2], a}));
    ASSIGN_OR_RETURN(Value * b, ctx.Op("subtract", {pv[1], ma}));
    ASSIGN_OR_RETURN(Value * a3, ctx.Op("reshape", {a}, {{"newshape", cshape}}));
    ASSIGN_OR_RETURN(Value * b3, ctx.Op("reshape", {b}, {{"newshape", cshape}}));
    ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, a3}));
    return One(ctx.Op("add", {y, b3}));
  }
  const int64_t c = p[0]->num_elements();
  const double eps = FloatAttr(n, "epsilon", 1e-5f);
  std::vector<int64_t> shape = {c};
  for (int i = 2; i < rank; ++i) shape.push_back(1);
  std::vector<double> a(c), b(c);
  for (int64_t i = 0; i < c; ++i) {
    if (p[1]->num_elements() != c || p[2]->num_elements() != c || p[3]->num_elements() != c) {
      return ctx.Error("scale, bias, mean and var differ in length");
    }
    a[i] = p[0]->GetDouble(i) / std::sqrt(p[3]->GetDouble(i) + eps);
    b[i] = p[1]->GetDouble(i) - p[2]->GetDouble(i) * a[i];
  }
  const DType dt = ctx.DTypeOf(x);
  ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, ctx.Const(Tensor::FromDoubles(dt, shape, a))}));
  return One(ctx.Op("add", {y, ctx.Const(Tensor::FromDoubles(dt, shape, b))}));
}

Outs Resize(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 4) return ctx.Unimplemented("only 4-D (NCHW) inputs");
  std::string mode = StringAttr(n, "mode", "nearest");
  if (mode == "nearest") mode = "nearest_neighbor";
  // The registry models cubic resize's shape, but its kernel has no cubic method yet.
  if (mode == "cubic") return ctx.Unimplemented("mode 'cubic' (no cubic resize kernel yet)");
  std::string nearest = StringAttr(n, "nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil" || nearest == "floor" ||
      nearest == "ceil") {
    // same names in the registry
  } else {
    return ctx.Unimplemented(absl::StrCat("nearest_mode '", nearest, "'"));
  }
  const std::string ctm = StringAttr(n, "coordinate_transformation_mode", "half_pixel");
  if (ctm == "tf_crop_and_resize") return ctx.Unimplemented("tf_crop_and_resize (roi)");
  Attrs attrs{{"method", mode},
              {"coordinate_transformation_mode", ctm},
              {"rounding_method", mode == "nearest_neighbor" ? nearest : std::string()},
              {"cubic_alpha", static_cast<double>(FloatAttr(n, "cubic_coeff_a", -0.75f))},
              {"cubic_exclude", IntAttr(n, "exclude_outside", 0)},
              {"extrapolation_value", static_cast<double>(FloatAttr(n, "extrapolation_value", 0))}};
  Value* scales = In(in, 2);
  Value* sizes = In(in, 3);
  if (sizes != nullptr && ctx.RankOf(sizes) == 1) {
    if (auto s = ConstInts(ctx, sizes)) {
      if (s->size() != 4) return ctx.Error("sizes must have 4 elements");
      attrs.Set("size", std::vector<int64_t>{(*s)[2], (*s)[3]});
      return One(ctx.Op("image.resize2d", {x}, attrs));
    }
    ASSIGN_OR_RETURN(Value * hw, ctx.Op("strided_slice", {sizes},
                                        {{"begin", std::vector<int64_t>{2}},
                                         {"end", std::vector<int64_t>{4}}}));
    return One(ctx.Op("dyn.image.resize2d", {x, hw}, attrs));
  }
  if (scales == nullptr) return ctx.Error("needs scales or sizes");
  auto sc = ctx.ConstValue(scales);
  if (!sc) return ctx.Unimplemented("computed scales");
  if (sc->num_elements() != 4 || sc->GetDouble(0) != 1.0 || sc->GetDouble(1) != 1.0) {
    return ctx.Unimplemented("scales must be [1, 1, sh, sw]");
  }
  const Type t = ctx.TypeOf(x);
  if (!t.shape()[2].is_constant() || !t.shape()[3].is_constant()) {
    return ctx.Unimplemented("scales on symbolic spatial dims");
  }
  // floor(dim * scale), checked before the cast: a NaN or a value outside int64 (scales are user
  // input; 3e38, or 2^62 * 4) would make the cast undefined.
  std::vector<int64_t> size;
  for (int axis : {2, 3}) {
    const double scale = sc->GetDouble(axis);
    const double out = std::floor(static_cast<double>(t.shape()[axis].constant()) * scale);
    // 2^63 is exact in double; everything in [0, 2^63) converts to int64.
    if (!(out >= 0 && out < 9223372036854775808.0)) {
      return ctx.Error(absl::StrFormat(
          "scales[%d] = %g on dim %d gives output size %g, which is not in [0, 2^63)", axis, scale,
          t.shape()[axis].constant(), out));
    }
    size.push_back(static_cast<int64_t>(out));
  }
  attrs.Set("size", std::move(size));
  return One(ctx.Op("image.resize2d", {x}, attrs));
}

// ---- NonMaxSuppression -----------------------------------------------------------------------

// NonMaxSuppression-11 (unchanged through opset 17; opset-10 models are turned away by the
// importer's generic older-version check, as 10 != 11): one non_max_suppression. Absent
// optional inputs become constants with ONNX's defaults (max_output_boxes_per_class 0,
// iou_threshold 0), except score_threshold: an absent one is has_score_threshold = false with a
// placeholder input, because no threshold value filters nothing (ONNX Runtime keeps even -inf
// scores without it). Computed inputs stay inputs: the registry op's counter decides the
// output size on the device.
Outs NonMaxSuppression(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * boxes, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scores, Need(ctx, in, 1));
  const int64_t center_point_box = IntAttr(n, "center_point_box", 0);
  if (center_point_box != 0 && center_point_box != 1) {
    return ctx.Error(absl::StrFormat("center_point_box must be 0 or 1, got %d", center_point_box));
  }
  Value* max_output = In(in, 2);
  if (max_output == nullptr) max_output = ctx.Const(Tensor::FromInt64s(DType::kI64, {}, {0}));
  Value* iou_threshold = In(in, 3);
  if (iou_threshold == nullptr) iou_threshold = ctx.Const(Tensor::Scalar(DType::kF32, 0));
  Value* score_threshold = In(in, 4);
  const bool has_score_threshold = score_threshold != nullptr;
  if (!has_score_threshold) score_threshold = ctx.Const(Tensor::Scalar(DType::kF32, 0));
  return One(ctx.Op("non_max_suppression",
                    {boxes, scores, max_output, iou_threshold, score_threshold},
                    {{"center_point_box", center_point_box},
                     {"has_score_threshold", has_score_threshold}}));
}

// ---- Constant --------------------------------------------------------------------------------

Outs Constant(ImportContext& ctx, const onnx::NodeProto& n, const Ins&) {
  if (const auto* a = FindAttr(n, "value")) {
    auto t = TensorFromProto(a->t());
    if (!t.ok()) return ctx.Error(t.status().message());
    return std::vector<Value*>{ctx.Const(*std::move(t))};
  }
  if (const auto* a = FindAttr(n, "value_float")) {
    return std::vector<Value*>{ctx.Const(Tensor::Scalar(DType::kF32, a->f()))};
  }
  if (const auto* a = FindAttr(n, "value_int")) {
    return std::vector<Value*>{ctx.Const(Tensor::FromInt64s(DType::kI64, {}, {a->i()}))};
  }
  if (const auto* a = FindAttr(n, "value_floats")) {
    std::vector<double> v(a->floats().begin(), a->floats().end());
    const int64_t k = static_cast<int64_t>(v.size());
    return std::vector<Value*>{ctx.Const(Tensor::FromDoubles(DType::kF32, {k}, v))};
  }
  if (const auto* a = FindAttr(n, "value_ints")) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    const int64_t k = static_cast<int64_t>(v.size());
    return std::vector<Value*>{ctx.Const(Tensor::FromInt64s(DType::kI64, {k}, v))};
  }
  return ctx.Unimplemented("only value, value_float(s) and value_int(s) are supported");
}

struct Entry {
  absl::string_view op_type;
  Converter convert;
};

constexpr Entry kConverters[] = {
    {"Abs", Unary<kAbs>},
    {"Add", Binary<kAdd>},
    {"And", And},
    {"ArgMax", ArgReduce<kArgmax>},
    {"ArgMin", ArgReduce<kArgmin>},
    {"BatchNormalization", BatchNormalization},
    {"Cast", Cast},
    {"Clip", Clip},
    {"Concat", Concat},
    {"Constant", Constant},
    {"ConstantOfShape", ConstantOfShape},
    {"Conv", Conv},
    {"ConvTranspose", ConvTranspose},
    {"Div", Binary<kDiv>},
    {"Dropout", Dropout},
    {"Equal", Binary<kEqual>},
    {"Exp", Unary<kExp>},
    {"Expand", Expand},
    {"Flatten", Flatten},
    {"Gather", Gather},
    {"GatherND", GatherND},
    {"Gemm", Gemm},
    {"GlobalAveragePool", GlobalAveragePool},
    {"Greater", Binary<kGreater>},
    {"GreaterOrEqual", GreaterOrEqual},
    {"HardSigmoid", HardSigmoid},
    {"Identity", Identity},
    {"LayerNormalization", LayerNormalization},
    {"LeakyRelu", LeakyRelu},
    {"Less", Binary<kLess>},
    {"LessOrEqual", LessOrEqual},
    {"Log", Unary<kLog>},
    {"MatMul", MatMul},
    {"Max", Variadic<kMaximum>},
    {"MaxPool", MaxPool},
    {"Mean", MeanOf},
    {"Min", Variadic<kMinimum>},
    {"Mul", Binary<kMul>},
    {"Neg", Unary<kNeg>},
    {"NonMaxSuppression", NonMaxSuppression},
    {"NonZero", NonZero},
    {"Not", Not},
    {"Or", Or},
    {"Pad", Pad},
    {"Pow", Pow},
    {"Range", Range},
    {"Reciprocal", Reciprocal},
    {"ReduceL1", ReduceSumOf<SumForm::kL1>},
    {"ReduceL2", ReduceSumOf<SumForm::kL2>},
    {"ReduceLogSum", ReduceSumOf<SumForm::kLog>},
    {"ReduceLogSumExp", ReduceSumOf<SumForm::kLogExp>},
    {"ReduceMax", Reduce<kMax>},
    {"ReduceMean", Reduce<kMean>},
    {"ReduceMin", Reduce<kMin>},
    {"ReduceProd", Reduce<kProd>},
    {"ReduceSum", Reduce<kSum>},
    {"ReduceSumSquare", ReduceSumOf<SumForm::kSquare>},
    {"Relu", Unary<kRelu>},
    {"Reshape", Reshape},
    {"Resize", Resize},
    {"RoiAlign", RoiAlign},
    {"Shape", Shape},
    {"Size", Size},
    {"Sigmoid", Unary<kSigmoid>},
    {"Slice", Slice},
    {"Softmax", Softmax},
    {"Split", Split},
    {"Sqrt", Unary<kSqrt>},
    {"Floor", Unary<kFloor>},
    {"Ceil", Unary<kCeil>},
    {"Squeeze", Squeeze},
    {"Sub", Binary<kSub>},
    {"Sum", Variadic<kAdd>},
    {"Tanh", Unary<kTanh>},
    {"Tile", Tile},
    {"TopK", TopK},
    {"Transpose", Transpose},
    {"Unsqueeze", Unsqueeze},
    {"Where", Where},
};

}  // namespace

Converter FindConverter(absl::string_view op_type) {
  for (const Entry& e : kConverters) {
    if (e.op_type == op_type) return e.convert;
  }
  return nullptr;
}

absl::string_view OutOfScopeReason(absl::string_view op_type) {
  // If and Loop are imported by the graph importer itself (their bodies become regions).
  if (op_type == "Scan") return "Scan is not supported (If and Loop are)";
  return "";
}

}  // namespace hetpass::onnx_frontend
