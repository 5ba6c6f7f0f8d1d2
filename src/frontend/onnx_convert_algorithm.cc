// ONNX converters of the sorting and searching family, whose output sizes depend on data:
// NonZero (argwhere), TopK (topk, or dyn.topk for a computed K), NonMaxSuppression and Unique.
// The registry side is shape_funcs/algorithm.cc (Unique: shape_funcs/unique.cc); the
// conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

Outs NonZero(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  // argwhere gives [count, rank]; ONNX wants [rank, count].
  ASSIGN_OR_RETURN(Value * w, ctx.Op("argwhere", {x}));
  return One(ctx.Op("transpose", {w}, {{"axes", std::vector<int64_t>{1, 0}}}));
}

Outs TopK(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * k, Need(ctx, in, 1));
  Attrs attrs{{"axis", IntAttr(n, "axis", -1)},
              {"is_ascend", IntAttr(n, "largest", 1) == 0},
              {"dtype", DType::kI64}};
  Node* node = nullptr;
  if (auto kv = ConstInts(ctx, k)) {
    if (kv->size() != 1) return ctx.Error("K must have one element");
    attrs.Set("k", (*kv)[0]);
    ASSIGN_OR_RETURN(node, ctx.OpNode("topk", {x}, attrs));
  } else {
    ASSIGN_OR_RETURN(Value * ks, ctx.Op("reshape", {k}, {{"newshape", std::vector<int64_t>{}}}));
    ASSIGN_OR_RETURN(node, ctx.OpNode("dyn.topk", {x, ks}, attrs));
  }
  return std::vector<Value*>{node->result(0), node->result(1)};
}

// NonMaxSuppression-11 (unchanged through opset 17; opset-10 models are turned away by the
// importer's generic older-version check, as 10 != 11): one non_max_suppression. Absent
// optional inputs become constants with ONNX's defaults (max_output_boxes_per_class 0,
// iou_threshold 0), except score_threshold: an absent one is has_score_threshold = false with a
// placeholder input, because no threshold value filters nothing (ONNX Runtime keeps even -inf
// scores without it). Computed inputs stay inputs: the registry op's counter decides the
// output size on the device.
Outs NonMaxSuppression(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * boxes, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scores, Need(ctx, in, 1));
  const int64_t center_point_box = IntAttr(n, "center_point_box", 0);
  if (center_point_box != 0 && center_point_box != 1) {
    return ctx.Error(absl::StrFormat("center_point_box must be 0 or 1, got %d", center_point_box));
  }
  Value* max_output = In(in, 2);
  if (max_output == nullptr) max_output = ctx.Const(Tensor::FromInt64s(DType::kI64, {}, {0}));
  Value* iou_threshold = In(in, 3);
  if (iou_threshold == nullptr) iou_threshold = ctx.Const(Tensor::Scalar(DType::kF32, 0));
  Value* score_threshold = In(in, 4);
  const bool has_score_threshold = score_threshold != nullptr;
  if (!has_score_threshold) score_threshold = ctx.Const(Tensor::Scalar(DType::kF32, 0));
  return One(ctx.Op("non_max_suppression",
                    {boxes, scores, max_output, iou_threshold, score_threshold},
                    {{"center_point_box", center_point_box},
                     {"has_score_threshold", has_score_threshold}}));
}

// Unique-11: one unique op for all four outputs (an output the node leaves unnamed is simply
// not used). Its counter sizes y, indices and counts on the op's device.
Outs Unique(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t sorted = IntAttr(n, "sorted", 1);
  if (sorted != 0 && sorted != 1) {
    return ctx.Error(absl::StrFormat("sorted must be 0 or 1, got %d", sorted));
  }
  std::vector<int64_t> axis;
  if (FindAttr(n, "axis") != nullptr) {
    const int64_t a = IntAttr(n, "axis", 0);
    if (a < -rank || a >= rank) {
      return ctx.Error(absl::StrFormat("axis %d is out of range for X of rank %d", a, rank));
    }
    axis.push_back(a);
  }
  ASSIGN_OR_RETURN(Node * node,
                   ctx.OpNode("unique", {x}, {{"axis", axis}, {"sorted", sorted == 1}}));
  return std::vector<Value*>{node->result(0), node->result(1), node->result(2), node->result(3)};
}

}  // namespace

void AddAlgorithmConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"NonMaxSuppression", NonMaxSuppression},
      {"NonZero", NonZero},
      {"TopK", TopK},
      {"Unique", Unique},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
