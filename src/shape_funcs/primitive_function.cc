// Derived masks and composed shape functions of primitive functions (see the header for the
// derivation rules). Both walk the body once: the mask backwards from the results, the shape
// function forwards in program order, skipping bindings whose results nothing needs.
//
// Read recording (PrimitiveShapeRunOptions::reads): every inner value remembers which
// parameter it is, if any (a parameter itself, or a tuple field / get_item of one). What reaches
// the composed function's inputs does so through one of four doors, and each records a read of
// the parameter behind the operand it opens:
//   - an inner shape rule: what its ShapeContext says the rule asked for (accessed());
//   - a host reference kernel computing a needed value: shape+value of every operand (shape
//     only for a shape query such as shape_of, whose contents are its operand's dims);
//   - a symbolic-value rule: what its (unrestricted) context says it asked for;
//   - a result that is a parameter: its shape.
// Inner values computed from parameters need no tracking of their own: their dims and
// contents were made by the rules and kernels above, which recorded what they read.
#include "passes/shape_funcs/primitive_function.h"

#include <deque>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/symbolic_values.h"

namespace hetpass {
namespace {

using NeedMap = absl::flat_hash_map<const Value*, InputDep>;

// What the composed shape function needs of every value of `f` (absent: none).
NeedMap DeriveNeeds(const Function& f) {
  NeedMap need;
  auto add = [&need](const Value* v, InputDep d) {
    if (d == InputDep::kNone) return;
    InputDep& slot = need.try_emplace(v, InputDep::kNone).first->second;
    slot = JoinDeps(slot, d);
  };
  for (const Value* r : f.body().results()) add(r, InputDep::kShape);
  const auto& nodes = f.body().nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& n = **it;
    InputDep out = InputDep::kNone;
    for (const auto& r : n.results()) {
      auto found = need.find(r.get());
      if (found != need.end()) out = JoinDeps(out, found->second);
    }
    if (out == InputDep::kNone) continue;
    // Computing a value on the host needs the value's shape (its shape rule runs too).
    if (NeedsValue(out)) out = JoinDeps(out, InputDep::kShape);
    switch (n.kind()) {
      case NodeKind::kCall: {
        const OpDef& op = *n.op();
        const InputDep for_value =
            op.role() == OpRole::kShapeQuery ? InputDep::kShape : InputDep::kShapeAndValue;
        for (int i = 0; i < n.num_operands(); ++i) {
          InputDep d = NeedsShape(out) ? op.dep(i) : InputDep::kNone;
          if (NeedsValue(out)) d = JoinDeps(d, for_value);
          add(n.operand(i), d);
        }
        break;
      }
      case NodeKind::kConstant:
        break;
      case NodeKind::kTuple:
      case NodeKind::kGetItem:
        for (const Value* v : n.operands()) add(v, out);
        break;
      case NodeKind::kBuiltin:
      case NodeKind::kInvoke:
      case NodeKind::kIf:
      case NodeKind::kLoop:
        // Never inside a primitive function made by fuse-ops; assume the worst.
        for (const Value* v : n.operands()) add(v, InputDep::kShapeAndValue);
        break;
    }
  }
  return need;
}

InputDep NeedOf(const NeedMap& need, const Value* v) {
  auto it = need.find(v);
  return it == need.end() ? InputDep::kNone : it->second;
}

// ---- The composed shape function --------------------------------------------------------------

struct Known {
  Type type;
  const Tensor* value = nullptr;
  const std::vector<DimExpr>* sym_value = nullptr;
  int param = -1;                 // the parameter this value is, else -1
  std::vector<int> field_params;  // of a tuple: the parameter each field is, else -1
};

// An inner value that is no parameter.
Known Inner(Type type, const Tensor* value = nullptr) {
  Known k;
  k.type = std::move(type);
  k.value = value;
  return k;
}

class Composer {
 public:
  Composer(const Function& f, const PrimitiveShapeRunOptions& options)
      : f_(f),
        options_(options),
        need_(DeriveNeeds(f)),
        reads_(f.body().num_params(), InputDep::kNone) {}

  // What the last Run read of each parameter.
  const std::vector<InputDep>& reads() const { return reads_; }

  absl::StatusOr<std::vector<Type>> Run(std::vector<ShapeInput> inputs) {
    const Block& body = f_.body();
    if (static_cast<int>(inputs.size()) != body.num_params()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("shape function of @%s takes %d inputs, got %d", f_.name(),
                          body.num_params(), inputs.size()));
    }
    for (int i = 0; i < body.num_params(); ++i) {
      RETURN_IF_ERROR(BindParam(*body.param(i), inputs[i]));
    }
    for (const auto& n : body.nodes()) RETURN_IF_ERROR(Visit(*n));
    std::vector<Type> out;
    for (const Value* r : body.results()) {
      Read(r, InputDep::kShape);  // a returned parameter's dims are an output shape
      out.push_back(env_.at(r).type);
    }
    return out;
  }

 private:
  absl::Status BindParam(const Value& p, const ShapeInput& in) {
    const Type& declared = p.type();
    if (!in.type.is_tensor() || !declared.is_tensor() || in.type.dtype() != declared.dtype() ||
        in.type.rank() != declared.rank()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("shape function of @%s: input %d (%%%s) has type %s, expected %s",
                          f_.name(), p.index(), p.name(), in.type.ToString(), declared.ToString()));
    }
    const InputDep mask =
        options_.apply_derived_mask ? NeedOf(need_, &p) : InputDep::kShapeAndValue;
    Known k;
    k.type = in.type;
    k.param = p.index();
    if (mask == InputDep::kNone) {
      // Dtype and rank are metadata of the static type; the dims are not promised.
      k.type =
          Type::Tensor(in.type.dtype(), std::vector<DimExpr>(in.type.rank(), DimExpr::Unknown()));
    }
    if (NeedsValue(mask)) {
      k.value = in.value;
      k.sym_value = in.sym_value;
    }
    env_[&p] = k;
    return absl::OkStatus();
  }

  // Records that `d` of `v` was read: a read of the parameter(s) `v` is.
  void Read(const Value* v, InputDep d) {
    if (d == InputDep::kNone) return;
    const Known& k = env_.at(v);
    auto join = [this, d](int p) {
      if (p >= 0) reads_[p] = JoinDeps(reads_[p], d);
    };
    join(k.param);
    for (int p : k.field_params) join(p);
  }

  // Records what `ctx`'s rule asked of each operand of `n`.
  void ReadOperands(const Node& n, const ShapeContext& ctx) {
    for (int i = 0; i < n.num_operands(); ++i) Read(n.operand(i), ctx.accessed(i));
  }

  absl::Status Error(const Node& n, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("shape function of @", f_.name(), ": ", NodeContext(nullptr, n), message));
  }

  InputDep NeedOfResults(const Node& n) const {
    InputDep out = InputDep::kNone;
    for (const auto& r : n.results()) out = JoinDeps(out, NeedOf(need_, r.get()));
    return out;
  }

  std::vector<ShapeInput> InputsOf(const Node& n) const {
    std::vector<ShapeInput> ins;
    for (const Value* v : n.operands()) {
      const Known& k = env_.at(v);
      ins.push_back(ShapeInput{k.type, k.value, k.sym_value});
    }
    return ins;
  }

  absl::Status Visit(const Node& n) {
    switch (n.kind()) {
      case NodeKind::kConstant:
        env_[n.result(0)] = Inner(n.constant_value().type(), &n.constant_value());
        return absl::OkStatus();
      case NodeKind::kTuple: {
        Known tuple;
        std::vector<Type> fields;
        for (const Value* v : n.operands()) {
          fields.push_back(env_.at(v).type);
          tuple.field_params.push_back(env_.at(v).param);
        }
        tuple.type = Type::Tuple(std::move(fields));
        env_[n.result(0)] = std::move(tuple);
        return absl::OkStatus();
      }
      case NodeKind::kGetItem: {
        const Type& t = env_.at(n.operand(0)).type;
        const int64_t i = n.attrs().GetInt("index");
        if (!t.is_tuple() || i < 0 || i >= static_cast<int64_t>(t.fields().size())) {
          return Error(n, "get_item of a non-tuple or out of range");
        }
        Known field = Inner(t.fields()[i]);
        const std::vector<int>& params = env_.at(n.operand(0)).field_params;
        if (i < static_cast<int64_t>(params.size())) field.param = params[i];
        env_[n.result(0)] = std::move(field);
        return absl::OkStatus();
      }
      case NodeKind::kCall:
        return VisitCall(n);
      case NodeKind::kBuiltin:
      case NodeKind::kInvoke:
      case NodeKind::kIf:
      case NodeKind::kLoop:
        break;
    }
    return absl::UnimplementedError(
        absl::StrCat("shape function of @", f_.name(), ": ", NodeContext(nullptr, n),
                     "bindings of this kind are not supported inside a primitive function"));
  }

  absl::Status VisitCall(const Node& n) {
    const OpDef& op = *n.op();
    const InputDep out_need = NeedOfResults(n);
    if (out_need == InputDep::kNone) {
      // Nothing reads these results' dims or contents (e.g. a fill value): keep dtype and rank.
      for (const auto& r : n.results()) env_[r.get()] = Inner(r->type());
      return absl::OkStatus();
    }
    if (!op.AcceptsInputCount(n.num_operands())) return Error(n, "wrong number of operands");
    for (const Value* v : n.operands()) {
      if (!env_.at(v).type.is_tensor()) return Error(n, "op operands must be tensors");
    }
    ShapeContext ctx(op, n.attrs(), InputsOf(n));
    absl::StatusOr<std::vector<Type>> types = op.shape_rule()(ctx);
    ReadOperands(n, ctx);
    if (!ctx.violations().empty()) {
      return absl::InternalError(
          absl::StrCat("shape function of @", f_.name(), ": ", NodeContext(nullptr, n),
                       "shape rule read beyond its mask: ", absl::StrJoin(ctx.violations(), "; ")));
    }
    if (!types.ok()) return Error(n, types.status().message());
    if (static_cast<int>(types->size()) != n.num_results()) {
      return absl::InternalError(absl::StrCat("shape function of @", f_.name(), ": ",
                                              NodeContext(nullptr, n),
                                              "shape rule returned the wrong number of types"));
    }
    for (int i = 0; i < n.num_results(); ++i) env_[n.result(i)] = Inner((*types)[i]);
    if (NeedsValue(out_need)) RETURN_IF_ERROR(ComputeValues(n, *types));
    return absl::OkStatus();
  }

  // The data of `v` when fully known: its tensor, or its symbolic contents if they are all
  // constants of a static integer tensor (materialized once).
  const Tensor* DataOf(const Value* v) {
    const Known& k = env_.at(v);
    if (k.value != nullptr) return k.value;
    if (k.sym_value == nullptr || !CarriesSymbolicValues(k.type) || !k.type.is_static()) {
      return nullptr;
    }
    std::vector<int64_t> ints;
    for (const DimExpr& d : *k.sym_value) {
      if (!d.is_constant()) return nullptr;
      ints.push_back(d.constant());
    }
    std::vector<int64_t> shape;
    for (const DimExpr& d : k.type.shape()) shape.push_back(d.constant());
    if (static_cast<int64_t>(ints.size()) != k.type.NumElements().constant()) return nullptr;
    tensors_.push_back(Tensor::FromInt64s(k.type.dtype(), std::move(shape), ints));
    return &tensors_.back();
  }

  // Contents of the results of `n`, which a later binding reads as a `value` input.
  absl::Status ComputeValues(const Node& n, const std::vector<Type>& types) {
    const OpDef& op = *n.op();
    bool static_out = true;
    for (const Type& t : types) static_out &= t.is_tensor() && t.is_static();
    if (op.reference() && static_out) {
      std::vector<Tensor> args;
      for (const Value* v : n.operands()) {
        const Tensor* t = DataOf(v);
        if (t == nullptr) break;
        args.push_back(*t);
      }
      if (static_cast<int>(args.size()) == n.num_operands()) {
        // A shape query's kernel reads its operand's metadata only (the role's contract, which
        // DeriveNeeds relies on too), whatever data it was handed.
        const InputDep read =
            op.role() == OpRole::kShapeQuery ? InputDep::kShape : InputDep::kShapeAndValue;
        for (const Value* v : n.operands()) Read(v, read);
        absl::StatusOr<std::vector<Tensor>> out = op.reference()(args, n.attrs(), types);
        if (!out.ok()) return Error(n, out.status().message());
        if (static_cast<int>(out->size()) != n.num_results()) {
          return Error(n, "reference kernel returned the wrong number of results");
        }
        for (int i = 0; i < n.num_results(); ++i) {
          tensors_.push_back(std::move((*out)[i]));
          env_[n.result(i)].value = &tensors_.back();
        }
        return absl::OkStatus();
      }
    }
    if (!op.symbolic_value_rule()) return absl::OkStatus();  // contents stay unknown
    ShapeContext ctx(op, n.attrs(), InputsOf(n), /*enforce_mask=*/false);
    auto values = op.symbolic_value_rule()(ctx);
    ReadOperands(n, ctx);
    if (!values || static_cast<int>(values->size()) != n.num_results()) return absl::OkStatus();
    for (int i = 0; i < n.num_results(); ++i) {
      const Type& t = types[i];
      std::vector<DimExpr>& vals = (*values)[i];
      if (!CarriesSymbolicValues(t)) continue;
      if (static_cast<int64_t>(vals.size()) > kMaxSymbolicElements) continue;
      const DimExpr count = t.NumElements();
      if (count.is_constant() && count.constant() != static_cast<int64_t>(vals.size())) continue;
      syms_.push_back(std::move(vals));
      env_[n.result(i)].sym_value = &syms_.back();
    }
    return absl::OkStatus();
  }

  const Function& f_;
  const PrimitiveShapeRunOptions& options_;
  NeedMap need_;
  std::vector<InputDep> reads_;
  absl::flat_hash_map<const Value*, Known> env_;
  std::deque<Tensor> tensors_;             // stable addresses for Known::value
  std::deque<std::vector<DimExpr>> syms_;  // stable addresses for Known::sym_value
};

}  // namespace


std::vector<InputDep> DeriveInputMask(const Function& primitive) {
  const NeedMap need = DeriveNeeds(primitive);
  std::vector<InputDep> mask;
  for (const auto& p : primitive.body().params()) mask.push_back(NeedOf(need, p.get()));
  return mask;
}

absl::StatusOr<std::vector<Type>> InferPrimitiveTypes(const Function& primitive,
                                                      std::vector<ShapeInput> inputs) {
  return InferPrimitiveTypes(primitive, std::move(inputs), PrimitiveShapeRunOptions{});
}

absl::StatusOr<std::vector<Type>> InferPrimitiveTypes(const Function& primitive,
                                                      std::vector<ShapeInput> inputs,
                                                      const PrimitiveShapeRunOptions& options) {
  Composer composer(primitive, options);
  absl::StatusOr<std::vector<Type>> types = composer.Run(std::move(inputs));
  if (options.reads != nullptr) *options.reads = composer.reads();
  return types;
}

}  // namespace hetpass
