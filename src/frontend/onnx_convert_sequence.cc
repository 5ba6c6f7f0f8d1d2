// ONNX converters that select or reorder along one axis by a run-time condition or length:
// Compress and ReverseSequence. The registry side is shape_funcs/algorithm.cc (argwhere) and
// shape_funcs/slice.cc (take, gather_elements); the conventions are in onnx_converters.h.
//
// Compress(x, condition, axis): the positions where the 1-D condition holds, argwhere(condition)
// squeezed to [count], then take along the axis (along the flattened x without one). Only the
// output size depends on data, and argwhere counts on the device, so on an accelerator only the
// 8-byte count crosses to the host, as for NonZero. A condition shorter than the axis selects
// among its first elements only (the spec allows it); a true past the axis's end is a run-time
// index error of take.
//
// ReverseSequence(x, sequence_lens): per (batch b, time t) the source time
//   src[t, b] = t < len[b] ? len[b] - 1 - t : t
// from two iotas and the lengths, broadcast to x's shape (from shape_of: metadata, no copy) and
// gathered with gather_elements along the time axis. Lengths are clamped to [0, T] first so
// hostile lengths give an in-range gather (ONNX leaves them undefined).
#include "frontend/onnx_converters.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

Outs Compress(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * cond, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int cond_rank = ctx.RankOf(cond);
  if (cond_rank != 1) {
    return ctx.Error(absl::StrFormat("condition must be 1-D, got rank %d", cond_rank));
  }
  int64_t axis = 0;
  if (const auto* a = FindAttr(n, "axis"); a != nullptr) {
    axis = NormAxis(a->i(), rank);
    if (axis < 0 || axis >= rank) {
      return ctx.Error(absl::StrFormat("axis %d out of range for rank %d", a->i(), rank));
    }
  } else {
    ASSIGN_OR_RETURN(x, ctx.Op("reshape", {x}, {{"newshape", std::vector<int64_t>{-1}}}));
  }
  // argwhere gives [count, 1]: the positions, counted on the device.
  ASSIGN_OR_RETURN(Value * where, ctx.Op("argwhere", {cond}));
  ASSIGN_OR_RETURN(Value * idx, ctx.Op("squeeze", {where}, {{"axis", std::vector<int64_t>{1}}}));
  return One(ctx.Op("take", {x, idx}, {{"axis", axis}, {"mode", std::string("fast")}}));
}

Outs ReverseSequence(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * lens, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 2) return ctx.Error(absl::StrFormat("input must have rank >= 2, got %d", rank));
  const int64_t batch_axis = IntAttr(n, "batch_axis", 1);
  const int64_t time_axis = IntAttr(n, "time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0))) {
    return ctx.Error(
        absl::StrFormat("batch_axis and time_axis must be 0 and 1 in some order, got %d and %d",
                        batch_axis, time_axis));
  }
  if (ctx.RankOf(lens) != 1) return ctx.Error("sequence_lens must be 1-D");
  const DimExpr batch = ctx.TypeOf(x).shape()[batch_axis], count = ctx.TypeOf(lens).shape()[0];
  if (batch.is_constant() && count.is_constant() && batch.constant() != count.constant()) {
    return ctx.Error(absl::StrFormat("sequence_lens has %d lengths for a batch of %d",
                                     count.constant(), batch.constant()));
  }
  if (ctx.DTypeOf(lens) != DType::kI64) {
    ASSIGN_OR_RETURN(lens, ctx.Op("cast", {lens}, {{"dtype", DType::kI64}}));
  }
  ASSIGN_OR_RETURN(Value * t, DimIota(ctx, x, time_axis));
  // Clamp the lengths to [0, T] so every source index is in range.
  ASSIGN_OR_RETURN(Value * shape, ctx.Op("shape_of", {x}));
  ASSIGN_OR_RETURN(Value * steps,
                   ctx.Op("take", {shape, ctx.Const(Tensor::Scalar(DType::kI64, time_axis))},
                          {{"axis", int64_t{0}}, {"mode", std::string("fast")}}));
  ASSIGN_OR_RETURN(lens, ctx.Op("minimum", {lens, steps}));
  ASSIGN_OR_RETURN(lens, ctx.Op("maximum", {lens, ctx.Const(Tensor::Scalar(DType::kI64, 0))}));
  // [T, 1] against [1, B] (time first) or [1, T] against [B, 1] (batch first).
  ASSIGN_OR_RETURN(Value * t2,
                   ctx.Op("expand_dims", {t}, {{"axis", int64_t{time_axis == 0 ? 1 : 0}}}));
  ASSIGN_OR_RETURN(Value * l2,
                   ctx.Op("expand_dims", {lens}, {{"axis", int64_t{batch_axis == 0 ? 1 : 0}}}));
  ASSIGN_OR_RETURN(Value * last,
                   ctx.Op("subtract", {l2, ctx.Const(Tensor::Scalar(DType::kI64, 1))}));
  ASSIGN_OR_RETURN(Value * rev, ctx.Op("subtract", {last, t2}));
  ASSIGN_OR_RETURN(Value * inside, ctx.Op("less", {t2, l2}));
  ASSIGN_OR_RETURN(Value * src, ctx.Op("where", {inside, rev, t2}));
  if (rank > 2) {
    ASSIGN_OR_RETURN(src, ctx.Op("expand_dims", {src},
                                 {{"axis", int64_t{2}}, {"num_newaxis", int64_t{rank - 2}}}));
  }
  ASSIGN_OR_RETURN(src, ctx.Op("dyn.broadcast_to", {src, shape}));
  return One(ctx.Op("gather_elements", {x, src}, {{"axis", time_axis}}));
}

}  // namespace

void AddSequenceConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Compress", Compress},
      {"ReverseSequence", ReverseSequence},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
