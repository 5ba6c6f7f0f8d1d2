// Reductions: sum, mean, prod, max, min, argmax and argmin; and cumsum, the running sum along
// an axis (its result has the input's shape).
//
// Masks: the reduced tensor is `shape`: the output shape is the input shape without (or with
// unit) reduced axes, a function of the input shape and the attributes only.
//
// Attributes follow Relay: `axis` is a list (empty: every axis), `keepdims` keeps reduced axes
// as 1, `exclude` reduces every axis *not* listed. argmax/argmin return the index flattened
// over the reduced axes, i32 by default as in Relay (`dtype` selects i64 for ONNX), and with
// `select_last_index` the last of equal extremes wins. max/min/argmax/argmin of a provably
// empty axis are errors (there is no identity to return).
#include "shape_funcs/reduce.h"

#include <limits>
#include <optional>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/concrete_shapes.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

enum class ReduceKind { kSum, kMean, kProd, kMax, kMin, kArgMax, kArgMin };

bool NeedsNonEmpty(ReduceKind k) {
  return k == ReduceKind::kMax || k == ReduceKind::kMin || k == ReduceKind::kArgMax ||
         k == ReduceKind::kArgMin;
}
bool IsArg(ReduceKind k) { return k == ReduceKind::kArgMax || k == ReduceKind::kArgMin; }

// Which axes of a rank-`rank` tensor are reduced, per axis/exclude: NormalizeAxes words the
// errors, the mask is the one the kernels use (concrete_shapes.h).
absl::StatusOr<std::vector<bool>> ReducedAxes(const ShapeContext& ctx, int64_t rank) {
  ASSIGN_OR_RETURN(auto axes,
                   shape_rules::NormalizeAxes(ctx.attrs().GetIntList("axis"), rank, ctx));
  return *ReducedAxisMask(axes, ctx.attrs().GetBool("exclude"), rank);
}

// The mask for attributes the rule has accepted.
std::vector<bool> ConcreteReducedAxes(const Attrs& attrs, int64_t rank) {
  return *ReducedAxisMask(attrs.GetIntList("axis"), attrs.GetBool("exclude"), rank);
}

Result ReduceRule(ShapeContext& ctx, ReduceKind kind) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto reduced, ReducedAxes(ctx, in.size()));
  const bool keepdims = ctx.attrs().GetBool("keepdims");
  std::vector<DimExpr> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
      continue;
    }
    if (NeedsNonEmpty(kind) && in[i].is_constant() && in[i].constant() == 0) {
      return ctx.Error(absl::StrFormat("cannot reduce axis %d of size 0", i));
    }
    if (keepdims) out.push_back(1);
  }
  DType dt = ctx.dtype(0);
  if (IsArg(kind)) {
    dt = ctx.attrs().GetDType("dtype");
    if (!IsInteger(dt)) {
      return ctx.Error(absl::StrFormat("dtype must be an integer type, got %s", DTypeName(dt)));
    }
  }
  return One(Type::Tensor(dt, std::move(out)));
}

struct Accumulator {
  double value = 0;
  int64_t arg = -1;
  int64_t count = 0;
};

void Accumulate(ReduceKind kind, bool last, Accumulator& acc, double x, int64_t pos) {
  const bool first = acc.count++ == 0;
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      acc.value = first ? x : acc.value + x;
      break;
    case ReduceKind::kProd:
      acc.value = first ? x : acc.value * x;
      break;
    case ReduceKind::kMax:
      acc.value = first ? x : std::max(acc.value, x);
      break;
    case ReduceKind::kMin:
      acc.value = first ? x : std::min(acc.value, x);
      break;
    case ReduceKind::kArgMax:
    case ReduceKind::kArgMin: {
      const bool better = kind == ReduceKind::kArgMax ? x > acc.value : x < acc.value;
      if (first || better || (last && x == acc.value)) {
        acc.value = x;
        acc.arg = pos;
      }
      break;
    }
  }
}

double Finish(ReduceKind kind, const Accumulator& acc) {
  if (acc.count == 0) return kind == ReduceKind::kProd ? 1.0 : 0.0;
  if (kind == ReduceKind::kMean) return acc.value / static_cast<double>(acc.count);
  if (IsArg(kind)) return static_cast<double>(acc.arg);
  return acc.value;
}

KernelResult ReduceKernel(ReduceKind kind, absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& xs = in[0].shape();
  const std::vector<bool> reduced = ConcreteReducedAxes(attrs, in[0].rank());
  const bool last = attrs.Has("select_last_index") && attrs.GetBool("select_last_index");
  std::vector<Accumulator> acc(out.num_elements());
  std::vector<int64_t> idx(xs.size(), 0);
  for (int64_t i = 0; i < in[0].num_elements(); ++i) {
    int64_t o = 0, pos = 0;
    for (size_t a = 0; a < xs.size(); ++a) {
      if (reduced[a]) {
        pos = pos * xs[a] + idx[a];
      } else {
        o = o * xs[a] + idx[a];
      }
    }
    Accumulate(kind, last, acc[o], in[0].GetDouble(i), pos);
    shape_rules::NextIndex(idx, xs);
  }
  for (int64_t o = 0; o < out.num_elements(); ++o) out.SetDouble(o, Finish(kind, acc[o]));
  return std::vector<Tensor>{std::move(out)};
}

// Symbolic values of sum/prod/max/min over a 0-D/1-D integer shape value (ReduceMin of
// Concat(limit, Shape(x)[k]) is how exporters write min(limit, dim)): folded with DimExpr
// arithmetic; an axis set that reduces nothing forwards the values.
std::optional<std::vector<std::vector<DimExpr>>> ReduceSymbolic(ReduceKind kind, ShapeContext& ctx) {
  if (!IsInteger(ctx.dtype(0)) || ctx.rank(0) > 1) return std::nullopt;
  auto v = ctx.IntValues(0);
  if (!v.ok() || !v->has_value()) return std::nullopt;
  const std::vector<DimExpr>& in = **v;
  const auto mask = ReducedAxisMask(ctx.attrs().GetIntList("axis"),
                                    ctx.attrs().GetBool("exclude"), ctx.rank(0));
  if (!mask) return std::nullopt;
  if (ctx.rank(0) == 0 || !(*mask)[0]) return std::vector<std::vector<DimExpr>>{in};
  if (in.empty()) return std::nullopt;  // sum/prod of nothing is fine, but keep it simple
  DimExpr acc = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    switch (kind) {
      case ReduceKind::kSum: acc = acc + in[i]; break;
      case ReduceKind::kProd: acc = acc * in[i]; break;
      case ReduceKind::kMax: acc = DimExpr::Max(acc, in[i]); break;
      default: acc = DimExpr::Min(acc, in[i]); break;
    }
  }
  return std::vector<std::vector<DimExpr>>{{acc}};
}

void RegisterReduce(OpRegistry::Builder& b, std::string name, ReduceKind kind, std::string doc) {
  OpDefBuilder op = b.Register(std::move(name));
  op.Input("data", InputDep::kShape)
      .Attr("axis", AttrType::kIntList, std::vector<int64_t>{})
      .Attr("keepdims", AttrType::kBool, false)
      .Attr("exclude", AttrType::kBool, false)
      .Pattern(FusionPattern::kReduction)
      .Doc(std::move(doc))
      .Rule([kind](ShapeContext& ctx) { return ReduceRule(ctx, kind); })
      .Reference(
          [kind](absl::Span<const Tensor> in, const Attrs& attrs, absl::Span<const Type> out_t) {
            return ReduceKernel(kind, in, attrs, out_t);
          });
  if (kind == ReduceKind::kSum || kind == ReduceKind::kProd || kind == ReduceKind::kMax ||
      kind == ReduceKind::kMin) {
    op.SymbolicValues([kind](ShapeContext& ctx) { return ReduceSymbolic(kind, ctx); });
  }
  if (IsArg(kind)) {
    op.Attr("select_last_index", AttrType::kBool, false)
        .Attr("dtype", AttrType::kDType, DType::kI32);
  }
}

// ---- dyn.sum --------------------------------------------------------------------------------

// ONNX ReduceSum-13 with computed axes: the axes are an input (`value`: the output shape
// depends on them) that the host reads; empty axes reduce every axis, or none with
// noop_with_empty_axes. Concretely it is `sum` with those axes.
// sum's attributes for axes of a rank-`rank` input; reducing no axis is `exclude` of them all.
Attrs SumAttrs(std::vector<int64_t> axes, int rank, bool keepdims, bool noop_with_empty_axes) {
  const bool noop = axes.empty() && noop_with_empty_axes;
  if (noop) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  Attrs sum;
  sum.Set("axis", std::move(axes));
  sum.Set("keepdims", keepdims);
  sum.Set("exclude", noop);
  return sum;
}

absl::StatusOr<std::optional<Attrs>> DynSumAsSum(ShapeContext& ctx) {
  if (ctx.rank(1) != 1 || !IsInteger(ctx.dtype(1))) {
    return ctx.Error(absl::StrFormat("axes must be a 1-D integer tensor, got %s of rank %d",
                                     DTypeName(ctx.dtype(1)), ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto values, ctx.IntValues(1));
  if (!values) return std::optional<Attrs>();
  std::vector<int64_t> axes;
  for (const DimExpr& d : *values) {
    if (!d.is_constant()) return std::optional<Attrs>();
    axes.push_back(d.constant());
  }
  return std::optional<Attrs>(
      SumAttrs(axes, ctx.rank(0), ctx.attrs().GetBool("keepdims"),
               ctx.attrs().GetBool("noop_with_empty_axes")));
}

Result DynSumRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(std::optional<Attrs> sum, DynSumAsSum(ctx));
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  if (sum) {
    ASSIGN_OR_RETURN(auto axes,
                     shape_rules::NormalizeAxes(sum->GetIntList("axis"), in.size(), ctx));
    const std::vector<bool> reduced =
        *ReducedAxisMask(axes, sum->GetBool("exclude"), static_cast<int64_t>(in.size()));
    std::vector<DimExpr> out;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!reduced[i]) {
        out.push_back(in[i]);
      } else if (sum->GetBool("keepdims")) {
        out.push_back(1);
      }
    }
    return One(Type::Tensor(ctx.dtype(0), std::move(out)));
  }
  // Axes unknown now: the rank is known when keepdims holds it, or from their count.
  ASSIGN_OR_RETURN(DimExpr count, ctx.NumValues(1));
  int64_t rank = static_cast<int64_t>(in.size());
  if (!ctx.attrs().GetBool("keepdims")) {
    if (!count.is_constant()) {
      return ctx.Error("without keepdims the number of axes must be known to type the result");
    }
    const int64_t n = count.constant();
    rank = n == 0 ? (ctx.attrs().GetBool("noop_with_empty_axes") ? rank : 0) : rank - n;
    if (rank < 0) {
      return ctx.Error(absl::StrFormat("%d axes for a tensor of rank %d", n, in.size()));
    }
  }
  return One(Type::Tensor(ctx.dtype(0), std::vector<DimExpr>(rank, DimExpr::Unknown())));
}

KernelResult DynSumKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  const Attrs sum = SumAttrs(in[1].ToInt64s(), in[0].rank(), attrs.GetBool("keepdims"),
                            attrs.GetBool("noop_with_empty_axes"));
  // The rule has checked the axes at run time; a kernel called without it still gets an error.
  if (!ReducedAxisMask(sum.GetIntList("axis"), false, in[0].rank())) {
    return absl::InvalidArgumentError("dyn.sum: axes out of range or repeated");
  }
  return ReduceKernel(ReduceKind::kSum, in.subspan(0, 1), sum, out_t);
}

// ---- cumsum --------------------------------------------------------------------------------

// Running sums along the axis (input 1, a scalar or one-element vector): out[.., i, ..] = sum of x[.., j, ..] for j <= i (j < i with
// exclusive; from the end with reverse). Floats accumulate in double, integers in int64 with
// wrapping, like the elementwise add.
KernelResult CumsumKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  const Tensor& x = in[0];
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const int rank = x.rank();
  int64_t axis = in[1].GetInt64(0);
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cumsum: axis %d is out of range for rank %d", axis, rank));
  }
  if (axis < 0) axis += rank;
  const bool exclusive = attrs.GetBool("exclusive"), reverse = attrs.GetBool("reverse");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  const int64_t n = x.shape()[axis];
  const bool fp = IsFloat(x.dtype());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t e = 0; e < inner; ++e) {
      double acc = 0;
      int64_t iacc = 0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = (o * n + (reverse ? n - 1 - step : step)) * inner + e;
        if (exclusive) fp ? out.SetDouble(i, acc) : out.SetInt64(i, iacc);
        if (fp) {
          acc += x.GetDouble(i);
        } else {
          __builtin_add_overflow(iacc, x.GetInt64(i), &iacc);
        }
        if (!exclusive) fp ? out.SetDouble(i, acc) : out.SetInt64(i, iacc);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterReduceOps(OpRegistry::Builder& b) {
  // The axis is an input (ONNX's CumSum may compute it) that only the kernel reads: the
  // result's shape is data's whatever it holds, so its mask is `none`.
  b.Register("cumsum")
      .Input("data", InputDep::kShape)
      .Input("axis", InputDep::kNone)
      .Attr("exclusive", AttrType::kBool, false)
      .Attr("reverse", AttrType::kBool, false)
      .Pattern(FusionPattern::kOpaque)
      .Doc("running sums along axis (exclusive: of the elements before; reverse: from the end)")
      .Rule([](ShapeContext& ctx) -> absl::StatusOr<std::vector<Type>> {
        ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
        if (x.empty()) return ctx.Error("data must have rank >= 1");
        if (ctx.dtype(0) == DType::kBool) return ctx.Error("data must be numeric, got bool");
        if (!IsInteger(ctx.dtype(1)) || ctx.rank(1) > 1) {
          return ctx.Error(absl::StrFormat("axis must be an integer scalar, got %s of rank %d",
                                           DTypeName(ctx.dtype(1)), ctx.rank(1)));
        }
        return shape_rules::One(Type::Tensor(ctx.dtype(0), {x.begin(), x.end()}));
      })
      .Reference(CumsumKernel);
  RegisterReduce(b, "sum", ReduceKind::kSum, "sum over axis (empty: all)");
  b.Register("dyn.sum")
      .Input("data", InputDep::kShape)
      .Input("axes", InputDep::kValue)
      .Attr("keepdims", AttrType::kBool, false)
      .Attr("noop_with_empty_axes", AttrType::kBool, false)
      .Pattern(FusionPattern::kOpaque)
      .Doc("sum over run-time axes (ONNX ReduceSum-13; empty: all, or none with "
           "noop_with_empty_axes)")
      .Rule(DynSumRule)
      .Reference(DynSumKernel);
  RegisterReduce(b, "mean", ReduceKind::kMean, "mean over axis (empty: all)");
  RegisterReduce(b, "prod", ReduceKind::kProd, "product over axis (empty: all)");
  RegisterReduce(b, "max", ReduceKind::kMax, "maximum over axis (empty: all)");
  RegisterReduce(b, "min", ReduceKind::kMin, "minimum over axis (empty: all)");
  RegisterReduce(b, "argmax", ReduceKind::kArgMax,
                 "index of the maximum, flattened over the reduced axes (first wins)");
  RegisterReduce(b, "argmin", ReduceKind::kArgMin,
                 "index of the minimum, flattened over the reduced axes (first wins)");
}

}  // namespace hetpass
