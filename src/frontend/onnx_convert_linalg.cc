// ONNX converters of the linear-algebra family: Gemm and MatMul as nn.dense (the right side
// transposed, folded for constants) or nn.batch_matmul, and Det as linalg.det. The registry side
// is nn.dense in shape_funcs/nn.cc and shape_funcs/linalg.cc; the conventions are in
// onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// 2-D transpose: folded for constants, an op otherwise.
absl::StatusOr<Value*> Transpose2D(ImportContext& ctx, Value* v) {
  if (auto t = ctx.ConstValue(v); t && t->rank() == 2) {
    const int64_t r = t->shape()[0], c = t->shape()[1];
    Tensor out = Tensor::Zeros(t->dtype(), {c, r});
    const uint8_t* src = t->data();
    uint8_t* dst = out.mutable_data();
    // In 32 x 32 tiles, elements copied by size: a BERT-base encoder's weights transposed
    // element by element through a variable-length memcpy took a fifth of its import.
    auto transpose = [&](auto element) {
      using E = decltype(element);
      constexpr int64_t kTile = 32;
      for (int64_t ib = 0; ib < r; ib += kTile) {
        for (int64_t jb = 0; jb < c; jb += kTile) {
          for (int64_t i = ib; i < std::min(r, ib + kTile); ++i) {
            for (int64_t j = jb; j < std::min(c, jb + kTile); ++j) {
              std::memcpy(dst + (j * r + i) * sizeof(E), src + (i * c + j) * sizeof(E), sizeof(E));
            }
          }
        }
      }
    };
    switch (DTypeSize(t->dtype())) {
      case 1: transpose(uint8_t{}); break;
      case 2: transpose(uint16_t{}); break;
      case 4: transpose(uint32_t{}); break;
      case 8: transpose(uint64_t{}); break;
      default: return absl::UnimplementedError(absl::StrCat("transpose of ", DTypeName(t->dtype()), " constants"));
    }
    return ctx.Const(std::move(out));
  }
  return ctx.Op("transpose", {v}, {{"axes", std::vector<int64_t>{1, 0}}});
}

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

// MatMul with a 2-D right side: nn.dense (batched left sides allowed: data[.., K]). Batched
// right sides (attention's Q K^T, P V): nn.batch_matmul, batch dims broadcast. 1-D operands
// (NumPy's vector promotion) are not supported yet.
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

// Det-11: linalg.det over [*, M, M]. The ONNX types are the float ones; the registry rule
// checks squareness (and the kernel, for symbolic dims).
Outs Det(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 2) {
    return ctx.Error(absl::StrFormat("X must have rank >= 2 ([*, M, M]), got %d", rank));
  }
  const DType dt = ctx.DTypeOf(x);
  if (dt != DType::kF32 && dt != DType::kF64) {
    return ctx.Unimplemented(absl::StrFormat("X of dtype %s (f32 and f64 only)", DTypeName(dt)));
  }
  return One(ctx.Op("linalg.det", {x}));
}

}  // namespace

void AddLinalgConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Det", Det},
      {"Gemm", Gemm},
      {"MatMul", MatMul},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
