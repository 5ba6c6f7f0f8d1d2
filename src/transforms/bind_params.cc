// bind-params: parameters with values become constants.
//
// Phase 1  Collect the values to bind: the options' map, else the function's param_values().
//          Every name must be a parameter of the function (error otherwise, listing them).
// Phase 2  Check each value against its parameter's type: same dtype and rank; every dim
//          equal or `?`. A parameter of symbolic shape cannot be bound (its symbols may be
//          shared with other values); that is an error naming the parameter and the dim.
// Phase 3  For each bound parameter, in parameter order, insert a constant binding named like
//          the parameter at the top of the body, redirect every use, remove the parameter.
//          Constants come in parameter order so that IR built with constants directly, in
//          the same order, is identical (tested).
#include "passes/transforms/bind_params.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

class BindParamsPass : public Pass {
 public:
  explicit BindParamsPass(BindParamsOptions options) : options_(std::move(options)) {}
  absl::string_view name() const override { return BindParamsOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    Function* f = module.FindFunction(options_.function);
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bind-params: no function @%s in the module", options_.function));
    }
    std::map<std::string, Tensor> values =
        options_.params.empty() ? f->param_values() : options_.params;
    if (!options_.only.empty()) {
      std::map<std::string, Tensor> kept;
      for (const std::string& name : options_.only) {
        auto it = values.find(name);
        if (it == values.end()) {
          return absl::InvalidArgumentError(
              absl::StrFormat("bind-params: no value given for parameter '%s'", name));
        }
        kept.insert(*it);
      }
      values = std::move(kept);
    }
    if (values.empty()) return false;

    Block& body = f->body();
    std::vector<std::string> param_names;
    for (const auto& p : body.params()) param_names.push_back(p->name());
    for (const auto& [name, tensor] : values) {
      if (std::find(param_names.begin(), param_names.end(), name) == param_names.end()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "bind-params: @%s has no parameter '%s' (parameters: %s)", f->name(), name,
            absl::StrJoin(param_names, ", ")));
      }
    }

    absl::flat_hash_map<const Value*, Value*> replace;
    std::vector<std::unique_ptr<Node>> constants;
    for (int i = 0; i < body.num_params(); ++i) {
      Value* p = body.param(i);
      auto it = values.find(p->name());
      if (it == values.end()) continue;
      RETURN_IF_ERROR(CheckCompatible(*f, *p, it->second));
      auto node = std::make_unique<Node>(NodeKind::kConstant);
      node->set_constant_value(it->second);
      replace[p] = node->AddResult(it->second.type(), p->name());
      node->set_loc(f->loc());
      constants.push_back(std::move(node));
    }
    // Insert constants first, in parameter order, then redirect uses and drop the params.
    std::vector<std::unique_ptr<Node>>& nodes = body.mutable_nodes();
    std::vector<std::unique_ptr<Node>> rebuilt;
    rebuilt.reserve(constants.size() + nodes.size());
    for (auto& c : constants) rebuilt.push_back(std::move(c));
    for (auto& n : nodes) rebuilt.push_back(std::move(n));
    nodes.clear();
    for (auto& n : rebuilt) body.Append(std::move(n));
    ReplaceUses(body, replace);
    for (int i = body.num_params() - 1; i >= 0; --i) {
      if (replace.contains(body.param(i))) {
        f->param_values().erase(body.param(i)->name());
        body.RemoveParam(i);
      }
    }
    return true;
  }

 private:
  absl::Status CheckCompatible(const Function& f, const Value& p, const Tensor& t) {
    const Type& type = p.type();
    auto mismatch = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "bind-params: value for parameter %%%s of @%s has type %s but the parameter is %s: %s",
          p.name(), f.name(), t.type().ToString(), type.ToString(), why));
    };
    if (type.is_unset()) return absl::OkStatus();
    if (!type.is_tensor()) return mismatch("only tensor parameters can be bound");
    if (type.dtype() != t.dtype()) return mismatch("dtypes differ");
    if (type.rank() != t.rank()) return mismatch("ranks differ");
    for (int d = 0; d < type.rank(); ++d) {
      const DimExpr& dim = type.shape()[d];
      if (dim.is_unknown()) continue;
      if (!dim.is_constant()) {
        return mismatch(absl::StrCat("dimension ", d, " is symbolic (", dim.ToString(),
                                     "); bind only parameters of static shape"));
      }
      if (dim.constant() != t.shape()[d]) return mismatch(absl::StrCat("dimension ", d, " differs"));
    }
    return absl::OkStatus();
  }

  BindParamsOptions options_;
};

}  // namespace

std::unique_ptr<Pass> CreateBindParamsPass(const BindParamsOptions& options) {
  return std::make_unique<BindParamsPass>(options);
}

}  // namespace hetpass
