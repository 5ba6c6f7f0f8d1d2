// ONNX converters of the elementwise family: unary math, binary arithmetic and comparisons
// (variadic Max/Min/Sum/Mean folded left), boolean logic, activations built from elementwise ops
// (LeakyRelu, HardSigmoid), Cast, Clip, Where, and the inference identities Identity and Dropout.
// The registry side is shape_funcs/elementwise.cc; the conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <limits>
#include <vector>

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

}  // namespace

void AddElementwiseConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Abs", Unary<kAbs>},
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
