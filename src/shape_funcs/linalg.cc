// Linear algebra beyond nn.dense: nn.batch_matmul, NumPy/ONNX `matmul` of two operands of rank
// >= 2: a[..., M, K] x b[..., K, N] -> [..., M, N], the leading (batch) dims broadcast as in
// NumPy. It is what attention needs (Q x K^T and P x V over [batch, heads, seq, d]); before it
// existed the ONNX importer lowered such MatMuls to expand_dims + multiply + sum, a rank-5
// temporary summed on the reference kernels (4 of the transformer's 5 ms).
//
// Masks: both operands `shape`; the output shape follows from the two input shapes.
// Pattern: opaque. A library GEMM runs it (compile_engine/batch_matmul_kernel.cc); no backend
// here fuses an elementwise tail into a batched GEMM yet, so the fuser must not hand it one.
//
// linalg.det (ONNX Det): the determinants of square matrices [*, M, M] -> [*]. The reference
// kernel factors each matrix as P A = L U by Gaussian elimination with partial pivoting (the
// row of the largest magnitude in each column, which bounds the multipliers by 1), in double
// whatever the dtype, and multiplies U's diagonal, negated once per row swap. A column with no
// non-zero pivot means a singular matrix: exactly 0, never a division by zero. A 0 x 0 matrix
// has determinant 1 (the empty product). Mask: `shape` (the result is the batch dims); the rule
// rejects matrices provably not square, the kernel those whose symbolic dims differ at run time.
#include "shape_funcs/linalg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using shape_rules::ProvablyDifferent;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

Result BatchMatmulRule(ShapeContext& ctx) {
  if (ctx.dtype(0) != ctx.dtype(1)) {
    return ctx.Error(absl::StrFormat("a and b dtypes differ: %s vs %s", DTypeName(ctx.dtype(0)),
                                     DTypeName(ctx.dtype(1))));
  }
  if (ctx.rank(0) < 2 || ctx.rank(1) < 2) {
    return ctx.Error(absl::StrFormat("a and b need rank >= 2, got ranks %d and %d", ctx.rank(0),
                                     ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto a, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto b, ctx.Shape(1));
  const DimExpr& ka = a[a.size() - 1];
  const DimExpr& kb = b[b.size() - 2];
  if (ProvablyDifferent(ka, kb)) {
    return ctx.Error(absl::StrFormat("reduction dims differ: a[.., %s] vs b[.., %s, _]",
                                     ka.ToString(), kb.ToString()));
  }
  ASSIGN_OR_RETURN(std::vector<DimExpr> out,
                   shape_rules::BroadcastShapes(a.subspan(0, a.size() - 2),
                                                b.subspan(0, b.size() - 2), ctx));
  out.push_back(a[a.size() - 2]);
  out.push_back(b[b.size() - 1]);
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult BatchMatmulKernel(absl::Span<const Tensor> in, const Attrs&,
                               absl::Span<const Type> out_t) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& os = out.shape();
  const int r = static_cast<int>(os.size());
  const int64_t m = os[r - 2], n = os[r - 1], k = a.shape().back();
  if (b.shape()[b.rank() - 2] != k) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "nn.batch_matmul: reduction dims differ at run time: %d vs %d", k, b.shape()[b.rank() - 2]));
  }
  // Batch index -> the operands' batch offsets through NumPy broadcasting.
  const std::vector<int64_t> batch(os.begin(), os.end() - 2);
  const std::vector<int64_t> a_batch(a.shape().begin(), a.shape().end() - 2);
  const std::vector<int64_t> b_batch(b.shape().begin(), b.shape().end() - 2);
  if (out.num_elements() == 0) return std::vector<Tensor>{std::move(out)};
  std::vector<int64_t> index(batch.size(), 0);
  int64_t bi = 0;
  do {
    const int64_t ao = shape_rules::BroadcastSourceIndex(index, a_batch) * m * k;
    const int64_t bo = shape_rules::BroadcastSourceIndex(index, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t x = 0; x < k; ++x) {
          acc += a.GetDouble(ao + i * k + x) * b.GetDouble(bo + x * n + j);
        }
        out.SetDouble((bi * m + i) * n + j, acc);
      }
    }
    ++bi;
  } while (shape_rules::NextIndex(index, batch));
  return std::vector<Tensor>{std::move(out)};
}

// ---- linalg.det ----------------------------------------------------------------------------

Result DetRule(ShapeContext& ctx) {
  if (!IsFloat(ctx.dtype(0))) {
    return ctx.Error(
        absl::StrFormat("matrices must be floating point, got %s", DTypeName(ctx.dtype(0))));
  }
  if (ctx.rank(0) < 2) {
    return ctx.Error(absl::StrFormat("need rank >= 2 ([*, M, M]), got rank %d", ctx.rank(0)));
  }
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  const DimExpr& rows = x[x.size() - 2];
  const DimExpr& cols = x[x.size() - 1];
  if (ProvablyDifferent(rows, cols)) {
    return ctx.Error(
        absl::StrFormat("matrices must be square, got %s x %s", rows.ToString(), cols.ToString()));
  }
  return One(Type::Tensor(ctx.dtype(0), {x.begin(), x.end() - 2}));
}

// The determinant of the m x m row-major matrix `a`, destroyed (see the file comment).
double LuDeterminant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i) {
      if (std::abs(a[i * m + k]) > std::abs(a[pivot * m + k])) pivot = i;
    }
    if (a[pivot * m + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      det = -det;
    }
    const double d = a[k * m + k];
    det *= d;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / d;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

KernelResult DetKernel(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Type> out_t) {
  const std::vector<int64_t>& xs = in[0].shape();
  const int64_t m = xs[xs.size() - 2];
  if (xs.back() != m) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "linalg.det: matrices must be square, got %d x %d at run time", m, xs.back()));
  }
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<double> x = in[0].ToDoubles();
  std::vector<double> a(m * m);
  for (int64_t b = 0; b < out.num_elements(); ++b) {
    std::copy(x.begin() + b * m * m, x.begin() + (b + 1) * m * m, a.begin());
    out.SetDouble(b, LuDeterminant(a, m));
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterLinalgOps(OpRegistry::Builder& b) {
  b.Register("nn.batch_matmul")
      .Input("a", InputDep::kShape)
      .Input("b", InputDep::kShape)
      .Pattern(FusionPattern::kOpaque)
      .Doc("a[.., M, K] x b[.., K, N] -> [.., M, N], batch dims broadcast (ONNX MatMul, rank >= 2)")
      .Rule(BatchMatmulRule)
      .Reference(BatchMatmulKernel);
  b.Register("linalg.det")
      .Input("data", InputDep::kShape)
      .Pattern(FusionPattern::kOpaque)
      .Doc(
          "the determinants of square matrices [*, M, M] -> [*] (ONNX Det; LU with partial "
          "pivoting in double, singular -> 0)")
      .Rule(DetRule)
      .Reference(DetKernel);
}

}  // namespace hetpass
