// ONNX converters for sequence and optional values: each op maps onto one VM builtin
// (ir/builtins.def), so no tensor data moves; only positions are read, on the host.
//
//   SequenceConstruct(t...)        -> seq.construct(t...)
//   SequenceEmpty                  -> seq.empty : seq<?>   (ONNX gives a dtype but no rank, so the
//                                     element type is left open; the first insert fixes it)
//   SequenceInsert(s, t[, pos])    -> seq.insert        SequenceAt(s, pos) -> seq.at
//   SequenceErase(s[, pos])        -> seq.erase         SequenceLength(s)  -> seq.length
//   Optional([x]) {type}           -> opt.some(x), or opt.none : opt<type> without an input
//   OptionalHasElement(x)          -> opt.has(x) on an optional; on a plain tensor or sequence
//                                     (always present) the constant true; without an input false
//   OptionalGetElement(x)          -> opt.get(x) on an optional, x itself otherwise
//   ConcatFromSequence(s) {axis, new_axis}
//                                  -> the first element (expand_dims'd with new_axis), then a
//                                     loop over the rest concatenating each along axis
//   SplitToSequence(x[, split]) {axis, keepdims}
//                                  -> a loop appending one part per trip: without split, take(x,
//                                     i) along axis (expand_dims'd back with keepdims); with a
//                                     split, dyn.strided_slice from a carried offset to offset +
//                                     length (a scalar split: that length each time, the last
//                                     part shorter; a 1-D split: its i-th entry)
// Identity needs nothing here: it passes any value through (onnx_convert_elementwise.cc).
//
// Local typing (ImportContext::BuiltinOp) follows infer-types' rule for builtins in brief: a
// sequence's element type is the join of what goes in; infer-types gives the final types.
#include "frontend/onnx_converters.h"

#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {

absl::StatusOr<Value*> ImportContext::BuiltinOp(Builtin b, std::vector<Value*> operands,
                                                Type declared) {
  auto node = std::make_unique<Node>(NodeKind::kBuiltin);
  node->set_builtin(b);
  for (Value* v : operands) node->AddOperand(v);
  node->set_loc(NamedLocation(current_ ? current_->name() : ""));
  Value* r = node->AddResult(declared);
  block()->Append(std::move(node));
  auto type = [&](int i) { return TypeOf(operands[i]); };
  auto join = [](const Type& a, const Type& b) -> Type {
    if (a.is_unset()) return b;
    std::optional<Type> j = JoinTypes(a, b);
    return j ? *std::move(j) : Type();
  };
  Type t;
  switch (b) {
    case Builtin::kSeqConstruct: {
      Type elem;
      for (size_t i = 0; i < operands.size(); ++i) elem = join(elem, type(i));
      t = Type::Sequence(elem);
      break;
    }
    case Builtin::kSeqEmpty:
    case Builtin::kOptNone:
      t = declared;
      break;
    case Builtin::kSeqInsert:
      if (type(0).is_sequence()) t = Type::Sequence(join(type(0).element(), type(1)));
      break;
    case Builtin::kSeqAt:
    case Builtin::kOptGet:
      if (type(0).is_sequence() || type(0).is_optional()) t = type(0).element();
      break;
    case Builtin::kSeqErase:
      t = type(0);
      break;
    case Builtin::kSeqLength:
      t = Type::Tensor(DType::kI64, {});
      break;
    case Builtin::kOptHas:
      t = Type::Tensor(DType::kBool, {});
      break;
    case Builtin::kOptSome:
      t = Type::Optional(type(0));
      break;
  }
  SetLocalType(r, t);
  return r;
}

namespace {

absl::StatusOr<Value*> NeedSequence(ImportContext& ctx, const Ins& in, size_t i) {
  ASSIGN_OR_RETURN(Value * s, Need(ctx, in, i));
  const Type t = ctx.TypeOf(s);
  if (!t.is_unset() && !t.is_sequence()) {
    return ctx.Error(absl::StrCat("input ", i, " must be a sequence, got ", t.ToString()));
  }
  return s;
}

Outs SequenceConstruct(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  if (in.empty()) return ctx.Error("takes at least one tensor");
  for (size_t i = 0; i < in.size(); ++i) RETURN_IF_ERROR(Need(ctx, in, i).status());
  return One(ctx.BuiltinOp(Builtin::kSeqConstruct, in));
}

Outs SequenceEmpty(ImportContext& ctx, const onnx::NodeProto&, const Ins&) {
  return One(ctx.BuiltinOp(Builtin::kSeqEmpty, {}, Type::Sequence(Type())));
}

Outs SequenceInsert(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, NeedSequence(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * t, Need(ctx, in, 1));
  std::vector<Value*> operands{s, t};
  if (Value* pos = In(in, 2)) operands.push_back(pos);
  return One(ctx.BuiltinOp(Builtin::kSeqInsert, std::move(operands)));
}

Outs SequenceAt(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, NeedSequence(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * pos, Need(ctx, in, 1));
  return One(ctx.BuiltinOp(Builtin::kSeqAt, {s, pos}));
}

Outs SequenceErase(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, NeedSequence(ctx, in, 0));
  std::vector<Value*> operands{s};
  if (Value* pos = In(in, 1)) operands.push_back(pos);
  return One(ctx.BuiltinOp(Builtin::kSeqErase, std::move(operands)));
}

Outs SequenceLength(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, NeedSequence(ctx, in, 0));
  return One(ctx.BuiltinOp(Builtin::kSeqLength, {s}));
}

// A loop under construction: `loop(trips, true, init...)` appended to ctx's block, its body
// the current block until End() (which yields `cond` and the next carried values).
class LoopBuilder {
 public:
  LoopBuilder(ImportContext& ctx, Value* trips, const std::vector<Value*>& init) : ctx_(ctx) {
    Value* go = ctx.Const(Tensor::Scalar(DType::kBool, 1));
    auto n = std::make_unique<Node>(NodeKind::kLoop);
    n->AddOperand(trips);
    n->AddOperand(go);
    for (Value* v : init) n->AddOperand(v);
    n->set_loc(NamedLocation(ctx.current().name()));
    outer_ = ctx.block();
    node_ = outer_->Append(std::move(n));
    Block* body = node_->region(0);
    iter_ = body->AddParam(Type(), "i");
    ctx.SetLocalType(iter_, Type::Tensor(DType::kI64, {}));
    cond_ = body->AddParam(Type(), "cond");
    ctx.SetLocalType(cond_, Type::Tensor(DType::kBool, {}));
    for (Value* v : init) {
      carried_.push_back(body->AddParam(Type(), ""));
      ctx.SetLocalType(carried_.back(), Open(ctx.TypeOf(v)));
    }
    ctx.set_block(body);
  }
  ~LoopBuilder() { ctx_.set_block(outer_); }

  Value* iter() const { return iter_; }
  Value* carried(int k) const { return carried_[k]; }

  // Closes the body; the loop's results (the final carried values).
  std::vector<Value*> End(const std::vector<Value*>& next) {
    std::vector<Value*> yields{cond_};
    yields.insert(yields.end(), next.begin(), next.end());
    node_->region(0)->set_results(yields);
    ctx_.set_block(outer_);
    std::vector<Value*> results;
    for (Value* v : next) {
      results.push_back(node_->AddResult());
      ctx_.SetLocalType(results.back(), Open(ctx_.TypeOf(v)));
    }
    return results;
  }

 private:
  // The local type across trips: dims may change.
  static Type Open(const Type& t) {
    if (!t.is_tensor()) return t.is_sequence() ? Type::Sequence(Type()) : Type();
    return Type::Tensor(t.dtype(), std::vector<DimExpr>(t.rank(), DimExpr::Unknown()));
  }

  ImportContext& ctx_;
  Block* outer_ = nullptr;
  Node* node_ = nullptr;
  Value* iter_ = nullptr;
  Value* cond_ = nullptr;
  std::vector<Value*> carried_;
};

Value* I64Scalar(ImportContext& ctx, int64_t v) { return ctx.Const(Tensor::FromInt64s(DType::kI64, {}, {v})); }

Outs ConcatFromSequence(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * s, NeedSequence(ctx, in, 0));
  const int64_t axis = IntAttr(n, "axis", 0);
  const bool new_axis = IntAttr(n, "new_axis", 0) != 0;
  auto element = [&](Value* pos) -> absl::StatusOr<Value*> {
    ASSIGN_OR_RETURN(Value * x, ctx.BuiltinOp(Builtin::kSeqAt, {s, pos}));
    if (!new_axis) return x;
    return ctx.Op("expand_dims", {x}, {{"axis", axis}});
  };
  ASSIGN_OR_RETURN(Value * first, element(I64Scalar(ctx, 0)));
  Value* one = I64Scalar(ctx, 1);
  ASSIGN_OR_RETURN(Value * len, ctx.BuiltinOp(Builtin::kSeqLength, {s}));
  ASSIGN_OR_RETURN(Value * trips, ctx.Op("subtract", {len, one}));
  LoopBuilder loop(ctx, trips, {first});
  ASSIGN_OR_RETURN(Value * k, ctx.Op("add", {loop.iter(), one}));
  ASSIGN_OR_RETURN(Value * x, element(k));
  ASSIGN_OR_RETURN(Value * joined, ctx.Op("concatenate", {loop.carried(0), x}, {{"axis", axis}}));
  return loop.End({joined});
}

Outs SplitToSequence(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  int64_t axis = IntAttr(n, "axis", 0);
  if (axis < -rank || axis >= rank) return ctx.Error(absl::StrCat("axis ", axis, " out of range for rank ", rank));
  if (axis < 0) axis += rank;
  const bool keepdims = IntAttr(n, "keepdims", 1) != 0;
  ASSIGN_OR_RETURN(Value * shape, ctx.Op("shape_of", {x}));
  ASSIGN_OR_RETURN(Value * dim, ctx.Op("take", {shape, I64Scalar(ctx, axis)}, {{"axis", int64_t{0}}}));
  ASSIGN_OR_RETURN(Value * empty, ctx.BuiltinOp(Builtin::kSeqEmpty, {}, Type::Sequence(Type())));
  Value* split = In(in, 1);
  if (split == nullptr) {  // parts of length 1, the axis dropped unless keepdims
    LoopBuilder loop(ctx, dim, {empty});
    ASSIGN_OR_RETURN(Value * part, ctx.Op("take", {x, loop.iter()}, {{"axis", axis}}));
    if (keepdims) {
      ASSIGN_OR_RETURN(part, ctx.Op("expand_dims", {part}, {{"axis", axis}}));
    }
    ASSIGN_OR_RETURN(Value * next, ctx.BuiltinOp(Builtin::kSeqInsert, {loop.carried(0), part}));
    return loop.End({next});
  }
  const Type st = ctx.TypeOf(split);
  if (!st.is_tensor() || st.rank() > 1) return ctx.Error("split must be a scalar or 1-D");
  if (ctx.DTypeOf(split) != DType::kI64) {
    ASSIGN_OR_RETURN(split, ctx.Op("cast", {split}, {{"dtype", DType::kI64}}));
  }
  Value* trips = nullptr;
  if (st.rank() == 1) {
    ASSIGN_OR_RETURN(Value * split_shape, ctx.Op("shape_of", {split}));
    ASSIGN_OR_RETURN(trips, ctx.Op("take", {split_shape, I64Scalar(ctx, 0)}, {{"axis", int64_t{0}}}));
  } else {  // ceil(dim / split) parts: needs both known at import
    const std::optional<Tensor> c = ctx.ConstValue(split);
    const Type xt = ctx.TypeOf(x);
    if (!c || !xt.is_tensor() || !xt.shape()[axis].is_constant()) {
      return ctx.Unimplemented("a scalar split needs a constant split and a static axis dim");
    }
    const int64_t size = static_cast<int64_t>(c->GetDouble(0));
    if (size <= 0) return ctx.Error(absl::StrCat("split must be positive, got ", size));
    trips = I64Scalar(ctx, (xt.shape()[axis].constant() + size - 1) / size);
  }
  LoopBuilder loop(ctx, trips, {empty, I64Scalar(ctx, 0)});
  Value* length = split;
  if (st.rank() == 1) {
    ASSIGN_OR_RETURN(length, ctx.Op("take", {split, loop.iter()}, {{"axis", int64_t{0}}}));
  }
  Value* offset = loop.carried(1);
  ASSIGN_OR_RETURN(Value * end, ctx.Op("add", {offset, length}));
  // dyn.strided_slice takes leading-axes begin/end/strides: zeros / INT64_MAX before the axis.
  auto leading = [&](Value* at, int64_t fill) -> absl::StatusOr<Value*> {
    ASSIGN_OR_RETURN(Value * v, ctx.Op("expand_dims", {at}, {{"axis", int64_t{0}}}));
    if (axis == 0) return v;
    Value* lead = ctx.Const(Tensor::FromInt64s(DType::kI64, {axis}, std::vector<int64_t>(axis, fill)));
    return ctx.Op("concatenate", {lead, v}, {{"axis", int64_t{0}}});
  };
  ASSIGN_OR_RETURN(Value * b, leading(offset, 0));
  ASSIGN_OR_RETURN(Value * e, leading(end, std::numeric_limits<int64_t>::max()));
  Value* strides = ctx.Const(Tensor::FromInt64s(DType::kI64, {axis + 1}, std::vector<int64_t>(axis + 1, 1)));
  ASSIGN_OR_RETURN(Value * part, ctx.Op("dyn.strided_slice", {x, b, e, strides}));
  ASSIGN_OR_RETURN(Value * next, ctx.BuiltinOp(Builtin::kSeqInsert, {loop.carried(0), part}));
  return loop.End({next, end});
}

Outs Optional(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  if (Value* x = In(in, 0)) return One(ctx.BuiltinOp(Builtin::kOptSome, {x}));
  const onnx::AttributeProto* type = FindAttr(n, "type");
  if (type == nullptr || !type->has_tp()) {
    return ctx.Error("an Optional without an input needs its 'type' attribute");
  }
  ASSIGN_OR_RETURN(Type t, TypeFromOnnx(type->tp()));
  return One(ctx.BuiltinOp(Builtin::kOptNone, {}, Type::Optional(std::move(t))));
}

Outs OptionalHasElement(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  Value* x = In(in, 0);
  if (x != nullptr && ctx.TypeOf(x).is_optional()) return One(ctx.BuiltinOp(Builtin::kOptHas, {x}));
  return One(ctx.Const(Tensor::Scalar(DType::kBool, x != nullptr ? 1 : 0)));
}

Outs OptionalGetElement(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (ctx.TypeOf(x).is_optional()) return One(ctx.BuiltinOp(Builtin::kOptGet, {x}));
  return std::vector<Value*>{x};
}

}  // namespace

void AddContainerConverters(ConverterTable& table) {
  table.insert(table.end(), {
      {"SequenceConstruct", SequenceConstruct},
      {"SequenceEmpty", SequenceEmpty},
      {"SequenceInsert", SequenceInsert},
      {"SequenceAt", SequenceAt},
      {"SequenceErase", SequenceErase},
      {"SequenceLength", SequenceLength},
      {"Optional", Optional},
      {"OptionalHasElement", OptionalHasElement},
      {"OptionalGetElement", OptionalGetElement},
      {"ConcatFromSequence", ConcatFromSequence},
      {"SplitToSequence", SplitToSequence},
  });
}

}  // namespace hetpass::onnx_frontend
