// fold-constants: compile-time evaluation.
//
// Definitions: a binding is foldable when it is an op call and either
//   (a) every operand is a constant and the op has a reference kernel: the kernel runs on the
//       host, fed with the concrete output types from the op's shape rule; or
//   (b) the op's symbolic-value rule gives its integer results contents that are all constants
//       (shape_of of a static tensor, arithmetic and gathers on such shapes): no data needed.
// Walk: program order through every block and region, redirecting operands to folded
// constants as it goes, so chains fold in one sweep. A folded binding is replaced in place by
// one constant binding per result (same names, device and location). Producers that lose their
// last use are left to dce. Results above `max_bytes` are not folded.
// Requires typed IR (run infer-types first); untyped bindings are skipped, never guessed.
#include "passes/transforms/fold_constants.h"

#include "absl/strings/str_cat.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/symbolic_values.h"

namespace hetpass {
namespace {

class FoldConstantsPass : public Pass {
 public:
  explicit FoldConstantsPass(const FoldConstantsOptions& options) : options_(options) {}
  absl::string_view name() const override { return FoldConstantsOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    module_ = &module;
    bool changed = false;
    for (const auto& f : module.functions()) {
      sym_.Clear();
      replace_.clear();
      ASSIGN_OR_RETURN(bool c, FoldBlock(f->body()));
      changed |= c;
    }
    return changed;
  }

 private:
  void Remap(Value*& v) {
    auto it = replace_.find(v);
    if (it != replace_.end()) v = it->second;
  }

  absl::StatusOr<bool> FoldBlock(Block& block) {
    bool changed = false;
    std::vector<std::unique_ptr<Node>>& nodes = block.mutable_nodes();
    std::vector<std::unique_ptr<Node>> out;
    out.reserve(nodes.size());
    for (auto& node : nodes) {
      for (Value*& v : node->mutable_operands()) Remap(v);
      for (int i = 0; i < node->num_regions(); ++i) {
        ASSIGN_OR_RETURN(bool c, FoldBlock(*node->region(i)));
        changed |= c;
      }
      ASSIGN_OR_RETURN(std::optional<std::vector<Tensor>> folded, TryFold(*node));
      if (!folded) {
        out.push_back(std::move(node));
        continue;
      }
      changed = true;
      for (int i = 0; i < node->num_results(); ++i) {
        Value* old = node->result(i);
        auto c = std::make_unique<Node>(NodeKind::kConstant);
        Type t = (*folded)[i].type();
        c->set_constant_value(std::move((*folded)[i]));
        replace_[old] = c->AddResult(std::move(t), old->name());
        c->set_loc(node->loc());
        c->set_device(node->device());
        out.push_back(std::move(c));
      }
      retired_.push_back(std::move(node));  // keep alive: later maps still mention it
    }
    nodes.clear();
    for (auto& n : out) block.Append(std::move(n));
    for (Value*& v : block.mutable_results()) Remap(v);
    return changed;
  }

  absl::StatusOr<std::optional<std::vector<Tensor>>> TryFold(const Node& node) {
    using Result = std::optional<std::vector<Tensor>>;
    if (node.kind() != NodeKind::kCall) return Result();
    for (const Value* v : node.operands()) {
      if (!v->type().is_tensor()) return Result();
    }
    for (const auto& r : node.results()) {
      if (!r->type().is_tensor()) return Result();
    }
    const OpDef& op = *node.op();
    if (op.impure()) return Result();  // a random draw is not a constant
    bool all_constant = true;
    for (const Value* v : node.operands()) all_constant &= ConstantData(v) != nullptr;
    if (all_constant && op.reference()) return FoldByKernel(node);
    sym_.Propagate(node);
    return FoldSymbolic(node);
  }

  absl::StatusOr<std::optional<std::vector<Tensor>>> FoldByKernel(const Node& node) {
    using Result = std::optional<std::vector<Tensor>>;
    const OpDef& op = *node.op();
    std::vector<Tensor> inputs;
    std::vector<ShapeInput> shape_inputs;
    for (const Value* v : node.operands()) {
      inputs.push_back(*ConstantData(v));
      shape_inputs.push_back(ShapeInput{inputs.back().type(), nullptr, nullptr});
    }
    for (size_t i = 0; i < inputs.size(); ++i) shape_inputs[i].value = &inputs[i];
    absl::StatusOr<std::vector<Type>> types = op.InferTypes(node.attrs(), shape_inputs);
    if (!types.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(NodeContext(module_, node),
                                                     types.status().message()));
    }
    for (const Type& t : *types) {
      if (!t.is_static()) return Result();
      if (t.NumBytes().constant() > options_.max_bytes) return Result();
    }
    absl::StatusOr<std::vector<Tensor>> out = op.reference()(inputs, node.attrs(), *types);
    if (!out.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(NodeContext(module_, node), "while folding: ", out.status().message()));
    }
    if (out->size() != types->size()) {
      return absl::InternalError(absl::StrCat(NodeContext(module_, node),
                                              "reference kernel returned the wrong result count"));
    }
    return Result(*std::move(out));
  }

  std::optional<std::vector<Tensor>> FoldSymbolic(const Node& node) {
    std::vector<Tensor> out;
    for (const auto& r : node.results()) {
      const std::vector<DimExpr>* vals = sym_.Find(r.get());
      const Type& t = r->type();
      if (vals == nullptr || !t.is_static()) return std::nullopt;
      std::vector<int64_t> ints;
      for (const DimExpr& d : *vals) {
        if (!d.is_constant()) return std::nullopt;
        ints.push_back(d.constant());
      }
      std::vector<int64_t> shape;
      for (const DimExpr& d : t.shape()) shape.push_back(d.constant());
      out.push_back(Tensor::FromInt64s(t.dtype(), std::move(shape), ints));
    }
    return out;
  }

  FoldConstantsOptions options_;
  Module* module_ = nullptr;
  SymbolicValues sym_;
  absl::flat_hash_map<const Value*, Value*> replace_;
  std::vector<std::unique_ptr<Node>> retired_;
};

}  // namespace

std::unique_ptr<Pass> CreateFoldConstantsPass(const FoldConstantsOptions& options) {
  return std::make_unique<FoldConstantsPass>(options);
}

}  // namespace hetpass
