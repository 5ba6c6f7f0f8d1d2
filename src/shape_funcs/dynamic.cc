// Shape-producing and shape-consuming creation ops: shape_of, arange, dyn.full, dyn.zeros and
// dyn.ones. These are the host side of dynamic models: the *shape subgraph*
// (`shape_of -> take -> concatenate -> reshape target`) is computed on the host.
//
// Masks: shape_of reads only the shape of its input (`shape`: no copy, ever), and its symbolic
// value rule returns the dims themselves, so type inference sees `shape_of(f32[n, 4])` as the
// values [n, 4]. arange's start/stop/step are `value` (scalars). The `shape` operand of
// dyn.full/zeros/ones is `value`: values at run time; at compile time, when they are
// unknown, their count (ShapeContext::NumValues) still fixes the output rank. dyn.full's fill value is `none`: it never
// influences the output shape (TVM's dyn.full copied it as part of an op-wide flag).
//
// All are opaque: their outputs are not functions of input elements the fuser could inline,
// and their shapes are only known from values.
#include "shape_funcs/dynamic.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

// ---- shape_of ------------------------------------------------------------------------------

Result ShapeOfRule(ShapeContext& ctx) {
  const DType dt = ctx.attrs().GetDType("dtype");
  if (!IsInteger(dt)) {
    return ctx.Error(absl::StrFormat("dtype must be an integer type, got %s", DTypeName(dt)));
  }
  ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
  return One(Type::Tensor(dt, {static_cast<int64_t>(shape.size())}));
}

std::optional<std::vector<std::vector<DimExpr>>> ShapeOfSymbolic(ShapeContext& ctx) {
  auto shape = ctx.Shape(0);
  if (!shape.ok()) return std::nullopt;
  return std::vector<std::vector<DimExpr>>{shape_rules::ToVec(*shape)};
}

KernelResult ShapeOfKernel(absl::Span<const Tensor> in, const Attrs&,
                           absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  for (int i = 0; i < in[0].rank(); ++i) out.SetInt64(i, in[0].shape()[i]);
  return std::vector<Tensor>{std::move(out)};
}

// ---- arange --------------------------------------------------------------------------------

// ceil((stop - start) / step) clamped at 0; symbolic when start/stop are symbolic integers and
// the step is a constant.
absl::StatusOr<DimExpr> ArangeLength(ShapeContext& ctx) {
  std::optional<std::vector<double>> f[3];
  for (int i = 0; i < 3; ++i) {
    if (ctx.rank(i) != 0) {
      return ctx.Error(
          absl::StrFormat("%s must be a scalar, got rank %d", ctx.op().input(i).name, ctx.rank(i)));
    }
    ASSIGN_OR_RETURN(f[i], ctx.FloatValues(i));
  }
  if (f[2] && (*f[2])[0] == 0) return ctx.Error("step must be non-zero");
  if (f[0] && f[1] && f[2]) {
    const double n = std::ceil(((*f[1])[0] - (*f[0])[0]) / (*f[2])[0]);
    if (!(n < 9.0e18)) return ctx.Error("length overflows int64");
    return static_cast<int64_t>(std::max(n, 0.0));
  }
  // Symbolic: each operand an integer, known as a constant (a float constant only when it is
  // a whole number) or as symbolic values (a float one seen through a cast of integers:
  // Range(0.0, Cast(h), 1.0) from `torch.arange(h, dtype=float32)`, under IntValues'
  // assumption that the float holds h exactly).
  // Float constants first (a fractional one ends it before IntValues records an assumption);
  // integer operands, constant or symbolic, exactly through IntValues.
  std::optional<std::vector<DimExpr>> v[3];
  for (int i = 0; i < 3; ++i) {
    if (!f[i] || IsInteger(ctx.dtype(i))) continue;
    const double x = (*f[i])[0];
    if (x != std::floor(x) || !(std::fabs(x) < 9.0e15)) return DimExpr::Unknown();
    v[i] = std::vector<DimExpr>{DimExpr(static_cast<int64_t>(x))};
  }
  for (int i = 0; i < 3; ++i) {
    if (v[i]) continue;
    ASSIGN_OR_RETURN(v[i], ctx.IntValues(i));
    if (!v[i]) return DimExpr::Unknown();
  }
  const DimExpr& step = (*v[2])[0];
  if (!step.is_constant()) return DimExpr::Unknown();
  // A negative step divides by -step, which INT64_MIN does not have in int64.
  if (step.constant() == INT64_MIN) {
    return ctx.Error(absl::StrFormat("step %d is not supported (its negation overflows int64)",
                                     step.constant()));
  }
  const DimExpr span = (*v[1])[0] - (*v[0])[0];
  const DimExpr n = step.constant() > 0
                        ? shape_rules::CeilDivPositive(span, step.constant())
                        : shape_rules::CeilDivPositive(DimExpr(0) - span, -step.constant());
  return shape_rules::SymMax(n, 0);
}

Result ArangeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(DimExpr n, ArangeLength(ctx));
  return One(Type::Tensor(ctx.attrs().GetDType("dtype"), {n}));
}

KernelResult ArangeKernel(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const bool exact = !IsFloat(out.dtype()) && !IsFloat(in[0].dtype()) && !IsFloat(in[2].dtype());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (exact) {
      out.SetInt64(i, in[0].GetInt64(0) + i * in[2].GetInt64(0));
    } else {
      out.SetDouble(i, in[0].GetDouble(0) + static_cast<double>(i) * in[2].GetDouble(0));
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- dyn.full / dyn.zeros / dyn.ones -------------------------------------------------------

// Output type from the 1-D `shape` operand at index `i`.
Result ShapeFromOperand(ShapeContext& ctx, int i) {
  if (ctx.rank(i) != 1) {
    return ctx.Error(absl::StrFormat("shape must be 1-D, got rank %d", ctx.rank(i)));
  }
  ASSIGN_OR_RETURN(auto dims, shape_rules::IntInput(ctx, i, "shape"));
  const DType dt = ctx.attrs().GetDType("dtype");
  if (!dims) {
    ASSIGN_OR_RETURN(int64_t len, shape_rules::StaticLength(ctx, i, "shape"));
    return One(Type::Tensor(dt, shape_rules::UnknownDims(len)));
  }
  for (const DimExpr& d : *dims) {
    if (d.is_constant() && d.constant() < 0) {
      return ctx.Error(absl::StrFormat("shape value %d is negative", d.constant()));
    }
  }
  return One(Type::Tensor(dt, *dims));
}

Result FullRule(ShapeContext& ctx) {
  if (ctx.rank(0) != 0) {
    return ctx.Error(absl::StrFormat("fill_value must be a scalar, got rank %d", ctx.rank(0)));
  }
  return ShapeFromOperand(ctx, 1);
}

KernelResult Fill(const Type& type, const Tensor* value, double constant) {
  Tensor out = shape_rules::ZerosOf(type);
  const bool exact = value != nullptr && !IsFloat(value->dtype()) && !IsFloat(out.dtype());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (exact) {
      out.SetInt64(i, value->GetInt64(0));
    } else {
      out.SetDouble(i, value != nullptr ? value->GetDouble(0) : constant);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterDynamicOps(OpRegistry::Builder& b) {
  b.Register("shape_of")
      .Input("data", InputDep::kShape)
      .Attr("dtype", AttrType::kDType, DType::kI64)
      .Pattern(FusionPattern::kOpaque)
      .Role(OpRole::kShapeQuery)
      .Doc("the shape of data as a 1-D integer tensor (symbolic values: the dims)")
      .Rule(ShapeOfRule)
      .SymbolicValues(ShapeOfSymbolic)
      .Reference(ShapeOfKernel);
  b.Register("arange")
      .Input("start", InputDep::kValue)
      .Input("stop", InputDep::kValue)
      .Input("step", InputDep::kValue)
      .Attr("dtype", AttrType::kDType, DType::kF32)
      .Pattern(FusionPattern::kOpaque)
      .Doc("[start, start + step, ...) below stop; length ceil((stop - start) / step) >= 0")
      .Rule(ArangeRule)
      .Reference(ArangeKernel);
  b.Register("dyn.full")
      .Input("fill_value", InputDep::kNone)
      .Input("shape", InputDep::kValue)
      .Attr("dtype", AttrType::kDType, DType::kF32)
      .Pattern(FusionPattern::kOpaque)
      .Doc("a tensor of run-time shape filled with the scalar fill_value")
      .Rule(FullRule)
      .Reference([](absl::Span<const Tensor> in, const Attrs&, absl::Span<const Type> out_t) {
        return Fill(out_t[0], &in[0], 0);
      });
  b.Register("dyn.zeros")
      .Input("shape", InputDep::kValue)
      .Attr("dtype", AttrType::kDType, DType::kF32)
      .Pattern(FusionPattern::kOpaque)
      .Doc("zeros of run-time shape")
      .Rule([](ShapeContext& ctx) { return ShapeFromOperand(ctx, 0); })
      .Reference([](absl::Span<const Tensor>, const Attrs&, absl::Span<const Type> out_t) {
        return Fill(out_t[0], nullptr, 0);
      });
  b.Register("dyn.ones")
      .Input("shape", InputDep::kValue)
      .Attr("dtype", AttrType::kDType, DType::kF32)
      .Pattern(FusionPattern::kOpaque)
      .Doc("ones of run-time shape")
      .Rule([](ShapeContext& ctx) { return ShapeFromOperand(ctx, 0); })
      .Reference([](absl::Span<const Tensor>, const Attrs&, absl::Span<const Type> out_t) {
        return Fill(out_t[0], nullptr, 1);
      });
}

}  // namespace hetpass
