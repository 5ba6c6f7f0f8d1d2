// Linear algebra beyond nn.dense: nn.batch_matmul, NumPy/ONNX `matmul` of two operands of rank
// >= 2: a[..., M, K] x b[..., K, N] -> [..., M, N], the leading (batch) dims broadcast as in
// NumPy. It is what attention needs (Q x K^T and P x V over [batch, heads, seq, d]); before it
// existed the ONNX importer lowered such MatMuls to expand_dims + multiply + sum, a rank-5
// temporary summed on the reference kernels (4 of the transformer's 5 ms).
//
// Masks: both operands `shape`; the output shape follows from the two input shapes.
// Pattern: opaque. A library GEMM runs it (compile_engine/batch_matmul_kernel.cc); no backend
// here fuses an elementwise tail into a batched GEMM yet, so the fuser must not hand it one.
#include "shape_funcs/linalg.h"

#include <algorithm>

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

}  // namespace

void RegisterLinalgOps(OpRegistry::Builder& b) {
  b.Register("nn.batch_matmul")
      .Input("a", InputDep::kShape)
      .Input("b", InputDep::kShape)
      .Pattern(FusionPattern::kOpaque)
      .Doc("a[.., M, K] x b[.., K, N] -> [.., M, N], batch dims broadcast (ONNX MatMul, rank >= 2)")
      .Rule(BatchMatmulRule)
      .Reference(BatchMatmulKernel);
}

}  // namespace hetpass
