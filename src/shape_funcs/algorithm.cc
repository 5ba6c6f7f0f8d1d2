// Sorting and searching: topk, dyn.topk and argwhere.
//
// Masks: topk's data is `shape` (the output is the input shape with min(k, dim) along the
// axis); TVM's dyn.topk was op-wide data dependent and so copied the data being sorted to the
// host just to learn k; here only the scalar k is `value`. argwhere is the one truly
// data-dependent op: `value` (the count of non-zeros is the output's first dim; its second,
// the input's rank, is static metadata that needs no mask), so it is marked DataDependentOutputShape (planning should
// bring back a count, not the tensor, when a device kernel can produce it).
//
// topk has two outputs (values, indices); Relay's ret_type "values"/"indices" is not modelled
// (a single-output use simply ignores the other). k < 1 selects the whole axis, as in Relay;
// k larger than the axis is clamped, so a symbolic axis gives `min(k, n)`. Equal values keep
// their original order (the lower index first), in both directions.
#include "shape_funcs/algorithm.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

// ---- topk / dyn.topk -----------------------------------------------------------------------

// Output types for a top-k of `k` (nullopt: unknown now) along the `axis` attribute.
Result TopKTypes(ShapeContext& ctx, std::optional<DimExpr> k) {
  const DType idx_dt = ctx.attrs().GetDType("dtype");
  if (!IsInteger(idx_dt)) {
    return ctx.Error(absl::StrFormat("dtype must be an integer type, got %s", DTypeName(idx_dt)));
  }
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  ASSIGN_OR_RETURN(int64_t axis,
                   shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), in.size(), ctx));
  std::vector<DimExpr> out = shape_rules::ToVec(in);
  if (!k) {
    out[axis] = DimExpr::Unknown();
  } else if (!k->is_constant() || k->constant() >= 1) {
    out[axis] = shape_rules::SymMin(*k, in[axis]);
  }
  return std::vector<Type>{Type::Tensor(ctx.dtype(0), out), Type::Tensor(idx_dt, out)};
}

Result TopKRule(ShapeContext& ctx) { return TopKTypes(ctx, ctx.attrs().GetInt("k")); }

Result DynTopKRule(ShapeContext& ctx) {
  if (ctx.rank(1) != 0) {
    return ctx.Error(absl::StrFormat("k must be a scalar, got rank %d", ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto k, shape_rules::IntInput(ctx, 1, "k"));
  if (!k) return TopKTypes(ctx, std::nullopt);
  return TopKTypes(ctx, (*k)[0]);
}

KernelResult TopKKernel(const Tensor& x, const Attrs& attrs, absl::Span<const Type> out_t) {
  Tensor values = shape_rules::ZerosOf(out_t[0]);
  Tensor indices = shape_rules::ZerosOf(out_t[1]);
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += x.rank();
  const bool ascend = attrs.GetBool("is_ascend");
  const int64_t len = x.shape()[axis], k = values.shape()[axis];
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t outer = len * inner == 0 ? 0 : x.num_elements() / (len * inner);
  std::vector<int64_t> order(len);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      auto at = [&](int64_t j) { return x.GetDouble(base + j * inner); };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return ascend ? at(a) < at(b) : at(a) > at(b);
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = o * k * inner + j * inner + i;
        shape_rules::CopyElements(x, base + order[j] * inner, values, dst);
        indices.SetInt64(dst, order[j]);
      }
    }
  }
  return std::vector<Tensor>{std::move(values), std::move(indices)};
}

void TopKAttrs(OpDefBuilder& op) {
  op.Attr("axis", AttrType::kInt, int64_t{-1})
      .Attr("is_ascend", AttrType::kBool, false)
      .Attr("dtype", AttrType::kDType, DType::kI64);
}

// ---- argwhere ------------------------------------------------------------------------------

Result ArgwhereRule(ShapeContext& ctx) {
  absl::StatusOr<std::optional<std::vector<double>>> values = ctx.FloatValues(0);
  if (!values.ok()) return values.status();
  DimExpr count = DimExpr::Unknown();
  if (values->has_value()) {
    count = static_cast<int64_t>(
        std::count_if((*values)->begin(), (*values)->end(), [](double v) { return v != 0; }));
  }
  return std::vector<Type>{Type::Tensor(DType::kI64, {count, static_cast<int64_t>(ctx.rank(0))})};
}

KernelResult ArgwhereKernel(absl::Span<const Tensor> in, const Attrs&,
                            absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& xs = in[0].shape();
  std::vector<int64_t> idx(xs.size(), 0);
  int64_t row = 0;
  for (int64_t i = 0; i < in[0].num_elements(); ++i) {
    if (in[0].GetDouble(i) != 0) {
      for (size_t a = 0; a < xs.size(); ++a) out.SetInt64(row * xs.size() + a, idx[a]);
      ++row;
    }
    shape_rules::NextIndex(idx, xs);
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterAlgorithmOps(OpRegistry::Builder& b) {
  // argwhere's shape counter: runs where argwhere runs, so only this scalar crosses to the
  // host (manifest-alloc), never the tensor being searched.
  b.Register("count_nonzero")
      .Input("data", InputDep::kNone)
      .Pattern(FusionPattern::kOpaque)
      .Doc("the number of non-zero elements, as an i64 scalar (argwhere's shape counter)")
      .Rule([](ShapeContext&) -> absl::StatusOr<std::vector<Type>> {
        return std::vector<Type>{Type::Tensor(DType::kI64, {})};
      })
      .Reference([](absl::Span<const Tensor> in, const Attrs&,
                    absl::Span<const Type>) -> absl::StatusOr<std::vector<Tensor>> {
        int64_t n = 0;
        for (int64_t i = 0; i < in[0].num_elements(); ++i) n += in[0].GetDouble(i) != 0;
        return std::vector<Tensor>{Tensor::FromInt64s(DType::kI64, {}, {n})};
      });

  OpDefBuilder topk = b.Register("topk");
  topk.Input("data", InputDep::kShape)
      .Attr("k", AttrType::kInt, int64_t{1})
      .Outputs(2)
      .Pattern(FusionPattern::kOpaque)
      .Doc("the k largest (is_ascend: smallest) along axis: (values, indices); k < 1: all")
      .Rule(TopKRule)
      .Reference([](absl::Span<const Tensor> in, const Attrs& attrs, absl::Span<const Type> out_t) {
        return TopKKernel(in[0], attrs, out_t);
      });
  TopKAttrs(topk);
  OpDefBuilder dyn_topk = b.Register("dyn.topk");
  dyn_topk.Input("data", InputDep::kShape)
      .Input("k", InputDep::kValue)
      .Outputs(2)
      .Pattern(FusionPattern::kOpaque)
      .Doc("topk with a run-time scalar k")
      .Rule(DynTopKRule)
      .Reference([](absl::Span<const Tensor> in, const Attrs& attrs, absl::Span<const Type> out_t) {
        return TopKKernel(in[0], attrs, out_t);
      });
  TopKAttrs(dyn_topk);
  b.Register("argwhere")
      .Input("condition", InputDep::kValue)
      .Pattern(FusionPattern::kOpaque)
      .DataDependentOutputShape("count_nonzero")
      .Doc("coordinates of the non-zero elements: i64[count, rank], row-major order")
      .Rule(ArgwhereRule)
      .Reference(ArgwhereKernel);
}

}  // namespace hetpass
