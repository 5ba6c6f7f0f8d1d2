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
// Identity needs nothing here: it passes any value through (onnx_convert_elementwise.cc).
//
// Local typing (ImportContext::BuiltinOp) follows infer-types' rule for builtins in brief: a
// sequence's element type is the join of what goes in; infer-types gives the final types.
#include "frontend/onnx_converters.h"

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
  node->set_loc(Location{0, 0, current_ ? current_->name() : ""});
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
  });
}

}  // namespace hetpass::onnx_frontend
