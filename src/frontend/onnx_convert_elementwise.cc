// ONNX converters of the elementwise family: unary math, binary arithmetic and comparisons
// (variadic Max/Min/Sum/Mean folded left), Mod, BitShift, boolean logic (Not/And/Or/Xor), the predicates
// Sign/IsNaN/IsInf, activations built from elementwise ops (LeakyRelu, HardSigmoid, HardSwish,
// Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu, Shrink, PRelu), Cast, CastLike, Clip,
// Where, and the inference identities Identity and Dropout.
// The registry side is shape_funcs/elementwise.cc; the conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

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
               kMaximum[] = "maximum", kMinimum[] = "minimum", kRound[] = "round", kErf[] = "erf",
               kSin[] = "sin", kCos[] = "cos", kTan[] = "tan", kAsin[] = "asin", kAcos[] = "acos",
               kAtan[] = "atan", kSinh[] = "sinh", kCosh[] = "cosh", kAsinh[] = "asinh",
               kAcosh[] = "acosh", kAtanh[] = "atanh";

// Mod: fmod = 0 is the floor modulo (integers only, as the spec says), fmod = 1 C's fmod.
Outs Mod(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  const int64_t fmod = IntAttr(n, "fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.Error(absl::StrCat("fmod must be 0 or 1, got ", fmod));
  if (fmod == 0 && ctx.TypeOf(a).is_tensor() && IsFloat(ctx.DTypeOf(a))) {
    return ctx.Error("fmod = 0 on a floating-point input (the spec requires fmod = 1 there)");
  }
  return One(ctx.Op(fmod == 1 ? "fmod" : "mod", {a, b}));
}

// BitShift: the direction attribute picks left_shift or right_shift (ONNX defines it on unsigned
// integers; the registry ops take every integer dtype).
Outs BitShift(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  const std::string direction = StringAttr(n, "direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Error(absl::StrCat("direction must be LEFT or RIGHT, got '", direction, "'"));
  }
  return One(ctx.Op(direction == "LEFT" ? "left_shift" : "right_shift", {a, b}));
}

// Sign: 1, -1 or 0, and NaN for NaN (x * 0 keeps it, as numpy's sign does).
Outs Sign(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * pos, ctx.Op("greater", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * neg, ctx.Op("less", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * rest, ctx.Op("multiply", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * lower, ctx.Op("where", {neg, ctx.ScalarLike(x, -1.0), rest}));
  return One(ctx.Op("where", {pos, ctx.ScalarLike(x, 1.0), lower}));
}

// IsNaN: x != x.
Outs IsNaN(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * same, ctx.Op("equal", {x, x}));
  return One(ctx.Op("equal", {same, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
}

// IsInf: x == +inf (detect_positive) or x == -inf (detect_negative); neither gives all false.
Outs IsInf(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const bool pos = IntAttr(n, "detect_positive", 1) != 0, neg = IntAttr(n, "detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  if (pos && neg) {
    ASSIGN_OR_RETURN(Value * a, ctx.Op("abs", {x}));
    return One(ctx.Op("equal", {a, ctx.ScalarLike(x, inf)}));
  }
  if (pos || neg) return One(ctx.Op("equal", {x, ctx.ScalarLike(x, pos ? inf : -inf)}));
  return One(ctx.Op("greater", {x, x}));  // false everywhere, NaN included
}

// Elu: x > 0 ? x : alpha * (e^x - 1).
Outs Elu(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(EluOf(ctx, x, FloatAttr(n, "alpha", 1.0f)));
}

// Selu: gamma * (x > 0 ? x : alpha * (e^x - 1)), the spec's default constants as floats.
Outs Selu(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * pos, ctx.Op("greater", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * e, ExpMinusOne(ctx, x, FloatAttr(n, "alpha", 1.67326319217681884765625f)));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("where", {pos, x, e}));
  return One(ctx.Op("multiply", {y, ctx.ScalarLike(x, FloatAttr(n, "gamma", 1.05070102214813232421875f))}));
}

// Celu: max(0, x) + min(0, alpha * (e^(x / alpha) - 1)).
Outs Celu(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const double alpha = FloatAttr(n, "alpha", 1.0f);
  if (alpha == 0) return ctx.Error("alpha must not be 0");
  ASSIGN_OR_RETURN(Value * scaled, ctx.Op("divide", {x, ctx.ScalarLike(x, alpha)}));
  ASSIGN_OR_RETURN(Value * e, ExpMinusOne(ctx, scaled, alpha));
  ASSIGN_OR_RETURN(e, ctx.Op("minimum", {e, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * p, ctx.Op("maximum", {x, ctx.ScalarLike(x, 0.0)}));
  return One(ctx.Op("add", {p, e}));
}

// Softplus: log(e^x + 1), as the spec writes it.
Outs Softplus(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(SoftplusOf(ctx, x));
}

// Softsign: x / (1 + |x|).
Outs Softsign(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(SoftsignOf(ctx, x));
}

// ThresholdedRelu: x > alpha ? x : 0.
Outs ThresholdedRelu(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(ThresholdedReluOf(ctx, x, FloatAttr(n, "alpha", 1.0f)));
}

// Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
Outs Shrink(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const double lambd = FloatAttr(n, "lambd", 0.5f), bias = FloatAttr(n, "bias", 0.0f);
  ASSIGN_OR_RETURN(Value * low, ctx.Op("less", {x, ctx.ScalarLike(x, -lambd)}));
  ASSIGN_OR_RETURN(Value * high, ctx.Op("greater", {x, ctx.ScalarLike(x, lambd)}));
  ASSIGN_OR_RETURN(Value * plus, ctx.Op("add", {x, ctx.ScalarLike(x, bias)}));
  ASSIGN_OR_RETURN(Value * minus, ctx.Op("subtract", {x, ctx.ScalarLike(x, bias)}));
  ASSIGN_OR_RETURN(Value * upper, ctx.Op("where", {high, minus, ctx.ScalarLike(x, 0.0)}));
  return One(ctx.Op("where", {low, plus, upper}));
}

// PRelu: x < 0 ? slope * x : x, slope broadcast to x.
Outs PRelu(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * slope, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * neg, ctx.Op("less", {x, ctx.ScalarLike(x, 0.0)}));
  ASSIGN_OR_RETURN(Value * scaled, ctx.Op("multiply", {x, slope}));
  return One(ctx.Op("where", {neg, scaled, x}));
}

// CastLike: Cast to the second input's dtype.
Outs CastLike(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * like, Need(ctx, in, 1));
  if (!ctx.TypeOf(like).is_tensor()) return ctx.Unimplemented("target_type whose dtype is not known");
  return One(CastTo(ctx, x, ctx.DTypeOf(like)));
}

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
  return One(LeakyReluOf(ctx, x, FloatAttr(n, "alpha", 0.01f)));
}

Outs HardSigmoid(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(HardSigmoidOf(ctx, x, FloatAttr(n, "alpha", 0.2f), FloatAttr(n, "beta", 0.5f)));
}

// HardSwish: x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
Outs HardSwish(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * f, HardSigmoidOf(ctx, x, 1.0f / 6.0f, 0.5));
  return One(ctx.Op("multiply", {x, f}));
}

// Xor: a ? !b : b.
Outs Xor(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * not_b, ctx.Op("equal", {b, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
  return One(ctx.Op("where", {a, not_b, b}));
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
// Dropout is the identity at inference (its mask output all true). In training mode (a
// training_mode that is not a constant false) it keeps x * 1 / (1 - ratio) where a uniform draw
// is at least the ratio and 0 elsewhere, the mask telling which: a ratio of 0 keeps everything,
// so that case is deterministic. A computed training_mode selects per call.
Outs Dropout(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const bool want_mask = n.output_size() >= 2 && !n.output(1).empty();
  Value* training = In(in, 2);
  std::optional<Tensor> t = training != nullptr ? ctx.ConstValue(training) : std::nullopt;
  const bool inference = training == nullptr || (t && t->num_elements() == 1 && t->GetInt64(0) == 0);
  if (inference) {
    if (!want_mask) return std::vector<Value*>{x};
    ASSIGN_OR_RETURN(Value * shape, ctx.Op("shape_of", {x}));
    ASSIGN_OR_RETURN(Value * mask, ctx.Op("dyn.ones", {shape}, {{"dtype", DType::kBool}}));
    return std::vector<Value*>{x, mask};
  }
  const DType dt = ctx.DTypeOf(x);
  if (!IsFloat(dt)) return ctx.Error(absl::StrCat("data must be floating point, got ", DTypeName(dt)));
  Value* ratio = In(in, 1);
  if (ratio == nullptr) {
    ratio = ctx.ScalarLike(x, 0.5);
  } else if (ctx.DTypeOf(ratio) != dt) {
    ASSIGN_OR_RETURN(ratio, ctx.Op("cast", {ratio}, {{"dtype", dt}}));
  }
  int64_t seed = -1;
  if (FindAttr(n, "seed") != nullptr) seed = IntAttr(n, "seed", 0) & 0x7fffffff;
  ASSIGN_OR_RETURN(Value * u, ctx.Op("random.uniform_like", {x}, {{"dtype", dt}, {"seed", seed}}));
  ASSIGN_OR_RETURN(Value * below, ctx.Op("less", {u, ratio}));
  ASSIGN_OR_RETURN(Value * keep, ctx.Op("equal", {below, ctx.Const(Tensor::Scalar(DType::kBool, 0))}));
  ASSIGN_OR_RETURN(Value * rest, ctx.Op("subtract", {ctx.ScalarLike(x, 1.0), ratio}));
  ASSIGN_OR_RETURN(Value * scale, ctx.Op("divide", {ctx.ScalarLike(x, 1.0), rest}));
  ASSIGN_OR_RETURN(Value * scaled, ctx.Op("multiply", {x, scale}));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("where", {keep, scaled, ctx.ScalarLike(x, 0.0)}));
  Value* mask = keep;
  if (!t) {  // training_mode computed: dropout only when it holds
    ASSIGN_OR_RETURN(y, ctx.Op("where", {training, y, x}));
    ASSIGN_OR_RETURN(mask, ctx.Op("where", {training, keep, ctx.Const(Tensor::Scalar(DType::kBool, 1))}));
  }
  if (!want_mask) return std::vector<Value*>{y};
  return std::vector<Value*>{y, mask};
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
  return One(CastTo(ctx, x, *dt));
}

Outs Where(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * c, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * y, Need(ctx, in, 2));
  return One(ctx.Op("where", {c, x, y}));
}

}  // namespace

void AddElementwiseConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Abs", Unary<kAbs>},
      {"Acos", Unary<kAcos>},
      {"Acosh", Unary<kAcosh>},
      {"Asin", Unary<kAsin>},
      {"Asinh", Unary<kAsinh>},
      {"Atan", Unary<kAtan>},
      {"Atanh", Unary<kAtanh>},
      {"BitShift", BitShift},
      {"CastLike", CastLike},
      {"Celu", Celu},
      {"Cos", Unary<kCos>},
      {"Cosh", Unary<kCosh>},
      {"Elu", Elu},
      {"Erf", Unary<kErf>},
      {"HardSwish", HardSwish},
      {"IsInf", IsInf},
      {"IsNaN", IsNaN},
      {"Mod", Mod},
      {"PRelu", PRelu},
      {"Round", Unary<kRound>},
      {"Selu", Selu},
      {"Shrink", Shrink},
      {"Sign", Sign},
      {"Sin", Unary<kSin>},
      {"Sinh", Unary<kSinh>},
      {"Softplus", Softplus},
      {"Softsign", Softsign},
      {"Tan", Unary<kTan>},
      {"ThresholdedRelu", ThresholdedRelu},
      {"Xor", Xor},
      {"Add", Binary<kAdd>},
      {"And", And},
      {"Cast", Cast},
      {"Clip", Clip},
      {"Div", Binary<kDiv>},
      {"Dropout", Dropout},
      {"Equal", Binary<kEqual>},
      {"Exp", Unary<kExp>},
      {"Greater", Binary<kGreater>},
      {"GreaterOrEqual", GreaterOrEqual},
      {"HardSigmoid", HardSigmoid},
      {"Identity", Identity},
      {"LeakyRelu", LeakyRelu},
      {"Less", Binary<kLess>},
      {"LessOrEqual", LessOrEqual},
      {"Log", Unary<kLog>},
      {"Max", Variadic<kMaximum>},
      {"Mean", MeanOf},
      {"Min", Variadic<kMinimum>},
      {"Mul", Binary<kMul>},
      {"Neg", Unary<kNeg>},
      {"Not", Not},
      {"Or", Or},
      {"Pow", Pow},
      {"Reciprocal", Reciprocal},
      {"Relu", Unary<kRelu>},
      {"Sigmoid", Unary<kSigmoid>},
      {"Sqrt", Unary<kSqrt>},
      {"Floor", Unary<kFloor>},
      {"Ceil", Unary<kCeil>},
      {"Sub", Binary<kSub>},
      {"Sum", Variadic<kAdd>},
      {"Tanh", Unary<kTanh>},
      {"Where", Where},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
