// Sorting and searching: topk, dyn.topk, argwhere and non_max_suppression.
//
// Masks: topk's data is `shape` (the output is the input shape with min(k, dim) along the
// axis); TVM's dyn.topk was op-wide data dependent and so copied the data being sorted to the
// host just to learn k; here only the scalar k is `value`. argwhere is truly data-dependent
// (as is non_max_suppression, below): `value` (the count of non-zeros is the output's first
// dim; its second, the input's rank, is static metadata that needs no mask), so it is marked
// DataDependentOutputShape (planning should bring back a count, not the tensor, when a device
// kernel can produce it).
//
// topk has two outputs (values, indices); Relay's ret_type "values"/"indices" is not modelled
// (a single-output use simply ignores the other). k < 1 selects the whole axis, as in Relay;
// k larger than the axis is clamped, so a symbolic axis gives `min(k, n)`. Equal values keep
// their original order (the lower index first), in both directions.
//
// non_max_suppression is ONNX's NonMaxSuppression (opsets 10-17, one semantics), matching ONNX
// Runtime's CPU kernel, which produced the reference outputs of the models we import:
//   inputs   boxes f32[B, N, 4], scores f32[B, C, N], max_output_boxes_per_class i64,
//            iou_threshold f32, score_threshold f32 (each of the last three a scalar or a
//            one-element 1-D tensor, as exporters write them)
//   attrs    center_point_box: 0 boxes are [y1, x1, y2, x2], any two opposite corners (min/max
//            of the corners); 1 boxes are [x_center, y_center, width, height]
//            has_score_threshold: false when the ONNX node had no score_threshold input; then
//            input 4 is ignored and no box is dropped for its score. We chose an attribute over
//            a sentinel input (-inf): ONNX Runtime keeps -inf scores when the input is absent,
//            and a sentinel would drop them
//   output   i64[num_selected, 3] rows (batch, class, box): batch-major, then class, then the
//            order of selection
// Per batch and class: boxes with score > score_threshold (strictly) are candidates, taken in
// descending score, equal scores by the lower box index first; a candidate is selected unless
// its IoU with an already selected box of that class is > iou_threshold (strictly), until
// max_output_boxes_per_class are selected (<= 0: none). IoU is computed in f32 as ONNX Runtime
// does; boxes that do not overlap with positive area have IoU 0 (so zero-area boxes never
// suppress). iou_threshold outside [0, 1] is an error (ONNX Runtime rejects it too). NaN scores
// are never selected: ONNX Runtime's heap order is unspecified for them.
//
// Its output's first dim is data-dependent, so it is paired with the counter
// non_max_suppression_count (like argwhere with count_nonzero): manifest-alloc runs the counter
// on the op's device and copies only its i64 scalar to the host, never the boxes or scores.
// Both ops share one selection routine (SelectBoxes), so the count and the rows cannot
// disagree. Masks: the op's shape rule (the host shape function when the counter is not used,
// and constant folding) needs the values of every input, and the dims of boxes and scores to
// lay them out: boxes and scores are shape+value, the scalars value. The counter's own shape
// rule only validates types (its result is always i64[]): `shape` everywhere, so running it on
// the device needs no copy.
#include "shape_funcs/algorithm.h"

#include <algorithm>
#include <array>
#include <cmath>
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
  std::vector<double> row(len);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      bool nan = false;
      for (int64_t j = 0; j < len; ++j) {
        row[j] = x.GetDouble(base + j * inner);
        nan |= std::isnan(row[j]);
      }
      std::iota(order.begin(), order.end(), 0);
      if (nan) {
        // NaN orders nowhere: kept to the stable sort's answer, whatever it is.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return ascend ? row[a] < row[b] : row[a] > row[b];
        });
      } else {
        // The first k of the stable sort: ties by index, so a partial sort (O(len log k); the
        // RPN's topk over thousands of anchors) gives exactly the same k.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          if (row[a] != row[b]) return ascend ? row[a] < row[b] : row[a] > row[b];
          return a < b;
        });
      }
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

// ---- non_max_suppression ---------------------------------------------------------------

constexpr int kNmsBoxes = 0, kNmsScores = 1, kNmsMaxOutput = 2, kNmsIou = 3, kNmsScoreThreshold = 4;
constexpr int kNmsInputs = 5;

// One problem of the selection routine, decoded from the shape rule's values or the kernel's
// tensors.
struct NmsProblem {
  int64_t batches = 0, classes = 0, num_boxes = 0;
  std::vector<float> boxes;   // [batches, num_boxes, 4]
  std::vector<float> scores;  // [batches, classes, num_boxes]
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  std::optional<float> score_threshold;
  bool center_point_box = false;
};

using NmsRow = std::array<int64_t, 3>;  // (batch, class, box)

// A box as ONNX Runtime prepares it: min/max corners and its area, in f32.
struct NmsBox {
  float y_min, x_min, y_max, x_max, area;
};

NmsBox PrepareBox(const float* b, bool center_point_box) {
  NmsBox r;
  if (!center_point_box) {
    // [y1, x1, y2, x2] with any two opposite corners: order each axis.
    r.y_min = std::min(b[0], b[2]);
    r.y_max = std::max(b[0], b[2]);
    r.x_min = std::min(b[1], b[3]);
    r.x_max = std::max(b[1], b[3]);
    r.area = (r.y_max - r.y_min) * (r.x_max - r.x_min);
  } else {
    // [x_center, y_center, width, height]: ONNX Runtime takes the extents as given.
    const float half_w = b[2] / 2, half_h = b[3] / 2;
    r.x_min = b[0] - half_w;
    r.x_max = b[0] + half_w;
    r.y_min = b[1] - half_h;
    r.y_max = b[1] + half_h;
    r.area = b[2] * b[3];
  }
  return r;
}

// True if IoU(a, b) > threshold. Boxes without a positive-area overlap have IoU 0 and never
// suppress (this also keeps a zero-area box from dividing by zero).
bool Suppresses(const NmsBox& a, const NmsBox& b, float threshold) {
  const float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  if (ix_max <= ix_min) return false;
  const float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  if (inter <= 0.0f) return false;
  const float uni = a.area + b.area - inter;
  return inter / uni > threshold;
}

// The selection shared by non_max_suppression (rows) and its counter (their number). Errors
// are plain messages; the callers prefix the op.
absl::StatusOr<std::vector<NmsRow>> SelectBoxes(const NmsProblem& p) {
  if (!(p.iou_threshold >= 0.0f && p.iou_threshold <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("iou_threshold must be in [0, 1], got %g", p.iou_threshold));
  }
  // Callers decode sizes from checked types; a mismatch here would read out of bounds.
  if (static_cast<int64_t>(p.boxes.size()) != p.batches * p.num_boxes * 4 ||
      static_cast<int64_t>(p.scores.size()) != p.batches * p.classes * p.num_boxes) {
    return absl::InvalidArgumentError("boxes or scores hold the wrong number of values");
  }
  std::vector<NmsRow> rows;
  if (p.max_per_class <= 0) return rows;
  std::vector<NmsBox> prepared(p.num_boxes);
  std::vector<int64_t> candidates;
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < p.batches; ++b) {
    for (int64_t i = 0; i < p.num_boxes; ++i) {
      prepared[i] = PrepareBox(p.boxes.data() + (b * p.num_boxes + i) * 4, p.center_point_box);
    }
    for (int64_t c = 0; c < p.classes; ++c) {
      // data() + offset: with no boxes the offset is past an empty vector (never read).
      const float* score = p.scores.data() + (b * p.classes + c) * p.num_boxes;
      candidates.clear();
      for (int64_t i = 0; i < p.num_boxes; ++i) {
        if (std::isnan(score[i])) continue;
        if (p.score_threshold && !(score[i] > *p.score_threshold)) continue;
        candidates.push_back(i);
      }
      // Descending score, equal scores by the lower index: a strict total order without NaN.
      std::sort(candidates.begin(), candidates.end(), [&](int64_t x, int64_t y) {
        return score[x] > score[y] || (score[x] == score[y] && x < y);
      });
      selected.clear();
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(selected.size()) >= p.max_per_class) break;
        const bool suppressed = std::any_of(selected.begin(), selected.end(), [&](int64_t s) {
          return Suppresses(prepared[s], prepared[i], p.iou_threshold);
        });
        if (suppressed) continue;
        selected.push_back(i);
        rows.push_back({b, c, i});
      }
    }
  }
  return rows;
}

// Checks the operand types both ops accept; `types` are the five operand types, the dims as
// far as they are known (symbols are only rejected when provably wrong). Plain messages.
absl::Status CheckNmsTypes(absl::Span<const Type> types, int64_t center_point_box) {
  static constexpr const char* kNames[kNmsInputs] = {
      "boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (int i = 0; i < kNmsInputs; ++i) {
    const DType want = i == kNmsMaxOutput ? DType::kI64 : DType::kF32;
    if (types[i].dtype() != want) {
      return absl::InvalidArgumentError(absl::StrFormat("%s must be %s, got %s", kNames[i],
                                                        DTypeName(want), types[i].ToString()));
    }
  }
  for (int i : {kNmsBoxes, kNmsScores}) {
    if (types[i].rank() != 3) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s must have rank 3 (%s), got %s", kNames[i],
          i == kNmsBoxes ? "[num_batches, spatial_dimension, 4]"
                         : "[num_batches, num_classes, spatial_dimension]",
          types[i].ToString()));
    }
  }
  const auto& boxes = types[kNmsBoxes].shape();
  const auto& scores = types[kNmsScores].shape();
  if (shape_rules::ProvablyDifferent(boxes[2], DimExpr(4))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("boxes must be [num_batches, spatial_dimension, 4], got %s",
                        types[kNmsBoxes].ToString()));
  }
  if (shape_rules::ProvablyDifferent(boxes[0], scores[0])) {
    return absl::InvalidArgumentError(
        absl::StrFormat("boxes %s and scores %s differ in num_batches",
                        types[kNmsBoxes].ToString(), types[kNmsScores].ToString()));
  }
  if (shape_rules::ProvablyDifferent(boxes[1], scores[2])) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "boxes %s and scores %s differ in spatial_dimension (boxes dim 1, scores dim 2)",
        types[kNmsBoxes].ToString(), types[kNmsScores].ToString()));
  }
  for (int i : {kNmsMaxOutput, kNmsIou, kNmsScoreThreshold}) {
    const Type& t = types[i];
    const bool one_value =
        t.rank() == 0 ||
        (t.rank() == 1 && !shape_rules::ProvablyDifferent(t.shape()[0], DimExpr(1)));
    if (!one_value) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s must be a scalar or hold one value, got %s", kNames[i], t.ToString()));
    }
  }
  if (center_point_box != 0 && center_point_box != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("center_point_box must be 0 or 1, got %d", center_point_box));
  }
  return absl::OkStatus();
}

// The type of operand i as far as the mask lets the rule see it. A `value`-only scalar operand
// shows its rank (static metadata) and, when 1-D, its value count as its one dim.
absl::StatusOr<Type> NmsOperandType(ShapeContext& ctx, int i) {
  if (NeedsShape(ctx.op().dep(i))) {
    ASSIGN_OR_RETURN(absl::Span<const DimExpr> s, ctx.Shape(i));
    return Type::Tensor(ctx.dtype(i), shape_rules::ToVec(s));
  }
  if (ctx.rank(i) != 1) return Type::Tensor(ctx.dtype(i), shape_rules::UnknownDims(ctx.rank(i)));
  ASSIGN_OR_RETURN(DimExpr n, ctx.NumValues(i));
  return Type::Tensor(ctx.dtype(i), {n});
}

absl::Status CheckNmsContext(ShapeContext& ctx) {
  std::vector<Type> types;
  for (int i = 0; i < kNmsInputs; ++i) {
    ASSIGN_OR_RETURN(Type t, NmsOperandType(ctx, i));
    types.push_back(std::move(t));
  }
  const absl::Status s = CheckNmsTypes(types, ctx.attrs().GetInt("center_point_box"));
  return s.ok() ? s : ctx.Error(s.message());
}

// The problem from the rule's values, nullopt while any of them is unknown (compile time).
absl::StatusOr<std::optional<NmsProblem>> NmsProblemFromValues(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(absl::Span<const DimExpr> boxes_shape, ctx.Shape(kNmsBoxes));
  ASSIGN_OR_RETURN(absl::Span<const DimExpr> scores_shape, ctx.Shape(kNmsScores));
  const auto bdims = shape_rules::AllConstant(boxes_shape);
  const auto sdims = shape_rules::AllConstant(scores_shape);
  if (!bdims || !sdims) return std::optional<NmsProblem>();
  NmsProblem p;
  p.batches = (*bdims)[0];
  p.num_boxes = (*bdims)[1];
  p.classes = (*sdims)[1];
  p.center_point_box = ctx.attrs().GetInt("center_point_box") == 1;
  ASSIGN_OR_RETURN(auto boxes, ctx.FloatValues(kNmsBoxes));
  ASSIGN_OR_RETURN(auto scores, ctx.FloatValues(kNmsScores));
  // The count as an integer: read exactly (a double would round INT64_MAX, a common "no limit").
  ASSIGN_OR_RETURN(auto max_out, ctx.IntValues(kNmsMaxOutput));
  ASSIGN_OR_RETURN(auto iou, ctx.FloatValues(kNmsIou));
  if (!boxes || !scores || !max_out || !iou || max_out->size() != 1 || iou->size() != 1 ||
      !(*max_out)[0].is_constant()) {
    return std::optional<NmsProblem>();
  }
  if (ctx.attrs().GetBool("has_score_threshold")) {
    ASSIGN_OR_RETURN(auto st, ctx.FloatValues(kNmsScoreThreshold));
    if (!st || st->size() != 1) return std::optional<NmsProblem>();
    p.score_threshold = static_cast<float>((*st)[0]);
  }
  p.boxes.assign(boxes->begin(), boxes->end());  // f32 values: exact through double
  p.scores.assign(scores->begin(), scores->end());
  p.max_per_class = (*max_out)[0].constant();
  p.iou_threshold = static_cast<float>((*iou)[0]);
  return std::optional<NmsProblem>(std::move(p));
}

Result NmsRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckNmsContext(ctx));
  ASSIGN_OR_RETURN(std::optional<NmsProblem> p, NmsProblemFromValues(ctx));
  DimExpr count = DimExpr::Unknown();
  if (p) {
    absl::StatusOr<std::vector<NmsRow>> rows = SelectBoxes(*p);
    if (!rows.ok()) return ctx.Error(rows.status().message());
    count = static_cast<int64_t>(rows->size());
  }
  return std::vector<Type>{Type::Tensor(DType::kI64, {count, DimExpr(3)})};
}

Result NmsCountRule(ShapeContext& ctx) {
  RETURN_IF_ERROR(CheckNmsContext(ctx));
  return std::vector<Type>{Type::Tensor(DType::kI64, {})};
}

// The kernels check the tensors again: they also run outside type inference (tests, tools).
absl::StatusOr<NmsProblem> NmsProblemFromTensors(absl::Span<const Tensor> in, const Attrs& attrs) {
  if (in.size() != kNmsInputs) {
    return absl::InvalidArgumentError(absl::StrFormat("takes 5 inputs, got %d", in.size()));
  }
  std::vector<Type> types;
  for (const Tensor& t : in) types.push_back(t.type());
  RETURN_IF_ERROR(CheckNmsTypes(types, attrs.GetInt("center_point_box")));
  for (int i : {kNmsMaxOutput, kNmsIou, kNmsScoreThreshold}) {
    if (in[i].num_elements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("input %d must hold one value, got %s", i, in[i].type().ToString()));
    }
  }
  NmsProblem p;
  p.batches = in[kNmsBoxes].shape()[0];
  p.num_boxes = in[kNmsBoxes].shape()[1];
  p.classes = in[kNmsScores].shape()[1];
  p.center_point_box = attrs.GetInt("center_point_box") == 1;
  p.boxes.reserve(in[kNmsBoxes].num_elements());
  for (int64_t i = 0; i < in[kNmsBoxes].num_elements(); ++i) {
    p.boxes.push_back(static_cast<float>(in[kNmsBoxes].GetDouble(i)));
  }
  p.scores.reserve(in[kNmsScores].num_elements());
  for (int64_t i = 0; i < in[kNmsScores].num_elements(); ++i) {
    p.scores.push_back(static_cast<float>(in[kNmsScores].GetDouble(i)));
  }
  p.max_per_class = in[kNmsMaxOutput].GetInt64(0);
  p.iou_threshold = static_cast<float>(in[kNmsIou].GetDouble(0));
  if (attrs.GetBool("has_score_threshold")) {
    p.score_threshold = static_cast<float>(in[kNmsScoreThreshold].GetDouble(0));
  }
  return p;
}

absl::Status NmsKernelError(absl::string_view op, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat("op '", op, "': ", s.message()));
}

KernelResult NmsKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                       absl::Span<const Type> out_t) {
  constexpr absl::string_view kOp = "non_max_suppression";
  absl::StatusOr<NmsProblem> p = NmsProblemFromTensors(in, attrs);
  if (!p.ok()) return NmsKernelError(kOp, p.status());
  absl::StatusOr<std::vector<NmsRow>> rows = SelectBoxes(*p);
  if (!rows.ok()) return NmsKernelError(kOp, rows.status());
  // The output was allocated from the counter's (or the shape function's) count.
  const Type want = Type::Tensor(DType::kI64, {static_cast<int64_t>(rows->size()), 3});
  if (out_t.size() != 1 || out_t[0] != want) {
    return NmsKernelError(kOp, absl::InvalidArgumentError(absl::StrFormat(
                                   "selected %d boxes but the output is %s", rows->size(),
                                   out_t.empty() ? std::string("missing") : out_t[0].ToString())));
  }
  Tensor out = shape_rules::ZerosOf(want);
  for (size_t r = 0; r < rows->size(); ++r) {
    for (int k = 0; k < 3; ++k) out.SetInt64(static_cast<int64_t>(r) * 3 + k, (*rows)[r][k]);
  }
  return std::vector<Tensor>{std::move(out)};
}

KernelResult NmsCountKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                            absl::Span<const Type>) {
  constexpr absl::string_view kOp = "non_max_suppression_count";
  absl::StatusOr<NmsProblem> p = NmsProblemFromTensors(in, attrs);
  if (!p.ok()) return NmsKernelError(kOp, p.status());
  absl::StatusOr<std::vector<NmsRow>> rows = SelectBoxes(*p);
  if (!rows.ok()) return NmsKernelError(kOp, rows.status());
  return std::vector<Tensor>{
      Tensor::FromInt64s(DType::kI64, {}, {static_cast<int64_t>(rows->size())})};
}

void NmsAttrs(OpDefBuilder& op) {
  op.Attr("center_point_box", AttrType::kInt, int64_t{0})
      .Attr("has_score_threshold", AttrType::kBool, true);
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

  // non_max_suppression's shape counter: same inputs, runs where the op runs; its rule only
  // validates types, so every mask is `shape` and nothing is copied to run it.
  OpDefBuilder nms_count = b.Register("non_max_suppression_count");
  nms_count.Input("boxes", InputDep::kShape)
      .Input("scores", InputDep::kShape)
      .Input("max_output_boxes_per_class", InputDep::kShape)
      .Input("iou_threshold", InputDep::kShape)
      .Input("score_threshold", InputDep::kShape)
      .Pattern(FusionPattern::kOpaque)
      .Doc("the number of boxes non_max_suppression selects, as an i64 scalar (its shape "
           "counter)")
      .Rule(NmsCountRule)
      .Reference(NmsCountKernel);
  NmsAttrs(nms_count);
  OpDefBuilder nms = b.Register("non_max_suppression");
  nms.Input("boxes", InputDep::kShapeAndValue)
      .Input("scores", InputDep::kShapeAndValue)
      .Input("max_output_boxes_per_class", InputDep::kValue)
      .Input("iou_threshold", InputDep::kValue)
      .Input("score_threshold", InputDep::kValue)
      .Pattern(FusionPattern::kOpaque)
      .DataDependentOutputShape("non_max_suppression_count")
      .Doc("ONNX NonMaxSuppression: i64[num_selected, 3] rows (batch, class, box)")
      .Rule(NmsRule)
      .Reference(NmsKernel);
  NmsAttrs(nms);
}

}  // namespace hetpass
