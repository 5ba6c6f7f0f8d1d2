// IR verifier (checks listed in verifier.h).
//
// One walk per function in program order keeps the set of values visible at each point: the
// function parameters, then each binding's results after its operands (and regions) are
// checked. A region sees its enclosing blocks' values; its own values are removed again when
// it closes. Each problem is reported with the function, the node's location, its op and the
// value involved; the first problem found is returned.
#include "passes/ir/verifier.h"


#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/op_def.h"
#include "passes/ir/scratch_ids.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

std::string ValueText(const Value* v) {
  if (v == nullptr) return "<null>";
  if (!v->name().empty()) return absl::StrCat("%", v->name());
  if (v->producer() != nullptr) {
    return absl::StrCat("<result ", v->index(), " of '", v->producer()->OpName(), "'>");
  }
  return absl::StrCat("<parameter ", v->index(), ">");
}

absl::string_view Plural(int64_t n, absl::string_view one, absl::string_view many) {
  return n == 1 ? one : many;
}

class FunctionVerifier {
 public:
  FunctionVerifier(const Module& module, const VerifyOptions& options)
      : module_(module), options_(options) {}

  // One verifier checks every function of a module in turn, keeping its arrays' capacity.
  absl::Status Run(const Function& function) {
    function_ = &function;
    ids_.Clear();
    visible_.clear();
    scope_.clear();
    marks_.clear();
    const Block& body = function.body();
    if (body.parent_function() != &function) {
      return FunctionError("its body does not point back to the function");
    }
    RETURN_IF_ERROR(DefineParams(body, "parameter"));
    RETURN_IF_ERROR(VerifyBlock(body));
    RETURN_IF_ERROR(CheckBlockResults(body, nullptr, "return"));
    return CheckFunctionResults();
  }

 private:
  // "<file:line:col>: in function '@f': "
  std::string FunctionPrefix() const {
    return absl::StrCat(FormatLocation(&module_, function_->loc()), ": in function '@",
                        function_->name(), "': ");
  }
  absl::Status FunctionError(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(FunctionPrefix(), message));
  }
  // "<loc>: in function '@f': <op> %r: <message>"
  absl::Status NodeError(const Node& node, absl::string_view message) const {
    std::string results;
    for (int i = 0; i < node.num_results(); ++i) {
      absl::StrAppend(&results, i ? ", " : " ", ValueText(node.result(i)));
    }
    return absl::InvalidArgumentError(absl::StrCat(FormatLocation(&module_, node.loc()),
                                                   ": in function '@", function_->name(),
                                                   "': ", node.OpName(), results, ": ", message));
  }

  absl::Status DefineParams(const Block& block, absl::string_view what) {
    for (int i = 0; i < block.num_params(); ++i) {
      const Value* p = block.param(i);
      if (p->param_block() != &block || p->index() != i) {
        return FunctionError(
            absl::StrFormat("%s %d %s does not point back to its block", what, i, ValueText(p)));
      }
      if (options_.require_types && p->type().is_unset()) {
        return FunctionError(absl::StrFormat("%s %d %s has no type", what, i, ValueText(p)));
      }
      Define(p);
    }
    return absl::OkStatus();
  }

  // The values defined so far are numbered (ScratchIds: a set keyed by pointer was most of the
  // verifier's time at 100k bindings); those of the blocks being walked are visible.
  void Define(const Value* v) {
    ids_.Number(v);
    visible_.push_back(true);
    scope_.push_back(v);
  }
  bool Visible(const Value* v) const {
    const int id = ids_.Id(v);
    return id >= 0 && visible_[id];
  }
  void PushScope() { marks_.push_back(scope_.size()); }
  void PopScope() {
    for (size_t i = marks_.back(); i < scope_.size(); ++i) visible_[ids_.Id(scope_[i])] = false;
    scope_.resize(marks_.back());
    marks_.pop_back();
  }

  // `what` names the use ("operand 2"); it is built only for an error (the verifier runs after
  // every pass, and a string per operand was a fifth of its time).
  absl::Status CheckUse(const Node* node, const Value* v, absl::FunctionRef<std::string()> what) {
    if (v != nullptr && Visible(v)) return absl::OkStatus();
    if (v == nullptr) {
      return node ? NodeError(*node, absl::StrCat(what(), " is null"))
                  : FunctionError(absl::StrCat(what(), " is null"));
    }
    const std::string msg = absl::StrCat(what(), " ", ValueText(v),
                                         " is not defined before its use in this or an "
                                         "enclosing block");
    return node ? NodeError(*node, msg) : FunctionError(msg);
  }

  absl::Status CheckBlockResults(const Block& block, const Node* owner,
                                 absl::string_view terminator) {
    for (size_t i = 0; i < block.results().size(); ++i) {
      RETURN_IF_ERROR(
          CheckUse(owner, block.results()[i], [&] { return absl::StrFormat("value %d of '%s'", i, terminator); }));
    }
    return absl::OkStatus();
  }

  static constexpr size_t kPrefetchNodes = 16;
  static constexpr size_t kPrefetchResults = 8;

  absl::Status VerifyBlock(const Block& block) {
    const auto& nodes = block.nodes();
    for (size_t k = 0; k < nodes.size(); ++k) {
      // The walk is bound by the first touch of each node and of its results (separate heap
      // objects): fetch a later node, and the first result of a nearer one, ahead of time.
      if (k + kPrefetchNodes < nodes.size()) __builtin_prefetch(nodes[k + kPrefetchNodes].get());
      if (k + kPrefetchResults < nodes.size() && nodes[k + kPrefetchResults]->num_results() > 0) {
        __builtin_prefetch(nodes[k + kPrefetchResults]->result(0));
      }
      const Node& node = *nodes[k];
      if (node.parent() != &block) return NodeError(node, "node does not point back to its block");
      for (int i = 0; i < node.num_operands(); ++i) {
        RETURN_IF_ERROR(CheckUse(&node, node.operand(i), [i] { return absl::StrCat("operand ", i); }));
      }
      if (node.num_regions() != NodeKindNumRegions(node.kind())) {
        return NodeError(node, absl::StrFormat("has %d regions, expected %d", node.num_regions(),
                                               NodeKindNumRegions(node.kind())));
      }
      for (int r = 0; r < node.num_regions(); ++r) {
        const Block& region = *node.region(r);
        if (region.parent_node() != &node) {
          return NodeError(node, absl::StrCat("region ", r, " does not point back to its node"));
        }
        PushScope();
        RETURN_IF_ERROR(DefineParams(region, "region parameter"));
        RETURN_IF_ERROR(VerifyBlock(region));
        RETURN_IF_ERROR(CheckBlockResults(region, &node, "yield"));
        PopScope();
      }
      RETURN_IF_ERROR(VerifyNode(node));
      if (options_.node_check) RETURN_IF_ERROR(options_.node_check(*function_, node));
      for (int i = 0; i < node.num_results(); ++i) {
        const Value* r = node.result(i);
        if (r->producer() != &node || r->index() != i) {
          return NodeError(node, absl::StrCat("result ", i, " does not point back to its node"));
        }
        if (Visible(r)) {
          return NodeError(node, absl::StrCat("result ", ValueText(r), " is defined twice"));
        }
        if (options_.require_types && r->type().is_unset()) {
          return NodeError(node, absl::StrCat("result ", ValueText(r), " has no type"));
        }
        Define(r);
      }
    }
    return absl::OkStatus();
  }

  absl::Status ExpectResults(const Node& node, int want) {
    if (node.num_results() == want) return absl::OkStatus();
    return NodeError(node, absl::StrFormat("has %d %s, expected %d", node.num_results(),
                                           Plural(node.num_results(), "result", "results"), want));
  }

  absl::Status VerifyNode(const Node& node) {
    switch (node.kind()) {
      case NodeKind::kCall:
        return VerifyCall(node);
      case NodeKind::kConstant:
        return VerifyConstant(node);
      case NodeKind::kTuple:
        return ExpectResults(node, 1);
      case NodeKind::kGetItem:
        return VerifyGetItem(node);
      case NodeKind::kInvoke:
        return VerifyInvoke(node);
      case NodeKind::kIf:
        return VerifyIf(node);
      case NodeKind::kLoop:
        return VerifyLoop(node);
      case NodeKind::kBuiltin:
        return VerifyBuiltin(node);
    }
    return NodeError(node, "unknown node kind");
  }

  // Operand count, and the container kind of typed operands and results (docs/text_ir.md).
  absl::Status VerifyBuiltin(const Node& node) {
    RETURN_IF_ERROR(ExpectResults(node, 1));
    const Builtin b = node.builtin();
    if (!BuiltinAcceptsOperandCount(b, node.num_operands())) {
      return NodeError(node, absl::StrFormat("'%s' does not take %d operands", BuiltinName(b),
                                             node.num_operands()));
    }
    auto expect = [&](const Type& t, bool want_seq, absl::string_view what) -> absl::Status {
      if (t.is_unset() || (want_seq ? t.is_sequence() : t.is_optional())) return absl::OkStatus();
      return NodeError(node, absl::StrCat(what, " must be ", want_seq ? "a sequence" : "an optional",
                                          ", found ", t.ToString()));
    };
    const Type& result = node.result()->type();
    switch (b) {
      case Builtin::kSeqConstruct:
      case Builtin::kSeqEmpty:
        return expect(result, true, "the result");
      case Builtin::kSeqInsert:
      case Builtin::kSeqErase:
        RETURN_IF_ERROR(expect(result, true, "the result"));
        return expect(node.operand(0)->type(), true, "operand 0");
      case Builtin::kSeqAt:
      case Builtin::kSeqLength:
        return expect(node.operand(0)->type(), true, "operand 0");
      case Builtin::kOptSome:
      case Builtin::kOptNone:
        return expect(result, false, "the result");
      case Builtin::kOptHas:
      case Builtin::kOptGet:
        return expect(node.operand(0)->type(), false, "operand 0");
    }
    return absl::OkStatus();
  }

  absl::Status VerifyCall(const Node& node) {
    const OpDef* op = node.op();
    if (op == nullptr) return NodeError(node, "call has no op");
    if (!op->AcceptsInputCount(node.num_operands())) {
      const int want = static_cast<int>(op->inputs().size());
      return NodeError(node,
                       absl::StrFormat("op '%s' takes %s%d %s, found %d", op->name(),
                                       op->variadic() ? "at least " : "", want,
                                       Plural(want, "operand", "operands"), node.num_operands()));
    }
    if (absl::Status attrs = op->ValidateAttrs(node.attrs()); !attrs.ok()) {
      return NodeError(node, attrs.message());
    }
    for (const AttrSpec& spec : op->attrs()) {
      const AttrValue* v = node.attrs().Find(spec.name);
      if (v == nullptr) {
        return NodeError(node, absl::StrFormat("attribute '%s' is missing (defaults are filled "
                                               "in when the node is built)",
                                               spec.name));
      }
      if (TypeOf(*v) != spec.type) {
        return NodeError(
            node, absl::StrFormat("attribute '%s' has type %s, the schema says %s", spec.name,
                                  AttrTypeName(TypeOf(*v)), AttrTypeName(spec.type)));
      }
    }
    return ExpectResults(node, op->num_outputs());
  }

  // t == data.type(), without building that type (a vector per constant per verification).
  static bool MatchesData(const Type& t, const Tensor& data) {
    if (!t.is_tensor() || t.dtype() != data.dtype() || t.rank() != static_cast<int>(data.shape().size())) {
      return false;
    }
    for (int i = 0; i < t.rank(); ++i) {
      const DimExpr& d = t.shape()[i];
      if (!d.is_constant() || d.constant() != data.shape()[i]) return false;
    }
    return true;
  }

  absl::Status VerifyConstant(const Node& node) {
    RETURN_IF_ERROR(ExpectResults(node, 1));
    if (node.num_operands() != 0) return NodeError(node, "a constant takes no operands");
    const Type& t = node.result(0)->type();
    if (t.is_unset() || MatchesData(t, node.constant_value())) return absl::OkStatus();
    return NodeError(node, absl::StrFormat("constant data of type %s does not match the result "
                                           "type %s",
                                           node.constant_value().type().ToString(), t.ToString()));
  }

  absl::Status VerifyGetItem(const Node& node) {
    RETURN_IF_ERROR(ExpectResults(node, 1));
    if (node.num_operands() != 1) {
      return NodeError(node, absl::StrFormat("takes 1 operand, found %d", node.num_operands()));
    }
    const AttrValue* index = node.attrs().Find("index");
    if (index == nullptr || TypeOf(*index) != AttrType::kInt ||
        node.attrs().entries().size() != 1) {
      return NodeError(node, "needs exactly one attribute, an int 'index'");
    }
    const int64_t i = std::get<int64_t>(*index);
    const Type& t = node.operand(0)->type();
    if (t.is_tensor()) {
      return NodeError(node, absl::StrCat("operand ", ValueText(node.operand(0)),
                                          " is not a tuple: ", t.ToString()));
    }
    if (i < 0 || (t.is_tuple() && i >= static_cast<int64_t>(t.fields().size()))) {
      return NodeError(node, absl::StrFormat("index %d is out of range for %s", i,
                                             t.is_tuple() ? t.ToString() : "a tuple"));
    }
    return absl::OkStatus();
  }

  absl::Status VerifyInvoke(const Node& node) {
    const Function* callee = module_.FindFunction(node.callee());
    if (callee == nullptr) {
      return NodeError(node, absl::StrCat("invoke of undefined function '@", node.callee(), "'"));
    }
    const int params = callee->body().num_params();
    const AttrValue* outputs = node.attrs().Find(kKernelOutputsAttr);
    const AttrValue* shape_func = node.attrs().Find(kShapeFuncAttr);
    for (const auto& [name, value] : node.attrs().entries()) {
      if (name != kKernelOutputsAttr && name != kShapeFuncAttr && name != kShapeFuncMaskAttr) {
        return NodeError(node, absl::StrFormat("invoke takes only the attributes outputs, "
                                               "shape_func and mask, found '%s'", name));
      }
    }
    if (outputs != nullptr) return VerifyKernelInvoke(node, *callee, *outputs);
    if (shape_func != nullptr) return VerifyShapeFuncInvoke(node, *callee);
    if (node.num_operands() != params) {
      return NodeError(node,
                       absl::StrFormat("'@%s' takes %d %s, found %d", node.callee(), params,
                                       Plural(params, "operand", "operands"), node.num_operands()));
    }
    const int results = static_cast<int>(callee->body().results().size());
    if (node.num_results() != results) {
      return NodeError(
          node, absl::StrFormat("'@%s' returns %d %s, but %d %s bound", node.callee(), results,
                                Plural(results, "value", "values"), node.num_results(),
                                Plural(node.num_results(), "is", "are")));
    }
    return absl::OkStatus();
  }

  // invoke @prim(%args..., %outs...) {outputs = k}: k destination operands, no results.
  absl::Status VerifyKernelInvoke(const Node& node, const Function& callee, const AttrValue& k) {
    const int params = callee.body().num_params();
    const int results = static_cast<int>(callee.body().results().size());
    if (TypeOf(k) != AttrType::kInt || std::get<int64_t>(k) != results) {
      return NodeError(node, absl::StrFormat("a kernel invoke of '@%s' needs {outputs = %d}, one "
                                             "destination per result",
                                             node.callee(), results));
    }
    if (node.num_operands() != params + results || node.num_results() != 0) {
      return NodeError(node, absl::StrFormat("a kernel invoke of '@%s' takes %d inputs and %d "
                                             "outputs as operands and binds no values",
                                             node.callee(), params, results));
    }
    for (int i = 0; i < results && !callee.result_types().empty(); ++i) {
      const Type& want = callee.result_types()[i];
      const Type& got = node.operand(params + i)->type();
      if (!got.is_unset() && want.is_tensor() &&
          (!got.is_tensor() || got.dtype() != want.dtype() || got.rank() != want.rank())) {
        return NodeError(node, absl::StrFormat("output %d of '@%s' is %s but the destination is %s",
                                               i, node.callee(), want.ToString(), got.ToString()));
      }
    }
    return absl::OkStatus();
  }

  // %s... = invoke @prim(%args...) {mask = [...], shape_func = true}
  absl::Status VerifyShapeFuncInvoke(const Node& node, const Function& callee) {
    const int params = callee.body().num_params();
    const int results = static_cast<int>(callee.body().results().size());
    const AttrValue* mask = node.attrs().Find(kShapeFuncMaskAttr);
    // The type makes every entry a valid dependence: no range check is left to do here.
    if (mask == nullptr || TypeOf(*mask) != AttrType::kDepList) {
      return NodeError(node, absl::StrFormat("a shape-function invoke of '@%s' needs a mask of "
                                             "type %s (one dependence per parameter), found %s",
                                             node.callee(), AttrTypeName(AttrType::kDepList),
                                             mask == nullptr ? "none" : AttrValueToString(*mask)));
    }
    const size_t entries = std::get<std::vector<InputDep>>(*mask).size();
    if (static_cast<int>(entries) != params) {
      return NodeError(node, absl::StrFormat("the mask %s of a shape-function invoke of '@%s' has "
                                             "%d %s but the callee has %d %s",
                                             AttrValueToString(*mask), node.callee(), entries,
                                             entries == 1 ? "entry" : "entries", params,
                                             params == 1 ? "parameter" : "parameters"));
    }
    // Whether the mask covers what the callee's body derives needs the op families' rules: that
    // is VerifyShapeFunctionMasks (passes/pass/verify_module.h), which the pass manager runs.
    if (node.num_operands() != params || node.num_results() != results) {
      return NodeError(node, absl::StrFormat("a shape-function invoke of '@%s' takes %d operands "
                                             "and binds %d shapes",
                                             node.callee(), params, results));
    }
    return absl::OkStatus();
  }

  absl::Status VerifyIf(const Node& node) {
    if (node.num_operands() != 1) {
      return NodeError(
          node, absl::StrFormat("takes 1 operand (the condition), found %d", node.num_operands()));
    }
    const Type& cond = node.operand(0)->type();
    if (!cond.is_unset()) {
      const bool scalar_like =
          cond.is_tensor() && (!cond.is_static() || (cond.NumElements() == DimExpr(1)));
      if (!cond.is_tensor() || cond.dtype() != DType::kBool || !scalar_like) {
        return NodeError(
            node, absl::StrCat("condition ", ValueText(node.operand(0)),
                               " must be a one-element bool tensor, found ", cond.ToString()));
      }
    }
    for (int r = 0; r < 2; ++r) {
      if (node.region(r)->num_params() != 0) {
        return NodeError(
            node, absl::StrCat(r == 0 ? "then" : "else", "-branch must not have parameters"));
      }
    }
    const size_t then_n = node.region(0)->results().size();
    const size_t else_n = node.region(1)->results().size();
    if (then_n != else_n) {
      return NodeError(node, absl::StrFormat("then-branch yields %d %s but else-branch yields %d",
                                             then_n, Plural(then_n, "value", "values"), else_n));
    }
    return ExpectResults(node, static_cast<int>(then_n));
  }

  absl::Status VerifyLoop(const Node& node) {
    if (node.num_operands() < 2) {
      return NodeError(node, absl::StrFormat("takes a trip count, a condition and the carried "
                                             "values, found %d operands",
                                             node.num_operands()));
    }
    const int carried = node.num_operands() - 2;
    const Block& body = *node.region(0);
    if (body.num_params() != 2 + carried) {
      return NodeError(node, absl::StrFormat("body has %d parameters but needs %d (iteration, "
                                             "condition and %d carried)",
                                             body.num_params(), 2 + carried, carried));
    }
    const int yields = static_cast<int>(body.results().size());
    if (yields < 1 + carried) {
      return NodeError(node, absl::StrFormat("body yields %d values but needs at least %d "
                                             "(condition and %d carried)",
                                             yields, 1 + carried, carried));
    }
    return ExpectResults(node, yields - 1);
  }

  // A declared result dim that infer-types kept over the returned value's own (a parameter's
  // `min(j, k)` returned as a declared `min(k, n)`) holds under the function's assumption that
  // the two are equal, which the VM checks: the result matches under that assumption.
  bool EqualUnderAssumptions(const Type& declared, const Type& actual) const {
    return MergeTypes(declared, actual,
                      [&](const DimExpr& d, const DimExpr& a) -> std::optional<DimExpr> {
                        if (d == a || d.is_unknown() || a.is_unknown()) return d;
                        for (const Assumption& x : function_->assumptions()) {
                          if (x.kind == Assumption::Kind::kEq &&
                              ((x.lhs == a && x.rhs == d) || (x.lhs == d && x.rhs == a))) {
                            return d;
                          }
                        }
                        return std::nullopt;
                      })
        .has_value();
  }

  absl::Status CheckFunctionResults() {
    const std::vector<Type>& declared = function_->result_types();
    const std::vector<Value*>& returned = function_->body().results();
    if (declared.empty()) return absl::OkStatus();  // not declared: nothing to match
    if (declared.size() != returned.size()) {
      return FunctionError(
          absl::StrFormat("declares %d result %s but returns %d %s", declared.size(),
                          Plural(declared.size(), "type", "types"), returned.size(),
                          Plural(returned.size(), "value", "values")));
    }
    if (!options_.require_types) return absl::OkStatus();
    for (size_t i = 0; i < declared.size(); ++i) {
      const Type& actual = returned[i]->type();
      if (!RefineType(declared[i], actual).has_value() && !EqualUnderAssumptions(declared[i], actual)) {
        return FunctionError(
            absl::StrFormat("result %d %s has type %s, but the function declares "
                            "%s",
                            i, ValueText(returned[i]), actual.ToString(), declared[i].ToString()));
      }
    }
    return absl::OkStatus();
  }

  const Module& module_;
  const Function* function_ = nullptr;
  const VerifyOptions& options_;
  ScratchIds<Value> ids_;
  std::vector<char> visible_;  // by id
  std::vector<const Value*> scope_;
  std::vector<size_t> marks_;
};

}  // namespace

absl::Status Verify(const Module& module, const VerifyOptions& options) {
  absl::flat_hash_set<absl::string_view> names;
  for (const auto& f : module.functions()) {
    if (!names.insert(f->name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          FormatLocation(&module, f->loc()), ": function '@", f->name(), "' is defined twice"));
    }
  }
  FunctionVerifier verifier(module, options);
  for (const auto& f : module.functions()) RETURN_IF_ERROR(verifier.Run(*f));
  return absl::OkStatus();
}

}  // namespace hetpass
