// ONNX converters of the quantization family: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv, each a
// composition of registry ops (no quantized op in the registry):
//
//   quantize    q = clip(round(x / scale) + zp, lo, hi) cast to the zero point's dtype (uint8
//               when there is none); `round` halves to even, as ONNX asks. The arithmetic is in
//               x's float dtype (the ONNX reference divides in it too); the clip runs before
//               the cast, so no out-of-range float ever reaches a float-to-int conversion.
//   dequantize  y = float(int32(q) - int32(zp)) * scale: the difference of two 8-bit values is
//               exact in int32, and its conversion to float is exact (|d| <= 255).
//   integer     MatMulInteger / ConvInteger: (a - a_zp) and (b - b_zp) widened to int32, then
//   products    the MatMul / Conv converters of their families on int32 operands (nn.dense,
//               nn.batch_matmul, nn.conv2d accept any dtype both operands share). No library
//               GEMM takes int32 (the oneDNN groups match f32 only), so the reference kernels
//               run them; they accumulate in double, which is exact while the sum stays below
//               2^53: each product is at most 255 * 255 < 2^16, so up to 2^37 terms, far more
//               than any real K (f32 would be exact only up to 2^24, i.e. 256 terms). A sum that
//               leaves int32 (K > 33,000 with extreme values) is outside what ONNX defines.
//   QLinear*    the integer product as above, then requantized:
//               y = clip(round(double(acc) * double(a_scale * b_scale / y_scale) + y_zp)).
//               The factor is formed in f32 as the ONNX reference forms it, the product in f64
//               as NumPy promotes int32 * float32 there, so rounding ties land on the same side.
//
// Per-axis parameters: a 1-D scale / zero point of length C along `axis` of x is reshaped to
// [C, 1, .., 1] so that NumPy broadcasting lines it up with x; a 1-element 1-D one is
// per-tensor (as ONNX Runtime reads it). MatMulInteger and QLinearMatMul take per-row
// parameters of a ([M] -> [M, 1]) and per-column ones of b ([N], broadcasting as is); ConvInteger
// and QLinearConv a per-output-channel w zero point / scale [M]. Blocked quantization (a scale
// of rank >= 2, opset 21) and the float8 / int4 / 16-bit formats are Unimplemented.
#include "frontend/onnx_converters.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// The saturation range of a quantized dtype, or Unimplemented naming it.
struct QuantRange {
  double lo, hi;
};
absl::StatusOr<QuantRange> RangeOf(ImportContext& ctx, DType dt, absl::string_view what) {
  if (dt == DType::kU8) return QuantRange{0, 255};
  if (dt == DType::kI8) return QuantRange{-128, 127};
  return ctx.Unimplemented(
      absl::StrCat(what, " must be uint8 or int8, got ", DTypeName(dt)));
}

// The static element count of a rank-1 `v`, or nullopt when its dim is symbolic.
std::optional<int64_t> StaticLength(const Type& t) {
  if (!t.is_tensor() || t.rank() != 1 || !t.shape()[0].is_constant()) return std::nullopt;
  return t.shape()[0].constant();
}

// A quantization parameter (scale or zero point) laid out to broadcast against x along the
// `axis` attribute (possibly negative): a scalar or a 1-element vector as is, a vector of
// length C = x.shape[axis] as [C, 1, .., 1]. The axis is checked only when it is used.
absl::StatusOr<Value*> AlongAxis(ImportContext& ctx, Value* p, Value* x, int64_t axis,
                                 absl::string_view what) {
  const Type t = ctx.TypeOf(p);
  if (!t.is_tensor()) return ctx.Unimplemented(absl::StrCat(what, " has no known type"));
  if (t.rank() == 0) return p;
  if (t.rank() > 1) {
    return ctx.Unimplemented(absl::StrCat(
        what, " of rank ", t.rank(), ": blocked quantization is not supported (scalar or 1-D only)"));
  }
  const std::optional<int64_t> len = StaticLength(t);
  if (len && *len == 1) return ctx.Op("squeeze", {p}, {{"axis", std::vector<int64_t>{0}}});
  ASSIGN_OR_RETURN(const int rank, NeedRank(ctx, x));
  const int64_t a = NormAxis(axis, rank);
  if (a < 0 || a >= rank) {
    return ctx.Error(absl::StrFormat("axis %d is out of range for x of rank %d", axis, rank));
  }
  const DimExpr dim = ctx.TypeOf(x).shape()[a];  // a copy: TypeOf returns a temporary
  if (len && dim.is_constant() && *len != dim.constant()) {
    return ctx.Error(absl::StrFormat("%s has %d elements but axis %d of x has %d", what, *len,
                                     axis, dim.constant()));
  }
  const int64_t trailing = rank - 1 - a;
  if (trailing == 0) return p;
  return ctx.Op("expand_dims", {p}, {{"axis", int64_t{1}}, {"num_newaxis", trailing}});
}

// The scale and zero point of one quantized tensor must have the same shape (ONNX), checked
// where both are known.
absl::Status CheckSameShape(ImportContext& ctx, Value* scale, Value* zp, absl::string_view what) {
  if (zp == nullptr) return absl::OkStatus();
  const Type s = ctx.TypeOf(scale), z = ctx.TypeOf(zp);
  if (!s.is_tensor() || !z.is_tensor()) return absl::OkStatus();
  bool differ = s.rank() != z.rank();
  for (int i = 0; !differ && i < s.rank(); ++i) {
    differ = s.shape()[i].is_constant() && z.shape()[i].is_constant() &&
             s.shape()[i].constant() != z.shape()[i].constant();
  }
  if (!differ) return absl::OkStatus();
  return ctx.Error(absl::StrCat(what, " scale ", s.ToString(), " and zero point ", z.ToString(),
                                " must have the same shape"));
}

// Opset 21's block_size and output_dtype: only their defaults (or an output_dtype equal to
// what the zero point says) are supported.
absl::StatusOr<DType> QuantizedDType(ImportContext& ctx, const onnx::NodeProto& n, Value* zp) {
  if (IntAttr(n, "block_size", 0) != 0) {
    return ctx.Unimplemented("blocked quantization (block_size != 0) is not supported");
  }
  std::optional<DType> out;
  if (const int64_t od = IntAttr(n, "output_dtype", 0); od != 0) {
    auto dt = DTypeFromOnnx(static_cast<int32_t>(od));
    if (!dt.ok()) return ctx.Unimplemented(absl::StrCat("output_dtype: ", dt.status().message()));
    out = *dt;
  }
  if (zp != nullptr) {
    const DType z = ctx.DTypeOf(zp);
    if (out && *out != z) {
      return ctx.Error(absl::StrCat("output_dtype ", DTypeName(*out), " differs from the zero "
                                    "point's dtype ", DTypeName(z)));
    }
    out = z;
  }
  return out.value_or(DType::kU8);
}

// clip(round(v) [+ zp], range) cast to `dt`; v and zp_f (when set) share v's float dtype.
absl::StatusOr<Value*> RoundAndSaturate(ImportContext& ctx, Value* v, Value* zp_f, DType dt,
                                        QuantRange range) {
  ASSIGN_OR_RETURN(Value * q, ctx.Op("round", {v}));
  if (zp_f != nullptr) {
    ASSIGN_OR_RETURN(q, ctx.Op("add", {q, zp_f}));
  }
  ASSIGN_OR_RETURN(q, ctx.Op("maximum", {q, ctx.ScalarLike(q, range.lo)}));
  ASSIGN_OR_RETURN(q, ctx.Op("minimum", {q, ctx.ScalarLike(q, range.hi)}));
  return ctx.Op("cast", {q}, {{"dtype", dt}});
}

// int32(q) - int32(zp), zp already laid out for broadcasting (or nullptr: zero).
absl::StatusOr<Value*> Centered(ImportContext& ctx, Value* q, Value* zp) {
  const DType dt = ctx.DTypeOf(q);
  if (dt != DType::kU8 && dt != DType::kI8) {
    return ctx.Unimplemented(
        absl::StrCat("quantized operand must be uint8 or int8, got ", DTypeName(dt)));
  }
  ASSIGN_OR_RETURN(Value * w, CastTo(ctx, q, DType::kI32));
  if (zp == nullptr) return w;
  ASSIGN_OR_RETURN(Value * z, CastTo(ctx, zp, DType::kI32));
  return ctx.Op("subtract", {w, z});
}

// ---- QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear -----------------------------

Outs QuantizeLinear(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scale, Need(ctx, in, 1));
  Value* zp = In(in, 2);
  ASSIGN_OR_RETURN(const DType out, QuantizedDType(ctx, n, zp));
  ASSIGN_OR_RETURN(const QuantRange range, RangeOf(ctx, out, "the quantized dtype"));
  RETURN_IF_ERROR(CheckSameShape(ctx, scale, zp, "y"));
  // Opset 10 has no axis attribute (per-tensor only); AlongAxis rejects a vector it cannot use.
  const int64_t axis = IntAttr(n, "axis", 1);
  // int32 x (opsets 10-13) is divided in double, as NumPy does for int32 / float32.
  const DType cd = IsFloat(ctx.DTypeOf(x)) ? ctx.DTypeOf(x) : DType::kF64;
  ASSIGN_OR_RETURN(Value * xs, CastTo(ctx, x, cd));
  ASSIGN_OR_RETURN(Value * s, AlongAxis(ctx, scale, x, axis, "y_scale"));
  ASSIGN_OR_RETURN(s, CastTo(ctx, s, cd));
  Value* z = nullptr;
  if (zp != nullptr) {
    ASSIGN_OR_RETURN(z, AlongAxis(ctx, zp, x, axis, "y_zero_point"));
    ASSIGN_OR_RETURN(z, CastTo(ctx, z, cd));
  }
  ASSIGN_OR_RETURN(Value * d, ctx.Op("divide", {xs, s}));
  return One(RoundAndSaturate(ctx, d, z, out, range));
}

Outs DequantizeLinear(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scale, Need(ctx, in, 1));
  Value* zp = In(in, 2);
  if (IntAttr(n, "block_size", 0) != 0) {
    return ctx.Unimplemented("blocked quantization (block_size != 0) is not supported");
  }
  RETURN_IF_ERROR(CheckSameShape(ctx, scale, zp, "x"));
  const int64_t axis = IntAttr(n, "axis", 1);
  const DType xt = ctx.DTypeOf(x);
  const DType ft = ctx.DTypeOf(scale);
  if (!IsFloat(ft)) return ctx.Error(absl::StrCat("x_scale must be floating point, got ", DTypeName(ft)));
  ASSIGN_OR_RETURN(Value * s, AlongAxis(ctx, scale, x, axis, "x_scale"));
  Value* z = nullptr;
  if (zp != nullptr) {
    if (ctx.DTypeOf(zp) != xt) {
      return ctx.Error(absl::StrCat("x (", DTypeName(xt), ") and x_zero_point (",
                                    DTypeName(ctx.DTypeOf(zp)), ") must have the same dtype"));
    }
    ASSIGN_OR_RETURN(z, AlongAxis(ctx, zp, x, axis, "x_zero_point"));
  }
  Value* centered = nullptr;
  if (xt == DType::kI32) {
    // int32 x: the zero point is 0 by the spec; a nonzero one is honoured in int64, where the
    // difference cannot overflow.
    ASSIGN_OR_RETURN(centered, CastTo(ctx, x, DType::kI64));
    if (z != nullptr) {
      ASSIGN_OR_RETURN(Value * z64, CastTo(ctx, z, DType::kI64));
      ASSIGN_OR_RETURN(centered, ctx.Op("subtract", {centered, z64}));
    }
  } else {
    ASSIGN_OR_RETURN(centered, Centered(ctx, x, z));
  }
  ASSIGN_OR_RETURN(Value * f, CastTo(ctx, centered, ft));
  return One(ctx.Op("multiply", {f, s}));
}

// The ONNX function body: range [min(0, min x), max(0, max x)] over 255 steps; the zero point
// is the saturated, rounded image of 0 (so 0 is exactly representable); then QuantizeLinear.
Outs DynamicQuantizeLinear(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (!IsFloat(ctx.DTypeOf(x))) {
    return ctx.Error(absl::StrCat("x must be floating point, got ", DTypeName(ctx.DTypeOf(x))));
  }
  const Attrs all{{"axis", std::vector<int64_t>{}}, {"keepdims", false}};
  Value* zero = ctx.ScalarLike(x, 0.0);
  ASSIGN_OR_RETURN(Value * lo, ctx.Op("min", {x}, all));
  ASSIGN_OR_RETURN(lo, ctx.Op("minimum", {lo, zero}));
  ASSIGN_OR_RETURN(Value * hi, ctx.Op("max", {x}, all));
  ASSIGN_OR_RETURN(hi, ctx.Op("maximum", {hi, zero}));
  ASSIGN_OR_RETURN(Value * span, ctx.Op("subtract", {hi, lo}));
  ASSIGN_OR_RETURN(Value * scale, ctx.Op("divide", {span, ctx.ScalarLike(x, 255.0)}));
  ASSIGN_OR_RETURN(Value * lo_scaled, ctx.Op("divide", {lo, scale}));
  ASSIGN_OR_RETURN(Value * zp_f, ctx.Op("subtract", {zero, lo_scaled}));
  ASSIGN_OR_RETURN(zp_f, ctx.Op("maximum", {zp_f, zero}));
  ASSIGN_OR_RETURN(zp_f, ctx.Op("minimum", {zp_f, ctx.ScalarLike(x, 255.0)}));
  ASSIGN_OR_RETURN(zp_f, ctx.Op("round", {zp_f}));
  ASSIGN_OR_RETURN(Value * zp, ctx.Op("cast", {zp_f}, {{"dtype", DType::kU8}}));
  ASSIGN_OR_RETURN(Value * d, ctx.Op("divide", {x, scale}));
  ASSIGN_OR_RETURN(Value * y, RoundAndSaturate(ctx, d, zp_f, DType::kU8, {0, 255}));
  return std::vector<Value*>{y, scale, zp};
}

// ---- integer products ------------------------------------------------------------------------

// A per-row parameter of a [.., M, K] (a 1-D [M] becomes [M, 1]); anything else broadcasts as
// given (a scalar, [1], or the N-D [.., M, 1] form).
absl::StatusOr<Value*> PerRow(ImportContext& ctx, Value* p) {
  const Type t = ctx.TypeOf(p);
  if (!t.is_tensor() || t.rank() != 1 || StaticLength(t) == 1) return p;
  return ctx.Op("expand_dims", {p}, {{"axis", int64_t{1}}});
}

// (a - a_zp) x (b - b_zp) in int32 by the MatMul converter (nn.dense / nn.batch_matmul).
absl::StatusOr<Value*> IntegerMatMul(ImportContext& ctx, const onnx::NodeProto& n, Value* a,
                                     Value* a_zp, Value* b, Value* b_zp) {
  if (a_zp != nullptr) {
    ASSIGN_OR_RETURN(a_zp, PerRow(ctx, a_zp));
  }
  ASSIGN_OR_RETURN(Value * ac, Centered(ctx, a, a_zp));
  ASSIGN_OR_RETURN(Value * bc, Centered(ctx, b, b_zp));
  ASSIGN_OR_RETURN(std::vector<Value*> y, FindConverter("MatMul")(ctx, n, {ac, bc}));
  return y.at(0);
}

// The per-output-channel layout of a w parameter for the weight [M, C/g, k..] (`rank` = its
// rank) or the output [N, M, ..] (`trailing` = rank - 1 - 0 dims after M in the weight, rank -
// 2 in the output): [M] -> [M, 1, .., 1]; scalars and 1-element vectors as they are.
absl::StatusOr<Value*> PerChannel(ImportContext& ctx, Value* p, int64_t trailing) {
  const Type t = ctx.TypeOf(p);
  if (!t.is_tensor()) return ctx.Unimplemented("a w parameter has no known type");
  if (t.rank() == 0 || StaticLength(t) == 1) return p;
  if (t.rank() != 1) {
    return ctx.Error(absl::StrCat("w scale and zero point must be scalars or 1-D, got rank ",
                                  t.rank()));
  }
  if (trailing == 0) return p;
  return ctx.Op("expand_dims", {p}, {{"axis", int64_t{1}}, {"num_newaxis", trailing}});
}

// The number of output channels M of w [M, ..] against a 1-D w parameter of static length.
absl::Status CheckChannels(ImportContext& ctx, Value* w, Value* p, absl::string_view what) {
  if (p == nullptr) return absl::OkStatus();
  const Type wt = ctx.TypeOf(w);
  const std::optional<int64_t> len = StaticLength(ctx.TypeOf(p));
  if (!len || *len == 1 || !wt.is_tensor() || wt.rank() < 1 || !wt.shape()[0].is_constant()) {
    return absl::OkStatus();
  }
  if (*len == wt.shape()[0].constant()) return absl::OkStatus();
  return ctx.Error(absl::StrFormat("%s has %d elements but w has %d output channels", what, *len,
                                   wt.shape()[0].constant()));
}

// (x - x_zp) conv (w - w_zp) [+ bias] in int32 by the Conv converter.
absl::StatusOr<Value*> IntegerConv(ImportContext& ctx, const onnx::NodeProto& n, Value* x,
                                   Value* x_zp, Value* w, Value* w_zp, Value* bias) {
  if (x_zp != nullptr && ctx.TypeOf(x_zp).is_tensor() && ctx.TypeOf(x_zp).rank() > 0 &&
      StaticLength(ctx.TypeOf(x_zp)) != 1) {
    return ctx.Unimplemented("x_zero_point must be per-tensor (a scalar or one element)");
  }
  ASSIGN_OR_RETURN(const int wrank, NeedRank(ctx, w));
  RETURN_IF_ERROR(CheckChannels(ctx, w, w_zp, "w_zero_point"));
  if (w_zp != nullptr) {
    ASSIGN_OR_RETURN(w_zp, PerChannel(ctx, w_zp, wrank - 1));
  }
  ASSIGN_OR_RETURN(Value * xc, Centered(ctx, x, x_zp));
  ASSIGN_OR_RETURN(Value * wc, Centered(ctx, w, w_zp));
  Ins conv_in{xc, wc};
  if (bias != nullptr) {
    if (ctx.DTypeOf(bias) != DType::kI32) {
      return ctx.Error(absl::StrCat("B must be int32, got ", DTypeName(ctx.DTypeOf(bias))));
    }
    conv_in.push_back(bias);
  }
  ASSIGN_OR_RETURN(std::vector<Value*> y, FindConverter("Conv")(ctx, n, conv_in));
  return y.at(0);
}

// y = saturate(round(double(acc) * double(f32 factor) + y_zp)), factor = a_scale * b_scale /
// y_scale (formed in f32, with b_scale laid out by the caller).
absl::StatusOr<Value*> Requantize(ImportContext& ctx, Value* acc, Value* a_scale, Value* b_scale,
                                  Value* y_scale, Value* y_zp) {
  for (Value* s : {a_scale, b_scale, y_scale}) {
    if (ctx.DTypeOf(s) != DType::kF32) {
      return ctx.Error(absl::StrCat("scales must be float32, got ", DTypeName(ctx.DTypeOf(s))));
    }
  }
  const DType out = ctx.DTypeOf(y_zp);
  ASSIGN_OR_RETURN(const QuantRange range, RangeOf(ctx, out, "y_zero_point"));
  ASSIGN_OR_RETURN(Value * factor, ctx.Op("multiply", {a_scale, b_scale}));
  ASSIGN_OR_RETURN(factor, ctx.Op("divide", {factor, y_scale}));
  ASSIGN_OR_RETURN(factor, CastTo(ctx, factor, DType::kF64));
  ASSIGN_OR_RETURN(Value * d, CastTo(ctx, acc, DType::kF64));
  ASSIGN_OR_RETURN(d, ctx.Op("multiply", {d, factor}));
  ASSIGN_OR_RETURN(Value * z, CastTo(ctx, y_zp, DType::kF64));
  return RoundAndSaturate(ctx, d, z, out, range);
}

Outs MatMulInteger(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * b, Need(ctx, in, 1));
  return One(IntegerMatMul(ctx, n, a, In(in, 2), b, In(in, 3)));
}

Outs ConvInteger(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * w, Need(ctx, in, 1));
  return One(IntegerConv(ctx, n, x, In(in, 2), w, In(in, 3), nullptr));
}

Outs QLinearMatMul(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(const std::vector<Value*> v, NeedFirst(ctx, in, 8));
  RETURN_IF_ERROR(CheckSameShape(ctx, v[1], v[2], "a"));
  RETURN_IF_ERROR(CheckSameShape(ctx, v[4], v[5], "b"));
  ASSIGN_OR_RETURN(Value * acc, IntegerMatMul(ctx, n, v[0], v[2], v[3], v[5]));
  ASSIGN_OR_RETURN(Value * a_scale, PerRow(ctx, v[1]));
  return One(Requantize(ctx, acc, a_scale, v[4], v[6], v[7]));
}

Outs QLinearConv(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(const std::vector<Value*> v, NeedFirst(ctx, in, 8));
  RETURN_IF_ERROR(CheckSameShape(ctx, v[1], v[2], "x"));
  RETURN_IF_ERROR(CheckSameShape(ctx, v[4], v[5], "w"));
  RETURN_IF_ERROR(CheckChannels(ctx, v[3], v[4], "w_scale"));
  ASSIGN_OR_RETURN(Value * acc, IntegerConv(ctx, n, v[0], v[2], v[3], v[5], In(in, 8)));
  ASSIGN_OR_RETURN(const int rank, NeedRank(ctx, acc));
  // The output is [N, M, spatial..]: a per-channel w_scale [M] becomes [M, 1, ..].
  ASSIGN_OR_RETURN(Value * w_scale, PerChannel(ctx, v[4], rank - 2));
  return One(Requantize(ctx, acc, v[1], w_scale, v[6], v[7]));
}

}  // namespace

void AddQuantConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"ConvInteger", ConvInteger},
      {"DequantizeLinear", DequantizeLinear},
      {"DynamicQuantizeLinear", DynamicQuantizeLinear},
      {"MatMulInteger", MatMulInteger},
      {"QLinearConv", QLinearConv},
      {"QLinearMatMul", QLinearMatMul},
      {"QuantizeLinear", QuantizeLinear},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
