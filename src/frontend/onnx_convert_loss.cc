// ONNX converters of the loss family: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
// both built from registry ops (inference computes them like any other expression):
//
//   loss[n, d..] = -input[n, target[n, d..], d..] * weight[target[n, d..]]
//
// gathered with gather_elements along the class axis 1; targets equal to ignore_index get
// weight 0 and index 0 (so the gather stays in range). reduction none keeps loss; sum adds it
// up; mean divides that sum by the sum of the weights taken (the plain mean when there are no
// weights and no ignore_index). SoftmaxCrossEntropyLoss is that loss of LogSoftmax(scores)
// over axis 1, and returns the log-probabilities as its optional second output.
// A target outside [0, C) that is not ignore_index is a run-time error of gather_elements.
#include "frontend/onnx_converters.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

absl::StatusOr<Value*> NllLoss(ImportContext& ctx, const onnx::NodeProto& n, Value* input,
                               Value* target, Value* weight) {
  const std::string reduction = StringAttr(n, "reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return ctx.Error(absl::StrCat("reduction must be none, sum or mean, got '", reduction, "'"));
  }
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, input));
  if (rank < 2) return ctx.Error(absl::StrCat("input must be [N, C, ..], got rank ", rank));
  const DType tt = ctx.DTypeOf(target);
  Value* safe = target;
  Value* ignored = nullptr;
  if (FindAttr(n, "ignore_index") != nullptr) {
    Value* ii = ctx.Const(Tensor::Scalar(tt, IntAttr(n, "ignore_index", 0)));
    ASSIGN_OR_RETURN(ignored, ctx.Op("equal", {target, ii}));
    ASSIGN_OR_RETURN(safe, ctx.Op("where", {ignored, ctx.Const(Tensor::Scalar(tt, 0)), target}));
  }
  ASSIGN_OR_RETURN(Value * idx, ctx.Op("expand_dims", {safe}, {{"axis", int64_t{1}}}));
  ASSIGN_OR_RETURN(Value * picked, ctx.Op("gather_elements", {input, idx}, {{"axis", int64_t{1}}}));
  ASSIGN_OR_RETURN(picked, ctx.Op("squeeze", {picked}, {{"axis", std::vector<int64_t>{1}}}));
  ASSIGN_OR_RETURN(Value * loss, ctx.Op("negative", {picked}));
  Value* w = nullptr;  // the weight of each target, when not all 1
  if (weight != nullptr) {
    ASSIGN_OR_RETURN(w, ctx.Op("take", {weight, safe},
                               {{"axis", int64_t{0}}, {"mode", std::string("fast")}}));
  }
  if (ignored != nullptr) {
    Value* kept = w != nullptr ? w : ctx.ScalarLike(input, 1.0);
    ASSIGN_OR_RETURN(w, ctx.Op("where", {ignored, ctx.ScalarLike(input, 0.0), kept}));
  }
  if (w != nullptr) {
    ASSIGN_OR_RETURN(loss, ctx.Op("multiply", {loss, w}));
  }
  if (reduction == "none") return loss;
  const Attrs all{{"axis", std::vector<int64_t>{}}, {"keepdims", false}};
  if (reduction == "mean" && w == nullptr) return ctx.Op("mean", {loss}, all);
  ASSIGN_OR_RETURN(Value * total, ctx.Op("sum", {loss}, all));
  if (reduction == "sum") return total;
  ASSIGN_OR_RETURN(Value * wsum, ctx.Op("sum", {w}, all));
  return ctx.Op("divide", {total, wsum});
}

Outs NegativeLogLikelihoodLoss(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * input, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * target, Need(ctx, in, 1));
  return One(NllLoss(ctx, n, input, target, In(in, 2)));
}

Outs SoftmaxCrossEntropyLoss(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * scores, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * labels, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * log_prob, LogSoftmaxOver(ctx, scores, {1}));
  ASSIGN_OR_RETURN(Value * loss, NllLoss(ctx, n, log_prob, labels, In(in, 2)));
  return std::vector<Value*>{loss, log_prob};
}

}  // namespace

void AddLossConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss},
      {"SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
