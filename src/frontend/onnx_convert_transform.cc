// ONNX converters of the shape-transformation family: Reshape, Concat, Unsqueeze, Squeeze,
// Flatten, Transpose, Expand and Tile, each a static registry op when the shape-deciding input is
// constant and its dyn.* form otherwise; DepthToSpace and SpaceToDepth (reshape, transpose,
// reshape, with the shapes computed from shape_of) and OneHot (an iota compared). The registry side is shape_funcs/transform.cc; the
// conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

Outs Reshape(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, 1));
  auto shape = ConstInts(ctx, s);
  const bool allowzero = IntAttr(n, "allowzero", 0) != 0;
  if (allowzero && (!shape || std::count(shape->begin(), shape->end(), 0) > 0)) {
    // A 0 is a zero dim: dyn.reshape's allowzero (a constant target still types statically).
    return One(ctx.Op("dyn.reshape", {x, s}, {{"allowzero", true}}));
  }
  // ONNX 0 (copy) and -1 (infer) are the registry's reshape semantics too.
  if (shape) return One(ctx.Op("reshape", {x}, {{"newshape", *shape}}));
  // The IR's tensors have a static rank: a target shape whose length is known only at run time
  // (a rank-dynamic reshape, e.g. built from Size and Concat) is not representable yet.
  const Type st = ctx.TypeOf(s);
  if (st.is_tensor() && (st.rank() != 1 || !st.shape()[0].is_constant())) {
    return ctx.Unimplemented(absl::StrCat("a target shape of run-time length ", st.ToString(),
                                          " (the output rank would be dynamic)"));
  }
  return One(ctx.Op("dyn.reshape", {x, s}));
}

Outs Concat(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  std::vector<Value*> parts;
  for (Value* v : in) {
    if (v != nullptr) parts.push_back(v);
  }
  if (parts.empty()) return ctx.Error("needs at least one input");
  if (parts.size() == 1) return parts;
  return One(ctx.Op("concatenate", parts, {{"axis", IntAttr(n, "axis", 0)}}));
}

// The static length of a computed (non-constant) axes input of Squeeze-13/Unsqueeze-13: it fixes
// the output rank of dyn.squeeze/dyn.unsqueeze, so a length known only at run time (a
// rank-dynamic result) is not representable yet.
absl::StatusOr<int64_t> ComputedAxesLength(ImportContext& ctx, const Value* axes) {
  const Type t = ctx.TypeOf(axes);
  if (t.is_tensor() && t.rank() != 1) {
    return ctx.Error(absl::StrFormat("axes must be 1-D, got %s", t.ToString()));
  }
  if (!t.is_tensor() || !t.shape()[0].is_constant()) {
    return ctx.Unimplemented(absl::StrCat("computed axes of run-time length ",
                                          t.is_tensor() ? t.ToString() : "?",
                                          " (the output rank would be dynamic)"));
  }
  return t.shape()[0].constant();
}

// Unsqueeze: axes (output positions, any order) an attribute below opset 13, an input from 13.
// Constant axes give a chain of expand_dims, computed ones dyn.unsqueeze (axes read on the
// host at run time, x's shape only).
Outs Unsqueeze(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (Value* av = In(in, 1); ctx.opset() >= 13 && av != nullptr && !ConstInts(ctx, av)) {
    ASSIGN_OR_RETURN(int64_t len, ComputedAxesLength(ctx, av));
    if (len == 0) return ctx.Error("axes is empty");
    return One(ctx.Op("dyn.unsqueeze", {x, av}));
  }
  ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, n, in, 13));
  if (!axes || axes->empty()) return ctx.Error("axes is required");
  // Normalised against the output rank and checked here: the expand_dims chain below would
  // accept a repeated axis silently (ONNX forbids it).
  int rank = ctx.RankOf(x);
  if (std::any_of(axes->begin(), axes->end(), [](int64_t a) { return a < 0; })) {
    ASSIGN_OR_RETURN(rank, NeedRank(ctx, x));
  }
  const int64_t out_rank = rank + static_cast<int64_t>(axes->size());
  std::vector<int64_t> sorted;
  for (int64_t a : *axes) {
    const int64_t norm = a < 0 ? a + out_rank : a;
    if (norm < 0 || (rank >= 0 && norm >= out_rank)) {
      return ctx.Error(absl::StrFormat("axis %d is out of range for output rank %d", a, out_rank));
    }
    sorted.push_back(norm);
  }
  std::sort(sorted.begin(), sorted.end());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    return ctx.Error(absl::StrFormat("axis %d is given twice", *dup));
  }
  // Inserting in ascending order of output position is exact.
  for (int64_t a : sorted) {
    ASSIGN_OR_RETURN(x, ctx.Op("expand_dims", {x}, {{"axis", a}}));
  }
  return std::vector<Value*>{x};
}

// Squeeze: axes an attribute below opset 13, an input from 13. Absent or empty axes remove
// every statically-1 dim (squeeze with no axis); constant axes give squeeze, computed ones
// dyn.squeeze (axes read on the host at run time, x's shape only).
Outs Squeeze(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  std::vector<int64_t> a;  // empty: every statically-1 dim
  if (Value* av = In(in, 1); ctx.opset() >= 13 && av != nullptr && !ConstInts(ctx, av)) {
    ASSIGN_OR_RETURN(int64_t len, ComputedAxesLength(ctx, av));
    if (len > 0) return One(ctx.Op("dyn.squeeze", {x, av}));
    // A computed axes input that is always empty reads as absent, as an empty constant does.
  } else {
    ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, n, in, 13));
    if (axes) a = *axes;
    if (std::any_of(a.begin(), a.end(), [](int64_t v) { return v < 0; })) {
      ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
      for (int64_t& v : a) v = NormAxis(v, rank);
    }
  }
  return One(ctx.Op("squeeze", {x}, {{"axis", a}}));
}

Outs Flatten(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", 1), rank);
  if (axis < 0 || axis > rank) return ctx.Error(absl::StrFormat("axis %d out of range", axis));
  const Type t = ctx.TypeOf(x);
  auto static_prod = [&](int64_t b, int64_t e) -> std::optional<int64_t> {
    int64_t p = 1;
    for (int64_t i = b; i < e; ++i) {
      if (!t.shape()[i].is_constant()) return std::nullopt;
      // On overflow, leave the product to the reshape rule, which reports it.
      if (__builtin_mul_overflow(p, t.shape()[i].constant(), &p)) return std::nullopt;
    }
    return p;
  };
  std::vector<int64_t> newshape;
  if (axis == 0) {
    newshape = {1, -1};
  } else if (axis == 1) {
    newshape = {0, -1};
  } else if (auto tail = static_prod(axis, rank)) {
    newshape = {-1, *tail};
  } else if (auto head = static_prod(0, axis)) {
    newshape = {*head, -1};
  } else {
    // Run-time dims on both sides: [prod(shape[:axis]), prod(shape[axis:])] computed on the
    // host from the shape alone (shape_of is metadata: no copy), then dyn.reshape.
    ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
    auto part = [&](int64_t b, int64_t e) -> absl::StatusOr<Value*> {
      ASSIGN_OR_RETURN(Value * piece, ctx.Op("strided_slice", {s},
                                             {{"begin", std::vector<int64_t>{b}},
                                              {"end", std::vector<int64_t>{e}}}));
      return ctx.Op("prod", {piece}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}});
    };
    ASSIGN_OR_RETURN(Value * rows, part(0, axis));
    ASSIGN_OR_RETURN(Value * cols, part(axis, rank));
    ASSIGN_OR_RETURN(Value * target, ctx.Op("concatenate", {rows, cols}, {{"axis", int64_t{0}}}));
    return One(ctx.Op("dyn.reshape", {x, target}));
  }
  return One(ctx.Op("reshape", {x}, {{"newshape", newshape}}));
}

Outs Transpose(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  auto perm = IntsAttr(n, "perm");
  return One(ctx.Op("transpose", {x}, {{"axes", perm ? *perm : std::vector<int64_t>{}}}));
}

// ONNX Expand broadcasts both ways: out = broadcast(x.shape, shape), so a target dim of 1
// keeps the input's dim. broadcast_to is one-way; the two agree when no target 1 meets an
// input dim that may be larger. Otherwise dyn.broadcast_to, which broadcasts both ways, gets
// the target as it is (left-padded with ones to the input's rank): no host arithmetic on the
// target, so a symbolic target keeps its symbols and a 0 dim broadcasts as ONNX says.
Outs Expand(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, 1));
  const Type tx = ctx.TypeOf(x);
  auto shape = ConstInts(ctx, s);
  if (shape && tx.is_tensor()) {
    const int64_t k = static_cast<int64_t>(shape->size()), r = tx.rank();
    bool one_way = true;
    for (int64_t i = 0; i < std::min(k, r); ++i) {
      const DimExpr& d = tx.shape()[r - 1 - i];
      if ((*shape)[k - 1 - i] == 1 && !(d.is_constant() && d.constant() == 1)) one_way = false;
    }
    if (one_way && k >= r) return One(ctx.Op("broadcast_to", {x}, {{"shape", *shape}}));
  }
  const Type ts = ctx.TypeOf(s);
  if (!tx.is_tensor() || !ts.is_tensor() || ts.rank() != 1 || !ts.shape()[0].is_constant()) {
    return ctx.Unimplemented("needs the input's rank and the length of shape");
  }
  const int64_t k = ts.shape()[0].constant(), r = tx.rank();
  if (k < r) {
    Value* ones = ctx.Const(Tensor::FromInt64s(ctx.DTypeOf(s), {r - k}, std::vector<int64_t>(r - k, 1)));
    ASSIGN_OR_RETURN(s, ctx.Op("concatenate", {ones, s}, {{"axis", int64_t{0}}}));
  }
  return One(ctx.Op("dyn.broadcast_to", {x, s}));
}

Outs Tile(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * r, Need(ctx, in, 1));
  if (auto reps = ConstInts(ctx, r)) return One(ctx.Op("tile", {x}, {{"reps", *reps}}));
  return One(ctx.Op("dyn.tile", {x, r}));
}

// A block's side, so that b * b cannot overflow (and no real model comes near it).
constexpr int64_t kMaxBlocksize = 1 << 20;

// The dims of a rank-`rank` x as i64 scalars, taken from its shape (symbolic dims stay
// symbolic through the arithmetic below, so the dyn.reshape folds to a static one).
absl::StatusOr<std::vector<Value*>> DimValues(ImportContext& ctx, Value* x, int rank) {
  ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {x}));
  std::vector<Value*> dims;
  for (int64_t i = 0; i < rank; ++i) {
    ASSIGN_OR_RETURN(Value * d, ctx.Op("take", {s, ctx.Const(Tensor::Scalar(DType::kI64, i))},
                                       {{"axis", int64_t{0}}, {"mode", std::string("fast")}}));
    dims.push_back(d);
  }
  return dims;
}

// An i64 shape vector from scalar dims.
absl::StatusOr<Value*> ShapeOfDims(ImportContext& ctx, const std::vector<Value*>& dims) {
  std::vector<Value*> parts;
  for (Value* d : dims) {
    ASSIGN_OR_RETURN(Value * p, ctx.Op("expand_dims", {d}, {{"axis", int64_t{0}}}));
    parts.push_back(p);
  }
  return ctx.Op("concatenate", parts, {{"axis", int64_t{0}}});
}

absl::StatusOr<Value*> ReshapeTransposeReshape(ImportContext& ctx, Value* x,
                                               const std::vector<Value*>& split,
                                               std::vector<int64_t> perm,
                                               const std::vector<Value*>& merged) {
  ASSIGN_OR_RETURN(Value * s1, ShapeOfDims(ctx, split));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("dyn.reshape", {x, s1}));
  ASSIGN_OR_RETURN(y, ctx.Op("transpose", {y}, {{"axes", std::move(perm)}}));
  ASSIGN_OR_RETURN(Value * s2, ShapeOfDims(ctx, merged));
  return ctx.Op("dyn.reshape", {y, s2});
}

// The blocksize of a DepthToSpace / SpaceToDepth over a 4-D x, checked.
absl::StatusOr<int64_t> CheckedBlocksize(ImportContext& ctx, const onnx::NodeProto& n, Value* x) {
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 4) return ctx.Error(absl::StrFormat("input must be 4-D, got rank %d", rank));
  const int64_t b = IntAttr(n, "blocksize", 0);
  if (b < 1 || b > kMaxBlocksize) {
    return ctx.Error(absl::StrFormat("blocksize must be in [1, %d], got %d", kMaxBlocksize, b));
  }
  return b;
}

// DepthToSpace: [N, C, H, W] -> [N, C / b^2, H * b, W * b] by reshape, transpose, reshape; the
// DCR mode takes the block from the outer channel bits, CRD from the inner ones.
Outs DepthToSpace(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(const int64_t b, CheckedBlocksize(ctx, n, x));
  const std::string mode = StringAttr(n, "mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.Error("mode must be DCR or CRD, got '" + mode + "'");
  ASSIGN_OR_RETURN(std::vector<Value*> d, DimValues(ctx, x, 4));
  Value* bv = ctx.Const(Tensor::Scalar(DType::kI64, b));
  ASSIGN_OR_RETURN(Value * c, ctx.Op("divide", {d[1], ctx.Const(Tensor::Scalar(DType::kI64, b * b))}));
  ASSIGN_OR_RETURN(Value * h, ctx.Op("multiply", {d[2], bv}));
  ASSIGN_OR_RETURN(Value * w, ctx.Op("multiply", {d[3], bv}));
  if (mode == "DCR") {
    return One(ReshapeTransposeReshape(ctx, x, {d[0], bv, bv, c, d[2], d[3]}, {0, 3, 4, 1, 5, 2},
                                       {d[0], c, h, w}));
  }
  return One(ReshapeTransposeReshape(ctx, x, {d[0], c, bv, bv, d[2], d[3]}, {0, 1, 4, 2, 5, 3},
                                     {d[0], c, h, w}));
}

// SpaceToDepth: [N, C, H, W] -> [N, C * b^2, H / b, W / b], DepthToSpace-DCR's inverse.
Outs SpaceToDepth(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(const int64_t b, CheckedBlocksize(ctx, n, x));
  ASSIGN_OR_RETURN(std::vector<Value*> d, DimValues(ctx, x, 4));
  Value* bv = ctx.Const(Tensor::Scalar(DType::kI64, b));
  ASSIGN_OR_RETURN(Value * c, ctx.Op("multiply", {d[1], ctx.Const(Tensor::Scalar(DType::kI64, b * b))}));
  ASSIGN_OR_RETURN(Value * h, ctx.Op("divide", {d[2], bv}));
  ASSIGN_OR_RETURN(Value * w, ctx.Op("divide", {d[3], bv}));
  return One(ReshapeTransposeReshape(ctx, x, {d[0], d[1], h, bv, w, bv}, {0, 3, 5, 1, 2, 4},
                                     {d[0], c, h, w}));
}

// OneHot: values[1] where the index (negative: counted back from depth) equals the position
// along the new `axis`, values[0] elsewhere; depth may be computed (arange on the host).
Outs OneHot(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * idx, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * depth, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * values, Need(ctx, in, 2));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, idx));
  const int64_t axis = NormAxis(IntAttr(n, "axis", -1), rank + 1);
  if (axis < 0 || axis > rank) return ctx.Error(absl::StrFormat("axis out of range for rank %d", rank + 1));
  ASSIGN_OR_RETURN(idx, CastTo(ctx, idx, DType::kI64));
  ASSIGN_OR_RETURN(depth, CastTo(ctx, depth, DType::kI64));
  ASSIGN_OR_RETURN(depth, ctx.Op("reshape", {depth}, {{"newshape", std::vector<int64_t>{}}}));
  ASSIGN_OR_RETURN(Value * neg, ctx.Op("less", {idx, ctx.Const(Tensor::Scalar(DType::kI64, 0))}));
  ASSIGN_OR_RETURN(Value * wrapped, ctx.Op("add", {idx, depth}));
  ASSIGN_OR_RETURN(idx, ctx.Op("where", {neg, wrapped, idx}));
  ASSIGN_OR_RETURN(idx, ctx.Op("expand_dims", {idx}, {{"axis", axis}}));
  ASSIGN_OR_RETURN(Value * iota,
                   ctx.Op("arange", {ctx.Const(Tensor::Scalar(DType::kI64, 0)), depth,
                                     ctx.Const(Tensor::Scalar(DType::kI64, 1))},
                          {{"dtype", DType::kI64}}));
  std::vector<int64_t> column = {-1};  // depth along `axis`, unit dims after it
  for (int64_t d = axis + 1; d <= rank; ++d) column.push_back(1);
  ASSIGN_OR_RETURN(iota, ctx.Op("reshape", {iota}, {{"newshape", column}}));
  ASSIGN_OR_RETURN(Value * hit, ctx.Op("equal", {idx, iota}));
  const Attrs first{{"axis", int64_t{0}}, {"mode", std::string("fast")}};
  ASSIGN_OR_RETURN(Value * off, ctx.Op("take", {values, ctx.Const(Tensor::Scalar(DType::kI64, 0))}, first));
  ASSIGN_OR_RETURN(Value * on, ctx.Op("take", {values, ctx.Const(Tensor::Scalar(DType::kI64, 1))}, first));
  return One(ctx.Op("where", {hit, on, off}));
}

}  // namespace

void AddTransformConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Concat", Concat},
      {"DepthToSpace", DepthToSpace},
      {"Expand", Expand},
      {"Flatten", Flatten},
      {"OneHot", OneHot},
      {"Reshape", Reshape},
      {"SpaceToDepth", SpaceToDepth},
      {"Squeeze", Squeeze},
      {"Tile", Tile},
      {"Transpose", Transpose},
      {"Unsqueeze", Unsqueeze},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
