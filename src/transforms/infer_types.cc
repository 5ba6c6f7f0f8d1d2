// infer-types: type inference with symbolic shapes.
//
// Definitions
//   A value's type is a tensor type (dtype + dims: constants, expressions over named symbols,
//   or `?`) or a tuple. A *declared* type is one already on the value (written in the text IR
//   or left by an earlier run); an *inferred* type comes from the op registry's shape rule.
//   Symbolic values: small integer tensors whose contents are known as DimExprs (shape_of of
//   f32[n, 1024] holds [n, 1024]); shape rules read them for their `value` inputs, which is how
//   dyn.reshape of a shape computed by shape arithmetic gets a symbolic, not unknown, shape.
//
// Phase 0  Order functions so that callees come before callers (invoke). A call cycle needs
//          declared result types on the functions in it; otherwise it is an error.
// Phase 1  Walk each function body in program order. Per binding:
//            constant   the type of its data (a declared type must match exactly)
//            call       the op's shape rule in symbolic mode, fed with operand types, constant
//                       data and symbolic values; then the op's symbolic-value rule
//            tuple / get_item   structural
//            invoke     callee parameter symbols are unified with argument dims and substituted
//                       into the callee's result types
//            if         both branches inferred; results join (dims that differ become `?`)
//            loop       fixpoint over loop-carried types: start from the initial values, infer
//                       the body, join with what the body yields, repeat until stable (each
//                       round can only turn dims into `?`, so it terminates); scan outputs get a
//                       leading `?` dim (the trip count may depend on data)
// Phase 2  Every inferred type is merged with the declared one: equal dims stay, `?` is
//          refined by the other side, anything else is an error naming both types.
//          Function result types are set (or checked) the same way.
//
// Phase 3  (name_data_dims) every `?` dim of an op call's result gets a fresh symbol `dynN`
//          (unique in the module, one per value and dim, stable across fixpoint rounds and
//          re-runs since a declared symbol refines an inferred `?`). Consumers are then inferred
//          over that symbol, so one data-dependent op leaves one unknown, not a chain of them.
//          A symbol named inside a loop body does not leave it: a scan output's per-iteration
//          type has it replaced by `?` (each iteration binds it anew); an invoke's results
//          keep only the callee's parameter symbols.
//
// Output: every value typed; the verifier's require_types holds. Re-running changes nothing.
// Known gaps: no symbolic relations are derived from runtime checks (two different symbols
//   broadcast against each other give `?`, not a fresh symbol).
#include "passes/transforms/infer_types.h"

#include <functional>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/symbolic_values.h"

namespace hetpass {
namespace {

class InferTypesPass : public Pass {
 public:
  explicit InferTypesPass(const InferTypesOptions& options) : options_(options) {}
  absl::string_view name() const override { return InferTypesOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    module_ = &module;
    changed_ = false;
    sym_.Clear();
    signatures_.clear();
    CollectModuleSymbols(module);
    ASSIGN_OR_RETURN(std::vector<Function*> order, CallOrder(module));
    for (Function* f : order) RETURN_IF_ERROR(InferFunction(*f));
    return changed_;
  }

 private:
  // ---- Phase 3 helpers: fresh symbols for data-dependent dims ------------------------------
  void CollectModuleSymbols(const Module& module) {
    used_symbols_.clear();
    dim_names_.clear();
    next_symbol_ = 1;
    auto add = [&](const Type& t) {
      if (!t.is_tensor()) return;
      for (const DimExpr& d : t.shape()) d.CollectSymbols(&used_symbols_);
    };
    for (const auto& f : module.functions()) {
      for (const Type& t : f->result_types()) add(t);
      for (const auto& p : f->body().params()) add(p->type());
      WalkNodes(f->body(), [&](const Node& n) {
        for (const auto& r : n.results()) add(r->type());
        for (int i = 0; i < n.num_regions(); ++i) {
          for (const auto& p : n.region(i)->params()) add(p->type());
        }
      });
    }
  }

  // The type with each `?` dim of `v` replaced by its fresh symbol.
  Type NameUnknownDims(const Value* v, const Type& t) {
    if (!options_.name_data_dims || !t.is_tensor()) return t;
    std::vector<DimExpr> dims = t.shape();
    bool any = false;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!dims[d].is_unknown()) continue;
      auto [it, inserted] = dim_names_.try_emplace(std::make_pair(v, static_cast<int>(d)));
      if (inserted) {
        std::string name;
        do {
          name = absl::StrCat("dyn", next_symbol_++);
        } while (used_symbols_.contains(name));
        used_symbols_.insert(name);
        it->second = DimExpr::Symbol(name);
      }
      dims[d] = it->second;
      any = true;
    }
    return any ? Type::Tensor(t.dtype(), std::move(dims)) : t;
  }

  // `t` with the symbols local to `body` replaced by `?`: those in the types of values defined
  // in it (any depth) and nowhere else in the function (a symbol an earlier run named there
  // counts too, so a re-run scrubs the same way).
  Type ScrubBodySymbols(const Block& body, const Type& t) {
    if (!t.is_tensor() || current_function_ == nullptr) return t;
    std::set<std::string> in_type;
    for (const DimExpr& d : t.shape()) d.CollectSymbols(&in_type);
    if (in_type.empty()) return t;
    std::set<std::string> inside, outside;
    auto add = [](const Type& ty, std::set<std::string>& out) {
      if (!ty.is_tensor()) return;
      for (const DimExpr& d : ty.shape()) d.CollectSymbols(&out);
    };
    std::function<void(const Block&, bool)> walk = [&](const Block& b, bool in_body) {
      for (const auto& p : b.params()) add(p->type(), in_body ? inside : outside);
      for (const auto& n : b.nodes()) {
        for (const auto& r : n->results()) add(r->type(), in_body ? inside : outside);
        for (int i = 0; i < n->num_regions(); ++i) {
          walk(*n->region(i), in_body || n->region(i) == &body);
        }
      }
    };
    walk(current_function_->body(), false);
    absl::flat_hash_map<std::string, DimExpr> scrub;
    for (const std::string& sym : in_type) {
      if (inside.contains(sym) && !outside.contains(sym)) scrub[sym] = DimExpr::Unknown();
    }
    if (scrub.empty()) return t;
    std::vector<DimExpr> dims;
    for (const DimExpr& d : t.shape()) dims.push_back(d.Substitute(scrub));
    return Type::Tensor(t.dtype(), std::move(dims));
  }

  // ---- Phase 0 ------------------------------------------------------------------------------
  absl::StatusOr<std::vector<Function*>> CallOrder(Module& module) {
    std::vector<Function*> order;
    absl::flat_hash_map<const Function*, int> state;  // 1 visiting, 2 done
    std::function<absl::Status(Function*)> visit = [&](Function* f) -> absl::Status {
      int& s = state[f];
      if (s == 2) return absl::OkStatus();
      if (s == 1) {
        if (!f->result_types().empty()) return absl::OkStatus();  // declared: cycle is fine
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: function @%s is recursive and has no declared result types",
            FormatLocation(module_, f->loc()), f->name()));
      }
      s = 1;
      absl::Status status = absl::OkStatus();
      WalkNodes(f->body(), [&](Node& n) {
        if (!status.ok() || n.kind() != NodeKind::kInvoke) return;
        Function* callee = module.FindFunction(n.callee());
        if (callee == nullptr) {
          status = absl::InvalidArgumentError(absl::StrCat(NodeContext(module_, n),
                                                           "unknown function @", n.callee()));
          return;
        }
        status = visit(callee);
      });
      RETURN_IF_ERROR(status);
      state[f] = 2;
      order.push_back(f);
      return absl::OkStatus();
    };
    for (const auto& f : module.functions()) RETURN_IF_ERROR(visit(f.get()));
    return order;
  }

  // ---- Phase 1 ------------------------------------------------------------------------------
  absl::Status InferFunction(Function& f) {
    for (const auto& p : f.body().params()) {
      if (p->type().is_unset()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: parameter %%%s of @%s has no type", FormatLocation(module_, f.loc()), p->name(),
            f.name()));
      }
    }
    current_function_ = &f;
    pending_assumptions_.clear();
    ++pending_generation_;
    known_symbols_.clear();
    for (const auto& p : f.body().params()) CollectTypeSymbols(p->type(), &known_symbols_);
    param_symbols_ = known_symbols_;
    // Conditions an earlier run recorded stay facts: their symbols are known too.
    for (const Assumption& a : f.assumptions()) a.CollectSymbols(&known_symbols_);
    RETURN_IF_ERROR(InferBlock(f.body()));
    const std::vector<Value*>& results = f.body().results();
    std::vector<Type> declared = f.result_types();
    if (!declared.empty() && declared.size() != results.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: @%s declares %d results but returns %d values", FormatLocation(module_, f.loc()),
          f.name(), declared.size(), results.size()));
    }
    std::vector<Type> out;
    for (size_t i = 0; i < results.size(); ++i) {
      Type t = results[i]->type();
      if (!declared.empty()) {
        // As for a binding's declared type (MergeDim): an exporter's declared output dim over
        // bound symbols wins under an assumption the VM checks before the function returns.
        const auto describe = [&](std::string* context, std::string* what) {
          *context = absl::StrCat(FormatLocation(module_, f.loc()), ": ");
          *what = absl::StrFormat("result %d of @%s is declared %s", i, f.name(), declared[i].ToString());
        };
        std::optional<Type> r =
            declared[i].is_tensor() && t.is_tensor()
                ? MergeTypes(declared[i], t,
                             [&](const DimExpr& d, const DimExpr& x) { return MergeDim(describe, d, x); })
                : RefineType(declared[i], t);
        if (!r) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: result %d of @%s is declared %s but the returned value has type %s",
              FormatLocation(module_, f.loc()), i, f.name(), declared[i].ToString(),
              t.ToString()));
        }
        t = *r;
      }
      out.push_back(std::move(t));
    }
    if (out != f.result_types()) {
      changed_ = true;
      f.set_result_types(std::move(out));
    }
    for (Assumption& a : pending_assumptions_) {
      if (f.AddAssumption(std::move(a))) changed_ = true;
    }
    pending_assumptions_.clear();
    ++pending_generation_;
    return absl::OkStatus();
  }

  absl::Status InferBlock(Block& block) {
    for (const auto& n : block.nodes()) RETURN_IF_ERROR(InferNode(*n));
    return absl::OkStatus();
  }

  absl::Status NodeError(const Node& n, absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat(NodeContext(module_, n), msg));
  }

  static void CollectTypeSymbols(const Type& t, std::set<std::string>* out) {
    if (t.is_tensor()) {
      for (const DimExpr& d : t.shape()) d.CollectSymbols(out);
    } else if (t.is_tuple()) {
      for (const Type& f : t.fields()) CollectTypeSymbols(f, out);
    } else if ((t.is_sequence() || t.is_optional()) && !t.element().is_unset()) {
      CollectTypeSymbols(t.element(), out);
    }
  }

  // Records a condition the node's types rely on (assumption.h), prefixed with the node. It
  // joins the function when the function is done (a loop's fixpoint rounds drop those of
  // rounds that did not last: see InferLoop).
  void Assume(const Node& n, Assumption a) { Assume(NodeContext(module_, n), std::move(a)); }
  void Assume(absl::string_view context, Assumption a) {
    a = a.Canonical();
    a.reason = absl::StrCat(context, a.reason);
    if (a.Trivial()) return;
    // A condition on `?` could never be checked: such a rule answered `?` instead.
    if (a.lhs.is_unknown() || a.rhs.is_unknown()) return;
    // Implied by what is already assumed (`h <= 16777215` after `h <= 128`).
    if (a.kind == Assumption::Kind::kLe && CurrentFacts() != nullptr &&
        DimExpr::ProveLessEqual(a.lhs, a.rhs, CurrentFacts())) {
      return;
    }
    for (const Assumption& have : pending_assumptions_) {
      if (have.SameCondition(a)) return;
    }
    pending_assumptions_.push_back(std::move(a));
    ++pending_generation_;
  }

  // Phase 2 for one dim: the declared dim `d` against the inferred `i`. Equal, or one of them
  // `?`: the other. Two different constants: a contradiction (nullopt). An inferred constant
  // against a declared expression: the constant (a fact; the declared name adds nothing). An
  // inferred expression against a declared one whose symbols are already bound here (the
  // function's parameters', or those of values before this one): the declared dim, under the
  // assumption that the two are equal (the VM checks it); exporters declare what the model
  // means (`((height + 1)//2 + 1)//2`), inference may only find a weaker form (`dyn1`).
  // Otherwise the inferred dim (a declared symbol nothing binds is only a name).
  // `context` prefixes the reason ("<loc>: op %v: "), `declared_what` names the declaration
  // ("%v is declared f32[m, 4]").
  // `describe` gives the assumption's context and reason, only when one is recorded (every
  // typed constant merges its declared type: formatting both for each was a tenth of the pass).
  std::optional<DimExpr> MergeDim(absl::FunctionRef<void(std::string*, std::string*)> describe,
                                  const DimExpr& d, const DimExpr& i) {
    if (d.is_unknown()) return i;
    if (i.is_unknown() || d == i) return d;
    if (d.is_constant() && i.is_constant()) return std::nullopt;
    if (i.is_constant()) return i;
    std::set<std::string> syms;
    d.CollectSymbols(&syms);
    for (const std::string& s : syms) {
      if (!known_symbols_.contains(s)) return i;
    }
    Assumption a;
    a.kind = Assumption::Kind::kEq;
    a.lhs = i;
    a.rhs = d;
    std::string context;
    describe(&context, &a.reason);
    Assume(context, std::move(a));
    return d;
  }

  // `t` with every dim rebuilt under `facts` (DimExpr::Simplify).
  static Type SimplifyType(const Type& t, const DimFacts& facts) {
    if (t.is_tensor()) {
      std::vector<DimExpr> dims;
      dims.reserve(t.shape().size());
      for (const DimExpr& d : t.shape()) dims.push_back(d.is_constant() ? d : d.Simplify(facts));
      return Type::Tensor(t.dtype(), std::move(dims));
    }
    if (t.is_tuple()) {
      std::vector<Type> fields;
      for (const Type& f : t.fields()) fields.push_back(SimplifyType(f, facts));
      return Type::Tuple(std::move(fields));
    }
    return t;
  }

  // The function's assumptions as facts for the simplifier: what has been assumed makes the
  // types after it simpler (`min(128, seq)` is `seq` once `seq <= 128` is assumed).
  const DimFacts* CurrentFacts() {
    if (current_function_ == nullptr) return nullptr;
    const std::vector<Assumption>& recorded = current_function_->assumptions();
    if (recorded.empty() && pending_assumptions_.empty()) return nullptr;
    const std::tuple<const Function*, size_t, size_t, uint64_t> key{
        current_function_, recorded.size(), pending_assumptions_.size(), pending_generation_};
    if (key == facts_key_) return &facts_;
    facts_key_ = key;
    std::vector<Assumption> all = recorded;
    all.insert(all.end(), pending_assumptions_.begin(), pending_assumptions_.end());
    facts_ = FactsFromAssumptions(all);
    return &facts_;
  }

  // Phase 2 for one value: merge the inferred type into the declared one.
  absl::Status SetType(const Node& n, Value* v, const Type& inferred_in) {
    const DimFacts* facts = CurrentFacts();
    const Type inferred = facts != nullptr ? SimplifyType(inferred_in, *facts) : inferred_in;
    Type merged = inferred;
    if (v->type() == inferred) {
      // Nothing to merge (a second run, a constant's declared type): every dim would keep
      // the declared one, which is what the value has.
      merged = v->type();
    } else if (!v->type().is_unset()) {
      const Type declared = v->type();
      std::optional<Type> r;
      if (declared.is_tensor() && inferred.is_tensor()) {
        const auto describe = [&](std::string* context, std::string* what) {
          *context = NodeContext(module_, n);
          *what = absl::StrFormat("%%%s is declared %s", v->name(), declared.ToString());
        };
        r = MergeTypes(declared, inferred,
                       [&](const DimExpr& d, const DimExpr& i) { return MergeDim(describe, d, i); });
      } else {
        r = RefineType(declared, inferred);
      }
      if (!r) {
        return NodeError(n, absl::StrFormat("%%%s is declared %s but infers to %s", v->name(),
                                            declared.ToString(), inferred.ToString()));
      }
      merged = *std::move(r);
    }
    CollectTypeSymbols(merged, &known_symbols_);
    if (merged != v->type()) {
      changed_ = true;
      v->set_type(std::move(merged));
    }
    return absl::OkStatus();
  }

  absl::Status CheckOperandsTyped(const Node& n) {
    for (int i = 0; i < n.num_operands(); ++i) {
      if (n.operand(i)->type().is_unset()) {
        return NodeError(n, absl::StrFormat("operand %d (%%%s) has no type", i,
                                            n.operand(i)->name()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status InferNode(Node& n) {
    RETURN_IF_ERROR(CheckOperandsTyped(n));
    switch (n.kind()) {
      case NodeKind::kConstant: {
        const Type t = n.constant_value().type();
        if (!n.result(0)->type().is_unset() && n.result(0)->type() != t) {
          return NodeError(n, absl::StrFormat("constant is declared %s but its data is %s",
                                              n.result(0)->type().ToString(), t.ToString()));
        }
        return SetType(n, n.result(0), t);
      }
      case NodeKind::kCall:
        return InferCall(n);
      case NodeKind::kTuple: {
        std::vector<Type> fields;
        for (const Value* v : n.operands()) fields.push_back(v->type());
        return SetType(n, n.result(0), Type::Tuple(std::move(fields)));
      }
      case NodeKind::kGetItem: {
        const Type& t = n.operand(0)->type();
        const AttrValue* index = n.attrs().Find("index");
        if (!t.is_tuple()) return NodeError(n, "get_item needs a tuple operand, got " + t.ToString());
        if (index == nullptr || TypeOf(*index) != AttrType::kInt) {
          return NodeError(n, "get_item needs an int attribute 'index'");
        }
        const int64_t i = std::get<int64_t>(*index);
        if (i < 0 || i >= static_cast<int64_t>(t.fields().size())) {
          return NodeError(n, absl::StrFormat("index %d is out of range for %s", i, t.ToString()));
        }
        return SetType(n, n.result(0), t.fields()[i]);
      }
      case NodeKind::kInvoke:
        return InferInvoke(n);
      case NodeKind::kIf:
        return InferIf(n);
      case NodeKind::kLoop:
        return InferLoop(n);
      case NodeKind::kBuiltin:
        return InferBuiltin(n);
    }
    return absl::InternalError("unhandled node kind");
  }

  // Builtins (builtins.def): a sequence's element type is the join of every tensor put in it
  // (dims that differ become `?`), so a sequence of differently sized tensors stays well typed.
  absl::Status InferBuiltin(Node& n) {
    auto operand = [&](int i) -> const Type& { return n.operand(i)->type(); };
    auto need = [&](int i, bool seq) -> absl::Status {
      const Type& t = operand(i);
      if (seq ? t.is_sequence() : t.is_optional()) return absl::OkStatus();
      return NodeError(n, absl::StrFormat("operand %d must be %s, got %s", i,
                                          seq ? "a sequence" : "an optional", t.ToString()));
    };
    auto need_position = [&](int i) -> absl::Status {
      const Type& t = operand(i);
      if (t.is_tensor() && IsInteger(t.dtype()) && t.rank() <= 1) return absl::OkStatus();
      return NodeError(n, absl::StrFormat("position (operand %d) must be an integer scalar, got %s",
                                          i, t.ToString()));
    };
    auto join_element = [&](const Type& a, const Type& b) -> absl::StatusOr<Type> {
      if (!b.is_tensor()) {
        return NodeError(n, "sequence elements must be tensors, got " + b.ToString());
      }
      if (a.is_unset()) return b;  // the first element of a `seq<?>`
      std::optional<Type> j = JoinTypes(a, b);
      // ONNX sequences may mix ranks (a scalar, then vectors): the element type is then open.
      if (!j && a.is_tensor() && a.dtype() == b.dtype()) return Type();
      if (!j) {
        return NodeError(n, absl::StrFormat("element %s does not fit a sequence of %s",
                                            b.ToString(), a.ToString()));
      }
      return *std::move(j);
    };
    const Type& declared = n.result()->type();
    switch (n.builtin()) {
      case Builtin::kSeqConstruct: {
        Type elem = operand(0);
        for (int i = 0; i < n.num_operands(); ++i) {
          ASSIGN_OR_RETURN(elem, join_element(elem, operand(i)));
        }
        return SetType(n, n.result(), Type::Sequence(std::move(elem)));
      }
      case Builtin::kSeqEmpty:
      case Builtin::kOptNone:
        if (n.builtin() == Builtin::kSeqEmpty ? !declared.is_sequence() : !declared.is_optional()) {
          return NodeError(n, absl::StrCat("needs a declared ",
                                           n.builtin() == Builtin::kSeqEmpty ? "sequence" : "optional",
                                           " type, found ", declared.ToString()));
        }
        return absl::OkStatus();
      case Builtin::kSeqInsert: {
        RETURN_IF_ERROR(need(0, true));
        if (n.num_operands() == 3) RETURN_IF_ERROR(need_position(2));
        ASSIGN_OR_RETURN(Type elem, join_element(operand(0).element(), operand(1)));
        return SetType(n, n.result(), Type::Sequence(std::move(elem)));
      }
      case Builtin::kSeqAt:
        RETURN_IF_ERROR(need(0, true));
        RETURN_IF_ERROR(need_position(1));
        if (operand(0).element().is_unset()) {
          return NodeError(n, "the element type of a sequence that is never filled is unknown");
        }
        return SetType(n, n.result(), operand(0).element());
      case Builtin::kSeqErase:
        RETURN_IF_ERROR(need(0, true));
        if (n.num_operands() == 2) RETURN_IF_ERROR(need_position(1));
        return SetType(n, n.result(), operand(0));
      case Builtin::kSeqLength:
        RETURN_IF_ERROR(need(0, true));
        return SetType(n, n.result(), Type::Tensor(DType::kI64, {}));
      case Builtin::kOptSome:
        if (operand(0).is_optional()) return NodeError(n, "an optional cannot hold an optional");
        return SetType(n, n.result(), Type::Optional(operand(0)));
      case Builtin::kOptHas:
        RETURN_IF_ERROR(need(0, false));
        return SetType(n, n.result(), Type::Tensor(DType::kBool, {}));
      case Builtin::kOptGet:
        RETURN_IF_ERROR(need(0, false));
        return SetType(n, n.result(), operand(0).element());
    }
    return absl::InternalError("unhandled builtin");
  }

  absl::Status InferCall(Node& n) {
    const OpDef& op = *n.op();
    if (op.typed_by_declaration()) {
      for (const auto& r : n.results()) {
        if (r->type().is_unset()) {
          return NodeError(n, absl::StrFormat("%s needs a declared result type (its size is "
                                              "written in the type)",
                                              op.name()));
        }
      }
      return absl::OkStatus();
    }
    for (int i = 0; i < n.num_operands(); ++i) {
      if (op.input(i).storage) continue;
      if (!n.operand(i)->type().is_tensor()) {
        return NodeError(n, absl::StrFormat("input %d '%s' (%%%s) must be a tensor, got %s", i,
                                            op.input(i).name, n.operand(i)->name(),
                                            n.operand(i)->type().ToString()));
      }
    }
    const bool memoizable = !op.needs_values();
    const size_t hash = memoizable ? SignatureHash(n) : 0;
    const Signature* memo = memoizable ? FindSignature(n, hash) : nullptr;
    absl::StatusOr<std::vector<Type>> computed;
    if (memo == nullptr) {
      std::vector<Assumption> assumed;
      computed = op.InferTypes(n.attrs(), sym_.InputsOf(n, /*through_casts=*/true), &assumed);
      if (!computed.ok()) return NodeError(n, computed.status().message());
      if (memoizable) {
        Signature sig{&op, n.attrs(), {}, *std::move(computed), std::move(assumed)};
        for (const Value* v : n.operands()) sig.inputs.push_back(v->type());
        std::vector<Signature>& bucket = signatures_[hash];
        bucket.push_back(std::move(sig));
        memo = &bucket.back();
      } else {
        for (Assumption& a : assumed) Assume(n, std::move(a));
      }
    }
    if (memo != nullptr) {
      for (const Assumption& a : memo->assumed) Assume(n, a);
    }
    const std::vector<Type>& types = memo != nullptr ? memo->types : *computed;
    for (int i = 0; i < n.num_results(); ++i) {
      RETURN_IF_ERROR(SetType(n, n.result(i), types[i]));
      const Type named = NameUnknownDims(n.result(i), n.result(i)->type());
      if (named != n.result(i)->type()) {
        changed_ = true;
        n.result(i)->set_type(named);
      }
    }
    std::vector<Assumption> exactness;
    sym_.Propagate(n, &exactness, &param_symbols_);
    for (Assumption& a : exactness) Assume(n, std::move(a));
    return absl::OkStatus();
  }

  absl::Status InferInvoke(Node& n) {
    const Function* callee = module_->FindFunction(n.callee());
    if (callee == nullptr) return NodeError(n, "unknown function @" + n.callee());
    const Block& body = callee->body();
    if (IsKernelInvoke(n)) return absl::OkStatus();  // a kernel: binds nothing
    if (IsShapeFunctionInvoke(n)) {
      // One i64[rank] shape per callee result.
      if (callee->result_types().size() != static_cast<size_t>(n.num_results())) {
        return NodeError(n, absl::StrFormat("@%s returns %d values but %d shapes are bound",
                                            callee->name(), callee->result_types().size(),
                                            n.num_results()));
      }
      for (int i = 0; i < n.num_results(); ++i) {
        const Type& r = callee->result_types()[i];
        RETURN_IF_ERROR(SetType(n, n.result(i), Type::Tensor(DType::kI64, {r.rank()})));
      }
      return absl::OkStatus();
    }
    if (body.num_params() != n.num_operands()) {
      return NodeError(n, absl::StrFormat("@%s takes %d arguments, got %d", callee->name(),
                                          body.num_params(), n.num_operands()));
    }
    if (callee->result_types().size() != static_cast<size_t>(n.num_results())) {
      return NodeError(n, absl::StrFormat("@%s returns %d values but %d are bound",
                                          callee->name(), callee->result_types().size(),
                                          n.num_results()));
    }
    // Unify the callee's parameter dims with the arguments' dims.
    absl::flat_hash_map<std::string, DimExpr> subst;
    for (int i = 0; i < n.num_operands(); ++i) {
      const Type& p = body.param(i)->type();
      const Type& a = n.operand(i)->type();
      if (p.kind() != a.kind() || (p.is_tensor() && (p.dtype() != a.dtype() || p.rank() != a.rank()))) {
        return NodeError(n, absl::StrFormat("argument %d of @%s has type %s, expected %s", i,
                                            callee->name(), a.ToString(), p.ToString()));
      }
      if (!p.is_tensor()) continue;
      for (int d = 0; d < p.rank(); ++d) {
        const DimExpr& pd = p.shape()[d];
        const DimExpr& ad = a.shape()[d];
        if (pd.is_symbol()) {
          auto [it, inserted] = subst.emplace(pd.symbol_name(), ad);
          if (!inserted && it->second != ad) it->second = DimExpr::Unknown();
        } else if (pd.is_constant() && ad.is_constant() && pd != ad) {
          return NodeError(n, absl::StrFormat("argument %d of @%s has type %s, expected %s", i,
                                              callee->name(), a.ToString(), p.ToString()));
        }
      }
    }
    // A callee symbol that no parameter binds (one its body named for data) means nothing here.
    std::set<std::string> callee_symbols;
    for (const auto& r : callee->result_types()) {
      if (!r.is_tensor()) continue;
      for (const DimExpr& d : r.shape()) d.CollectSymbols(&callee_symbols);
    }
    for (const std::string& sym : callee_symbols) subst.try_emplace(sym, DimExpr::Unknown());
    for (int i = 0; i < n.num_results(); ++i) {
      const Type& r = callee->result_types()[i];
      Type t = r;
      if (r.is_tensor()) {
        std::vector<DimExpr> dims;
        for (const DimExpr& d : r.shape()) dims.push_back(d.Substitute(subst));
        t = Type::Tensor(r.dtype(), std::move(dims));
      }
      RETURN_IF_ERROR(SetType(n, n.result(i), t));
    }
    return absl::OkStatus();
  }

  absl::Status CheckScalar(const Node& n, int operand, bool want_bool, absl::string_view what) {
    const Type& t = n.operand(operand)->type();
    const DimExpr count = t.is_tensor() ? t.NumElements() : DimExpr(0);
    const bool dtype_ok = t.is_tensor() && (want_bool ? t.dtype() == DType::kBool : IsInteger(t.dtype()));
    if (!dtype_ok || !(count.is_constant() && count.constant() == 1)) {
      return NodeError(n, absl::StrFormat("%s must be a single %s element, got %s", what,
                                          want_bool ? "bool" : "integer", t.ToString()));
    }
    return absl::OkStatus();
  }

  absl::Status InferIf(Node& n) {
    if (n.num_operands() != 1) return NodeError(n, "if takes exactly one condition operand");
    RETURN_IF_ERROR(CheckScalar(n, 0, /*want_bool=*/true, "the condition of if"));
    Block& then_b = *n.region(0);
    Block& else_b = *n.region(1);
    RETURN_IF_ERROR(InferBlock(then_b));
    RETURN_IF_ERROR(InferBlock(else_b));
    if (then_b.results().size() != else_b.results().size() ||
        then_b.results().size() != static_cast<size_t>(n.num_results())) {
      return NodeError(n, absl::StrFormat("branches yield %d and %d values for %d results",
                                          then_b.results().size(), else_b.results().size(),
                                          n.num_results()));
    }
    for (int i = 0; i < n.num_results(); ++i) {
      const Type& a = then_b.results()[i]->type();
      const Type& b = else_b.results()[i]->type();
      std::optional<Type> joined = JoinTypes(a, b);
      if (!joined) {
        return NodeError(n, absl::StrFormat("result %d is %s in the then branch but %s in the "
                                            "else branch",
                                            i, a.ToString(), b.ToString()));
      }
      RETURN_IF_ERROR(SetType(n, n.result(i), *joined));
    }
    return absl::OkStatus();
  }

  // Saves the declared types inside a loop body so each fixpoint round starts from them.
  static void SnapshotTypes(Block& b, std::vector<std::pair<Value*, Type>>& out) {
    WalkNodes(b, [&](Node& n) {
      for (const auto& r : n.results()) out.emplace_back(r.get(), r->type());
      for (int i = 0; i < n.num_regions(); ++i) {
        for (const auto& p : n.region(i)->params()) out.emplace_back(p.get(), p->type());
      }
    });
  }

  absl::Status InferLoop(Node& n) {
    if (n.num_operands() < 2) {
      return NodeError(n, "loop takes a trip count, a condition and the carried values");
    }
    RETURN_IF_ERROR(CheckScalar(n, 0, /*want_bool=*/false, "the trip count of loop"));
    RETURN_IF_ERROR(CheckScalar(n, 1, /*want_bool=*/true, "the condition of loop"));
    Block& body = *n.region(0);
    const int carried = n.num_operands() - 2;
    if (body.num_params() != 2 + carried) {
      return NodeError(n, absl::StrFormat("loop body takes %d parameters, expected %d (iteration, "
                                          "condition and %d carried values)",
                                          body.num_params(), 2 + carried, carried));
    }
    const int scans = static_cast<int>(body.results().size()) - 1 - carried;
    if (scans < 0 || n.num_results() != carried + scans) {
      return NodeError(n, absl::StrFormat("loop body yields %d values and the loop has %d "
                                          "results; expected a condition, %d carried values and "
                                          "one result per carried and scan value",
                                          body.results().size(), n.num_results(), carried));
    }
    std::vector<Type> state;
    for (int k = 0; k < carried; ++k) {
      const Type& init = n.operand(2 + k)->type();
      const Type& declared = body.param(2 + k)->type();
      std::optional<Type> start = declared.is_unset() ? init : JoinTypes(init, declared);
      if (!start) {
        return NodeError(n, absl::StrFormat("carried value %d starts as %s but the body "
                                            "parameter is declared %s",
                                            k, init.ToString(), declared.ToString()));
      }
      state.push_back(*start);
    }
    // Each round re-infers the body from its declared types; `changed` is decided by comparing
    // with this snapshot at the end, since the rounds themselves rewrite types back and forth.
    const bool changed_at_entry = changed_;
    std::vector<std::pair<Value*, Type>> snapshot;
    for (const auto& p : body.params()) snapshot.emplace_back(p.get(), p->type());
    SnapshotTypes(body, snapshot);
    const size_t num_params = body.params().size();
    body.param(0)->set_type(Type::Tensor(DType::kI64, {}));
    body.param(1)->set_type(Type::Tensor(DType::kBool, {}));
    // Assumptions found by a round that does not last (its types were joined away) would
    // check a condition the final types do not rely on: each round starts from this mark.
    const size_t assumptions_at_entry = pending_assumptions_.size();
    for (int round = 0;; ++round) {
      pending_assumptions_.resize(assumptions_at_entry);
      ++pending_generation_;
      if (round >= options_.max_loop_rounds + 64) {
        return absl::InternalError(absl::StrCat(NodeContext(module_, n),
                                                "loop type fixpoint did not converge"));
      }
      for (size_t i = num_params; i < snapshot.size(); ++i) {
        snapshot[i].first->set_type(snapshot[i].second);
      }
      for (int k = 0; k < carried; ++k) {
        body.param(2 + k)->set_type(state[k]);
        CollectTypeSymbols(state[k], &known_symbols_);
      }
      RETURN_IF_ERROR(InferBlock(body));
      RETURN_IF_ERROR(CheckYieldedCondition(n, body));
      bool stable = true;
      for (int k = 0; k < carried; ++k) {
        const Type& y = body.results()[1 + k]->type();
        std::optional<Type> joined = JoinTypes(state[k], y);
        if (!joined) {
          return NodeError(n, absl::StrFormat("carried value %d enters the body as %s but is "
                                              "yielded as %s (dtype and rank must not change)",
                                              k, state[k].ToString(), y.ToString()));
        }
        if (*joined != state[k]) {
          stable = false;
          state[k] = *std::move(joined);
        }
      }
      if (stable) break;
    }
    bool body_changed = false;
    for (auto& [v, t] : snapshot) body_changed |= (v->type() != t);
    changed_ = changed_at_entry || body_changed;
    for (int k = 0; k < carried; ++k) RETURN_IF_ERROR(SetType(n, n.result(k), state[k]));
    const DimExpr iterations = StaticIterationCount(n, body);
    for (int s = 0; s < scans; ++s) {
      const Type& y = body.results()[1 + carried + s]->type();
      if (!y.is_tensor()) return NodeError(n, "scan outputs must be tensors");
      std::vector<DimExpr> dims = {iterations};
      const Type per_iteration = ScrubBodySymbols(body, y);
      dims.insert(dims.end(), per_iteration.shape().begin(), per_iteration.shape().end());
      RETURN_IF_ERROR(SetType(n, n.result(carried + s), Type::Tensor(y.dtype(), std::move(dims))));
    }
    return absl::OkStatus();
  }

  // How many times a loop runs when its condition never stops it: it enters true and the body
  // yields the constant true (an unrolled RNN: `loop(time, true)`); then the trip count, whose
  // value is a symbol the shape subgraph gives (`time`), or `?` when it is not known.
  DimExpr StaticIterationCount(const Node& n, const Block& body) const {
    auto scalar_value = [&](const Value* v) -> std::optional<DimExpr> {
      if (const Tensor* t = ConstantData(v); t != nullptr && t->num_elements() == 1) {
        return DimExpr(t->GetInt64(0));
      }
      const std::vector<DimExpr>* sym = sym_.Find(v);
      if (sym != nullptr && sym->size() == 1) return (*sym)[0];
      return std::nullopt;
    };
    if (n.num_operands() < 2 || body.results().empty()) return DimExpr::Unknown();
    const std::optional<DimExpr> trips = scalar_value(n.operand(0));
    const std::optional<DimExpr> enters = scalar_value(n.operand(1));
    const std::optional<DimExpr> stays = scalar_value(body.results()[0]);
    const bool always = enters && *enters == DimExpr(1) &&
                        ((stays && *stays == DimExpr(1)) || body.results()[0] == body.param(1));
    if (!trips || !always) return DimExpr::Unknown();
    // A huge constant is the importer's "no trip count" (ONNX's empty M): not a size.
    if (trips->is_constant() && trips->constant() > (int64_t{1} << 31) - 1) {
      return DimExpr::Unknown();
    }
    return DimExpr::Max(0, *trips);  // a negative trip count runs no iteration
  }

  absl::Status CheckYieldedCondition(const Node& n, const Block& body) {
    const Type& c = body.results()[0]->type();
    const DimExpr count = c.is_tensor() ? c.NumElements() : DimExpr(0);
    if (!c.is_tensor() || c.dtype() != DType::kBool || !count.is_constant() || count.constant() != 1) {
      return NodeError(n, "the loop body must yield a single bool condition first, got " +
                              c.ToString());
    }
    return absl::OkStatus();
  }

  // ---- Memoized shape functions ----------------------------------------------------------
  // A shape function is pure: the op, its attributes and its input types decide the result
  // types and the assumptions. A model repeats a few op signatures many times (every layer of
  // a stack), so an op whose shape function reads no input values is inferred once per
  // signature. The input types are matched by identity (Type::Make shares the dims of equal
  // recent types, and a value's type is copied along a chain): a type equal but not identical
  // is only a miss, one more shape function call.
  struct Signature {
    const OpDef* op;
    Attrs attrs;
    std::vector<Type> inputs;  // held, so that an identity compared with stays taken
    std::vector<Type> types;
    std::vector<Assumption> assumed;
  };
  static bool SameType(const Type& a, const Type& b) {
    return a.kind() == b.kind() && a.dtype() == b.dtype() && &a.shape() == &b.shape() &&
           &a.fields() == &b.fields();
  }
  static size_t SignatureHash(const Node& n) {
    size_t h = absl::HashOf(n.op(), n.attrs().empty() ? size_t{0} : n.attrs().Hash());
    for (const Value* v : n.operands()) {
      const Type& t = v->type();
      h = absl::HashOf(h, static_cast<int>(t.kind()), static_cast<int>(t.dtype()), &t.shape(),
                       &t.fields());
    }
    return h;
  }
  const Signature* FindSignature(const Node& n, size_t hash) const {
    auto it = signatures_.find(hash);
    if (it == signatures_.end()) return nullptr;
    for (const Signature& s : it->second) {
      if (s.op != n.op() || s.inputs.size() != n.operands().size() || s.attrs != n.attrs()) continue;
      bool same = true;
      for (size_t i = 0; i < s.inputs.size() && same; ++i) same = SameType(s.inputs[i], n.operand(i)->type());
      if (same) return &s;
    }
    return nullptr;
  }
  absl::flat_hash_map<size_t, std::vector<Signature>> signatures_;

  InferTypesOptions options_;
  Module* module_ = nullptr;
  bool changed_ = false;
  SymbolicValues sym_;
  std::set<std::string> used_symbols_;
  absl::flat_hash_map<std::pair<const Value*, int>, DimExpr> dim_names_;
  int next_symbol_ = 1;
  const Function* current_function_ = nullptr;
  // Assumptions found in the function being inferred (added to it at its end), and the symbols
  // bound before the binding being inferred (its parameters' and earlier values').
  std::vector<Assumption> pending_assumptions_;
  std::set<std::string> param_symbols_;  // bound by the current function's parameters
  DimFacts facts_;  // CurrentFacts' last answer, for facts_key_
  std::tuple<const Function*, size_t, size_t, uint64_t> facts_key_{nullptr, 0, 0, 0};
  uint64_t pending_generation_ = 0;  // bumped whenever pending_assumptions_ changes
  std::set<std::string> known_symbols_;
};

}  // namespace

std::unique_ptr<Pass> CreateInferTypesPass(const InferTypesOptions& options) {
  return std::make_unique<InferTypesPass>(options);
}

}  // namespace hetpass
