// Indexed gather and scatter: gather_nd, scatter_elements and scatter_nd (ONNX GatherND,
// ScatterElements / Scatter, ScatterND).
//
//   gather_nd(data, indices) {batch_dims = b}: indices [.., k] name k leading coordinates
//     (after the b batch dims) of data; the result is data.shape[:b] + indices.shape[b:-1] +
//     data.shape[b+k:]. k must be static (it decides the rank).
//   scatter_elements(data, indices, updates) {axis, reduction}: a copy of data where
//     out[i with axis replaced by indices[i]] = updates[i] (or += / *= / max / min); indices
//     and updates have one shape, of data's rank, no larger than data off the axis.
//   scatter_nd(data, indices, updates) {reduction}: a copy of data where the slice at each
//     index tuple indices[j, :] becomes updates[j] (or is combined with it); updates.shape =
//     indices.shape[:-1] + data.shape[k:].
//
// Masks: every input is `shape`: the result's shape follows from the shapes alone, so no index
// tensor is ever copied to the host for a shape function. Negative indices count from the end
// (ONNX); an index out of range is an InvalidArgument naming it. With reduction none a
// position written twice keeps the last update (the order of indices), as ONNX Runtime does.
#include "shape_funcs/scatter.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

absl::Status IndexError(absl::string_view op, int64_t index, int64_t n) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: index %d is out of range for an axis of size %d", op, index, n));
}

absl::Status CheckReduction(const ShapeContext& ctx) {
  const std::string& r = ctx.attrs().GetString("reduction");
  if (r == "none" || r == "add" || r == "mul" || r == "max" || r == "min") return absl::OkStatus();
  return ctx.Error(absl::StrFormat("reduction must be none, add, mul, max or min, got '%s'", r));
}

// Writes `v` into out[i] per the reduction.
void Combine(Tensor& out, int64_t i, const Tensor& updates, int64_t u, const std::string& reduction) {
  if (reduction == "none") {
    shape_rules::CopyElements(updates, u, out, i, 1);
    return;
  }
  if (IsFloat(out.dtype())) {
    const double a = out.GetDouble(i), b = updates.GetDouble(u);
    out.SetDouble(i, reduction == "add"   ? a + b
                     : reduction == "mul" ? a * b
                     : reduction == "max" ? std::max(a, b)
                                          : std::min(a, b));
    return;
  }
  const int64_t a = out.GetInt64(i), b = updates.GetInt64(u);
  int64_t r;
  if (reduction == "add") {
    __builtin_add_overflow(a, b, &r);  // wraps, like the elementwise ops
  } else if (reduction == "mul") {
    __builtin_mul_overflow(a, b, &r);
  } else {
    r = reduction == "max" ? std::max(a, b) : std::min(a, b);
  }
  out.SetInt64(i, r);
}

absl::Status CheckIntegerIndices(const ShapeContext& ctx, int input) {
  if (IsInteger(ctx.dtype(input))) return absl::OkStatus();
  return ctx.Error(absl::StrFormat("indices must be integers, got %s", DTypeName(ctx.dtype(input))));
}

// The checks both scatters share: integer indices, a known reduction, updates of data's dtype.
absl::Status CheckScatterInputs(const ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckIntegerIndices(ctx, 1));
  RETURN_IF_ERROR(CheckReduction(ctx));
  if (ctx.dtype(2) == ctx.dtype(0)) return absl::OkStatus();
  return ctx.Error(absl::StrFormat("updates are %s but data is %s", DTypeName(ctx.dtype(2)),
                                   DTypeName(ctx.dtype(0))));
}

// ---- gather_nd -------------------------------------------------------------------------------

Result GatherNdRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckIntegerIndices(ctx, 1));
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto idx, ctx.Shape(1));
  const int64_t b = ctx.attrs().GetInt("batch_dims");
  if (idx.empty() || !idx.back().is_constant()) {
    return ctx.Error("the last dim of indices must be static (it is the index length)");
  }
  const int64_t k = idx.back().constant();
  if (b < 0 || b >= static_cast<int64_t>(idx.size()) || b + k > static_cast<int64_t>(data.size()) || k < 1) {
    return ctx.Error(absl::StrFormat(
        "batch_dims %d and index length %d do not fit data of rank %d and indices of rank %d", b,
        k, data.size(), idx.size()));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data[d].is_constant() && idx[d].is_constant() && data[d].constant() != idx[d].constant()) {
      return ctx.Error(absl::StrFormat("batch dim %d differs: data %d, indices %d", d,
                                       data[d].constant(), idx[d].constant()));
    }
  }
  std::vector<DimExpr> out(data.begin(), data.begin() + b);
  out.insert(out.end(), idx.begin() + b, idx.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult GatherNdKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                            absl::Span<const Type> out_t) {
  const Tensor& data = in[0];
  const Tensor& idx = in[1];
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const int64_t b = attrs.GetInt("batch_dims");
  const std::vector<int64_t>& ds = data.shape();
  const int64_t k = idx.shape().back();
  int64_t batch = 1, inner = 1;
  for (int64_t d = 0; d < b; ++d) batch *= ds[d];
  for (size_t d = b + k; d < ds.size(); ++d) inner *= ds[d];
  const std::vector<int64_t> stride = shape_rules::Strides(ds);
  const int64_t tuples = batch == 0 ? 0 : idx.num_elements() / k / batch;  // per batch
  int64_t dst = 0;
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t t = 0; t < tuples; ++t, dst += inner) {
      int64_t src = bi * (b > 0 ? stride[b - 1] : 0);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t raw = idx.GetInt64((bi * tuples + t) * k + j);
        auto r = shape_rules::ResolveNegativeIndex(raw, ds[b + j]);
        if (!r) return IndexError("gather_nd", raw, ds[b + j]);
        src += *r * stride[b + j];
      }
      shape_rules::CopyElements(data, src, out, dst, inner);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- scatter_elements ------------------------------------------------------------------------

Result ScatterElementsRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckScatterInputs(ctx));
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto idx, ctx.Shape(1));
  ASSIGN_OR_RETURN(auto upd, ctx.Shape(2));
  if (data.empty() || idx.size() != data.size() || upd.size() != idx.size()) {
    return ctx.Error(absl::StrFormat("data, indices and updates must have one rank >= 1, got %d, %d, %d",
                                     data.size(), idx.size(), upd.size()));
  }
  ASSIGN_OR_RETURN(int64_t axis, shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), data.size(), ctx));
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d].is_constant() && upd[d].is_constant() && idx[d].constant() != upd[d].constant()) {
      return ctx.Error(absl::StrFormat("indices and updates differ in dim %d: %d vs %d", d,
                                       idx[d].constant(), upd[d].constant()));
    }
    if (static_cast<int64_t>(d) != axis && idx[d].is_constant() && data[d].is_constant() &&
        idx[d].constant() > data[d].constant()) {
      return ctx.Error(absl::StrFormat("indices dim %d is %d, more than data's %d", d,
                                       idx[d].constant(), data[d].constant()));
    }
  }
  return One(Type::Tensor(ctx.dtype(0), {data.begin(), data.end()}));
}

KernelResult ScatterElementsKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Type> out_t) {
  const Tensor& data = in[0];
  const Tensor& idx = in[1];
  const Tensor& upd = in[2];
  Tensor out = data;
  const int rank = data.rank();
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += rank;
  const std::vector<int64_t>& ds = data.shape();
  const std::vector<int64_t>& is = idx.shape();
  if (upd.shape() != is) return absl::InvalidArgumentError("scatter_elements: indices and updates differ in shape");
  for (int d = 0; d < rank; ++d) {
    if (d != axis && is[d] > ds[d]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "scatter_elements: indices dim %d is %d, more than data's %d", d, is[d], ds[d]));
    }
  }
  const std::vector<int64_t> stride = shape_rules::Strides(ds);
  const std::string& reduction = attrs.GetString("reduction");
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < idx.num_elements(); ++i) {
    const int64_t raw = idx.GetInt64(i);
    auto r = shape_rules::ResolveNegativeIndex(raw, ds[axis]);
    if (!r) return IndexError("scatter_elements", raw, ds[axis]);
    int64_t dst = 0;
    for (int d = 0; d < rank; ++d) dst += (d == axis ? *r : index[d]) * stride[d];
    Combine(out, dst, upd, i, reduction);
    shape_rules::NextIndex(index, is);
  }
  (void)out_t;
  return std::vector<Tensor>{std::move(out)};
}

// ---- scatter_nd ------------------------------------------------------------------------------

Result ScatterNdRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckScatterInputs(ctx));
  ASSIGN_OR_RETURN(auto data, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto idx, ctx.Shape(1));
  ASSIGN_OR_RETURN(auto upd, ctx.Shape(2));
  if (idx.empty() || !idx.back().is_constant()) {
    return ctx.Error("the last dim of indices must be static (it is the index length)");
  }
  const int64_t k = idx.back().constant();
  if (k < 1 || k > static_cast<int64_t>(data.size())) {
    return ctx.Error(absl::StrFormat("index length %d does not fit data of rank %d", k, data.size()));
  }
  std::vector<DimExpr> want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  bool ok = want.size() == upd.size();
  for (size_t d = 0; ok && d < want.size(); ++d) {
    ok = !want[d].is_constant() || !upd[d].is_constant() || want[d].constant() == upd[d].constant();
  }
  if (!ok) {
    return ctx.Error(absl::StrFormat("updates must be indices.shape[:-1] + data.shape[%d:], got rank %d",
                                     k, upd.size()));
  }
  return One(Type::Tensor(ctx.dtype(0), {data.begin(), data.end()}));
}

KernelResult ScatterNdKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                             absl::Span<const Type> out_t) {
  const Tensor& data = in[0];
  const Tensor& idx = in[1];
  const Tensor& upd = in[2];
  Tensor out = data;
  const std::vector<int64_t>& ds = data.shape();
  const int64_t k = idx.shape().back();
  int64_t inner = 1;
  for (size_t d = k; d < ds.size(); ++d) inner *= ds[d];
  const int64_t tuples = idx.num_elements() / k;
  if (upd.num_elements() != tuples * inner) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scatter_nd: updates have %d elements, %d index tuples of %d need %d", upd.num_elements(),
        tuples, inner, tuples * inner));
  }
  const std::vector<int64_t> stride = shape_rules::Strides(ds);
  const std::string& reduction = attrs.GetString("reduction");
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t dst = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t raw = idx.GetInt64(t * k + j);
      auto r = shape_rules::ResolveNegativeIndex(raw, ds[j]);
      if (!r) return IndexError("scatter_nd", raw, ds[j]);
      dst += *r * stride[j];
    }
    for (int64_t e = 0; e < inner; ++e) Combine(out, dst + e, upd, t * inner + e, reduction);
  }
  (void)out_t;
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterScatterOps(OpRegistry::Builder& b) {
  b.Register("gather_nd")
      .Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Attr("batch_dims", AttrType::kInt, int64_t{0})
      .Pattern(FusionPattern::kOpaque)
      .Doc("slices of data at the index tuples of indices' last dim, after batch_dims batch dims")
      .Rule(GatherNdRule)
      .Reference(GatherNdKernel);
  b.Register("scatter_elements")
      .Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Input("updates", InputDep::kShape)
      .Attr("axis", AttrType::kInt, int64_t{0})
      .Attr("reduction", AttrType::kString, std::string("none"))
      .Pattern(FusionPattern::kOpaque)
      .Doc("data with updates written at indices along axis (none / add / mul / max / min)")
      .Rule(ScatterElementsRule)
      .Reference(ScatterElementsKernel);
  b.Register("scatter_nd")
      .Input("data", InputDep::kShape)
      .Input("indices", InputDep::kShape)
      .Input("updates", InputDep::kShape)
      .Attr("reduction", AttrType::kString, std::string("none"))
      .Pattern(FusionPattern::kOpaque)
      .Doc("data with the slices at indices' tuples replaced by (or combined with) updates")
      .Rule(ScatterNdRule)
      .Reference(ScatterNdKernel);
}

}  // namespace hetpass
