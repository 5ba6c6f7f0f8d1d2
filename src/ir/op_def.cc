// The op-definition machinery (op_def.h): OpDef, its builder, ShapeContext and the registry
// container. The built-in ops and the global registry are src/shape_funcs/register_all.cc's.
#include "passes/ir/op_def.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"

namespace hetpass {

absl::string_view OpRoleName(OpRole r) {
  switch (r) {
    case OpRole::kCompute: return "compute";
    case OpRole::kShapeQuery: return "shape-query";
    case OpRole::kDeviceCopy: return "device-copy";
    case OpRole::kAllocStorage: return "alloc-storage";
    case OpRole::kAllocTensor: return "alloc-tensor";
    case OpRole::kAllocTensorDyn: return "alloc-tensor-dyn";
    case OpRole::kKill: return "kill";
  }
  return "<bad role>";
}

absl::string_view PlacementName(Placement p) {
  switch (p) {
    case Placement::kAnywhere: return "anywhere";
    case Placement::kTarget: return "target";
    case Placement::kHost: return "host";
  }
  return "<bad placement>";
}

absl::string_view FusionPatternName(FusionPattern p) {
  switch (p) {
#define HETPASS_FUSION_PATTERN(e, name) \
  case FusionPattern::e:                \
    return name;
#include "passes/ir/fusion_patterns.def"
#undef HETPASS_FUSION_PATTERN
  }
  return "<bad pattern>";
}

// ---------------------------------------------------------------------------------------------
// ShapeContext

ShapeContext::ShapeContext(const OpDef& op, const Attrs& attrs, std::vector<ShapeInput> inputs,
                           bool enforce_mask)
    : op_(op),
      attrs_(attrs),
      inputs_(std::move(inputs)),
      enforce_mask_(enforce_mask),
      accessed_(inputs_.size(), InputDep::kNone) {}

InputDep ShapeContext::accessed(int i) const {
  return i >= 0 && i < num_inputs() ? accessed_[i] : InputDep::kNone;
}

absl::Status ShapeContext::CheckAccess(int i, bool value_access) {
  if (i < 0 || i >= num_inputs()) {
    return Error(absl::StrFormat("shape rule asked for input %d of %d", i, num_inputs()));
  }
  accessed_[i] = JoinDeps(accessed_[i], value_access ? InputDep::kValue : InputDep::kShape);
  if (!enforce_mask_) return absl::OkStatus();
  const InputDep dep = op_.dep(i);
  const bool allowed = value_access ? NeedsValue(dep) : NeedsShape(dep);
  if (allowed) return absl::OkStatus();
  std::string msg = absl::StrFormat(
      "shape rule read the %s of input %d '%s', but its dependence mask is '%s'",
      value_access ? "values" : "shape", i, op_.input(i).name, InputDepName(dep));
  violations_.push_back(msg);
  return absl::FailedPreconditionError(absl::StrCat("op '", op_.name(), "': ", msg));
}

absl::StatusOr<absl::Span<const DimExpr>> ShapeContext::Shape(int i) {
  RETURN_IF_ERROR(CheckAccess(i, /*value_access=*/false));
  return absl::Span<const DimExpr>(inputs_[i].type.shape());
}

absl::StatusOr<std::optional<std::vector<DimExpr>>> ShapeContext::IntValues(int i) {
  RETURN_IF_ERROR(CheckAccess(i, /*value_access=*/true));
  const ShapeInput& in = inputs_[i];
  if (in.value != nullptr) {
    std::vector<DimExpr> out;
    out.reserve(in.value->num_elements());
    for (int64_t k = 0; k < in.value->num_elements(); ++k) out.push_back(in.value->GetInt64(k));
    return std::optional<std::vector<DimExpr>>(std::move(out));
  }
  if (in.sym_value != nullptr) {
    if (IsFloat(in.type.dtype())) {
      // Integers seen through a cast to float (symbolic_values.cc): the float holds each one
      // exactly only up to its integer range (2^24 in f32), which the VM then checks. Without
      // an assumption sink the values are not known.
      const int bits = in.type.dtype() == DType::kF64 ? 53
                       : in.type.dtype() == DType::kF32 ? 24
                       : in.type.dtype() == DType::kF16 ? 11
                                                        : 8;  // bf16
      if (assumptions_ == nullptr) return std::optional<std::vector<DimExpr>>();
      for (const DimExpr& d : *in.sym_value) {
        if (d.is_constant()) continue;
        Assume(Assumption::Kind::kLe, d, DimExpr(int64_t{1} << bits),
               absl::StrFormat("input %d '%s' holds %s as %s, exact up to 2^%d", i,
                               op_.input(i).name, d.ToString(), DTypeName(in.type.dtype()), bits));
      }
    }
    return std::optional<std::vector<DimExpr>>(*in.sym_value);
  }
  return std::optional<std::vector<DimExpr>>();
}

absl::StatusOr<DimExpr> ShapeContext::NumValues(int i) {
  RETURN_IF_ERROR(CheckAccess(i, /*value_access=*/true));
  return inputs_[i].type.NumElements();
}

absl::StatusOr<std::optional<std::vector<double>>> ShapeContext::FloatValues(int i) {
  RETURN_IF_ERROR(CheckAccess(i, /*value_access=*/true));
  const ShapeInput& in = inputs_[i];
  if (in.value != nullptr) return std::optional<std::vector<double>>(in.value->ToDoubles());
  if (in.sym_value != nullptr) {
    std::vector<double> out;
    for (const DimExpr& d : *in.sym_value) {
      if (!d.is_constant()) return std::optional<std::vector<double>>();
      out.push_back(static_cast<double>(d.constant()));
    }
    return std::optional<std::vector<double>>(std::move(out));
  }
  return std::optional<std::vector<double>>();
}

absl::Status ShapeContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat("op '", op_.name(), "': ", message));
}

void ShapeContext::Assume(Assumption::Kind kind, DimExpr lhs, DimExpr rhs,
                          absl::string_view why) const {
  if (assumptions_ == nullptr) return;
  Assumption a;
  a.kind = kind;
  a.lhs = std::move(lhs);
  a.rhs = std::move(rhs);
  a.reason = absl::StrCat("op '", op_.name(), "': ", why);
  assumptions_->push_back(std::move(a));
}

// ---------------------------------------------------------------------------------------------
// OpDef

bool OpDef::AcceptsInputCount(int n) const {
  const int declared = static_cast<int>(inputs_.size());
  return variadic_ ? n >= declared : n == declared;
}

const InputSpec& OpDef::input(int i) const {
  const int last = static_cast<int>(inputs_.size()) - 1;
  return inputs_[std::min(i, last)];
}

bool OpDef::needs_values() const {
  for (const InputSpec& s : inputs_) {
    if (NeedsValue(s.dep)) return true;
  }
  return false;
}

// The schema entry of `name`, or the error naming the known ones.
absl::StatusOr<const AttrSpec*> OpDef::FindAttrSpec(absl::string_view name) const {
  for (const AttrSpec& s : attrs_) {
    if (s.name == name) return &s;
  }
  std::vector<std::string> known;
  for (const AttrSpec& s : attrs_) known.push_back(s.name);
  return absl::InvalidArgumentError(absl::StrFormat("op '%s' has no attribute '%s' (known: %s)",
                                                    name_, name,
                                                    known.empty() ? "none" : absl::StrJoin(known, ", ")));
}

namespace {

// Ints are accepted for a float attribute, and an int list (the text form of an empty list
// included) for a float list.
bool CoercesTo(AttrType given, AttrType wanted) {
  return (wanted == AttrType::kFloat && given == AttrType::kInt) ||
         (wanted == AttrType::kFloatList && given == AttrType::kIntList);
}

}  // namespace

absl::Status OpDef::AttrTypeError(absl::string_view name, const AttrSpec& spec,
                                  const AttrValue& value) const {
  return absl::InvalidArgumentError(absl::StrFormat("attribute '%s' of op '%s' must be of type %s, got %s",
                                                    name, name_, AttrTypeName(spec.type),
                                                    AttrValueToString(value)));
}

absl::Status OpDef::MissingAttrError(const AttrSpec& spec) const {
  return absl::InvalidArgumentError(absl::StrFormat("op '%s' needs attribute '%s' of type %s", name_,
                                                    spec.name, AttrTypeName(spec.type)));
}

absl::StatusOr<Attrs> OpDef::CheckAttrs(const Attrs& attrs) const {
  Attrs out;
  for (const auto& [name, value] : attrs.entries()) {
    ASSIGN_OR_RETURN(const AttrSpec* spec, FindAttrSpec(name));
    AttrValue v = value;
    if (spec->type == AttrType::kFloat && TypeOf(v) == AttrType::kInt) {
      v = static_cast<double>(std::get<int64_t>(v));
    } else if (spec->type == AttrType::kFloatList && TypeOf(v) == AttrType::kIntList) {
      const auto& ints = std::get<std::vector<int64_t>>(v);
      v = std::vector<double>(ints.begin(), ints.end());
    }
    if (TypeOf(v) != spec->type) return AttrTypeError(name, *spec, value);
    out.Set(name, std::move(v));
  }
  for (const AttrSpec& s : attrs_) {
    if (out.Has(s.name)) continue;
    if (!s.default_value) return MissingAttrError(s);
    out.Set(s.name, *s.default_value);
  }
  return out;
}

absl::Status OpDef::ValidateAttrs(const Attrs& attrs) const {
  for (const auto& [name, value] : attrs.entries()) {
    ASSIGN_OR_RETURN(const AttrSpec* spec, FindAttrSpec(name));
    const AttrType given = TypeOf(value);
    if (given != spec->type && !CoercesTo(given, spec->type)) return AttrTypeError(name, *spec, value);
  }
  for (const AttrSpec& s : attrs_) {
    if (!s.default_value && !attrs.Has(s.name)) return MissingAttrError(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Type>> OpDef::InferTypes(const Attrs& attrs,
                                                    std::vector<ShapeInput> inputs,
                                                    std::vector<Assumption>* assumptions) const {
  if (!AcceptsInputCount(static_cast<int>(inputs.size()))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "op '%s' takes %s%d inputs, got %d", name_, variadic_ ? "at least " : "",
        inputs_.size(), inputs.size()));
  }
  if (typed_by_declaration_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("op '%s' is typed by its declaration and has no shape rule", name_));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input(static_cast<int>(i)).storage) {
      if (!inputs[i].type.is_storage()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("op '%s': input %d '%s' must be storage, got %s", name_, i,
                            input(static_cast<int>(i)).name, inputs[i].type.ToString()));
      }
      continue;
    }
    if (!inputs[i].type.is_tensor()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("op '%s': input %d '%s' must be a tensor, got %s", name_, i,
                          input(static_cast<int>(i)).name, inputs[i].type.ToString()));
    }
  }
  ShapeContext ctx(*this, attrs, std::move(inputs));
  ctx.set_assumption_sink(assumptions);
  ASSIGN_OR_RETURN(std::vector<Type> out, shape_rule_(ctx));
  if (static_cast<int>(out.size()) != num_outputs_) {
    return absl::InternalError(absl::StrFormat("op '%s': shape rule returned %d types, expected %d",
                                               name_, out.size(), num_outputs_));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// OpDefBuilder

OpDefBuilder& OpDefBuilder::Input(std::string name, InputDep dep) {
  def_->inputs_.push_back(InputSpec{std::move(name), dep});
  return *this;
}
OpDefBuilder& OpDefBuilder::VariadicInput(std::string name, InputDep dep) {
  def_->inputs_.push_back(InputSpec{std::move(name), dep});
  def_->variadic_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type) {
  def_->attrs_.push_back(AttrSpec{std::move(name), type, std::nullopt});
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type, AttrValue default_value) {
  def_->attrs_.push_back(AttrSpec{std::move(name), type, std::move(default_value)});
  return *this;
}
OpDefBuilder& OpDefBuilder::Outputs(int n) {
  def_->num_outputs_ = n;
  return *this;
}
OpDefBuilder& OpDefBuilder::Pattern(FusionPattern p) {
  def_->pattern_ = p;
  return *this;
}
OpDefBuilder& OpDefBuilder::Impure() {
  def_->impure_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::DataDependentOutputShape() {
  def_->data_dependent_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::DataDependentOutputShape(std::string counter) {
  def_->data_dependent_ = true;
  def_->shape_counter_ = std::move(counter);
  return *this;
}
OpDefBuilder& OpDefBuilder::StorageInput(std::string name) {
  def_->inputs_.push_back(InputSpec{std::move(name), InputDep::kNone, /*storage=*/true});
  return *this;
}
OpDefBuilder& OpDefBuilder::TypedByDeclaration() {
  def_->typed_by_declaration_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::View() {
  def_->view_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Role(OpRole role) {
  def_->role_ = role;
  return *this;
}
OpDefBuilder& OpDefBuilder::Placed(Placement placement) {
  def_->placement_override_ = placement;
  return *this;
}
OpDefBuilder& OpDefBuilder::Doc(std::string text) {
  def_->doc_ = std::move(text);
  return *this;
}
OpDefBuilder& OpDefBuilder::Rule(ShapeRule rule) {
  def_->shape_rule_ = std::move(rule);
  return *this;
}
OpDefBuilder& OpDefBuilder::SymbolicValues(SymbolicValueRule rule) {
  def_->symbolic_value_rule_ = std::move(rule);
  return *this;
}
OpDefBuilder& OpDefBuilder::Reference(ReferenceKernel kernel) {
  def_->reference_ = std::move(kernel);
  return *this;
}

// ---------------------------------------------------------------------------------------------
// OpRegistry

OpDefBuilder OpRegistry::Builder::Register(std::string name) {
  defs_.push_back(std::unique_ptr<OpDef>(new OpDef()));
  defs_.back()->name_ = std::move(name);
  return OpDefBuilder(defs_.back().get());
}

absl::StatusOr<std::unique_ptr<OpRegistry>> OpRegistry::Builder::Build() {
  std::unique_ptr<OpRegistry> reg(new OpRegistry());
  std::sort(defs_.begin(), defs_.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  for (auto& d : defs_) {
    if (!d->shape_rule_ && !d->typed_by_declaration_) {
      return absl::InternalError(absl::StrCat("op '", d->name(), "' has no shape rule"));
    }
    if (!d->shape_counter_.empty() && std::none_of(defs_.begin(), defs_.end(), [&](const auto& o) {
          return o->name() == d->shape_counter_;
        })) {
      return absl::InternalError(absl::StrCat("op '", d->name(), "' names an unknown counter '",
                                              d->shape_counter_, "'"));
    }
    // Cheap data-movement and elementwise kernels exist everywhere; the rest run on the target.
    switch (d->pattern_) {
      case FusionPattern::kElementwise:
      case FusionPattern::kBroadcast:
      case FusionPattern::kInjective:
        d->placement_ = Placement::kAnywhere;
        break;
      default:
        d->placement_ = Placement::kTarget;
    }
    if (d->placement_override_) d->placement_ = *d->placement_override_;
    if (d->role_ == OpRole::kShapeQuery) d->placement_ = Placement::kHost;
    if (!reg->by_name_.emplace(d->name(), d.get()).second) {
      return absl::InternalError(absl::StrCat("op '", d->name(), "' registered twice"));
    }
    if (d->role_ != OpRole::kCompute &&
        std::count_if(defs_.begin(), defs_.end(), [&](const auto& o) { return o->role_ == d->role_; }) > 1) {
      return absl::InternalError(absl::StrCat("op '", d->name(), "': role ", OpRoleName(d->role_),
                                              " belongs to more than one op (FindByRole needs one)"));
    }
  }
  reg->ops_ = std::move(defs_);
  reg->IndexRoles();
  return reg;
}

const OpDef* OpRegistry::Find(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const OpDef* OpRegistry::FindByRole(OpRole role) const {
  const size_t r = static_cast<size_t>(role);
  return role == OpRole::kCompute || r >= by_role_.size() ? nullptr : by_role_[r];
}

void OpRegistry::IndexRoles() {
  by_role_.clear();
  std::vector<int> count;
  for (const auto& d : ops_) {
    const size_t r = static_cast<size_t>(d->role());
    if (r >= by_role_.size()) {
      by_role_.resize(r + 1, nullptr);
      count.resize(r + 1, 0);
    }
    // A role two ops have finds neither (Build() rejects this; a clone may not).
    by_role_[r] = ++count[r] == 1 ? d.get() : nullptr;
  }
}

std::unique_ptr<OpRegistry> OpRegistry::CloneWith(const std::function<void(OpDef&)>& edit) const {
  std::unique_ptr<OpRegistry> reg(new OpRegistry());
  for (const auto& d : ops_) {
    auto copy = std::make_unique<OpDef>(*d);
    edit(*copy);
    reg->by_name_.emplace(copy->name(), copy.get());
    reg->ops_.push_back(std::move(copy));
  }
  reg->IndexRoles();
  return reg;
}

void OpRegistry::SetDep(OpDef& def, int input, InputDep dep) { def.inputs_[input].dep = dep; }

void OpRegistry::SetShapeCounter(OpDef& def, std::string counter) {
  def.shape_counter_ = std::move(counter);
}

std::string OpRegistry::Describe() const {
  std::string out;
  for (const auto& d : ops_) {
    std::vector<std::string> ins;
    for (size_t i = 0; i < d->inputs().size(); ++i) {
      const bool rep = d->variadic() && i + 1 == d->inputs().size();
      ins.push_back(absl::StrCat(d->inputs()[i].name, rep ? "..." : "", ":",
                                 InputDepName(d->inputs()[i].dep)));
    }
    std::vector<std::string> attrs;
    for (const AttrSpec& a : d->attrs()) {
      attrs.push_back(absl::StrCat(a.name, ":", AttrTypeName(a.type),
                                   a.default_value ? absl::StrCat(" = ", AttrValueToString(
                                                                             *a.default_value))
                                                   : ""));
    }
    absl::StrAppendFormat(&out,
                          "%-22s inputs(%s) attrs(%s) outputs=%d pattern=%s placement=%s%s "
                          "out-shape=%s\n",
                          d->name(), absl::StrJoin(ins, ", "), absl::StrJoin(attrs, ", "),
                          d->num_outputs(), FusionPatternName(d->pattern()),
                          PlacementName(d->placement()),
                          d->role() == OpRole::kCompute ? ""
                                                        : absl::StrCat(" role=", OpRoleName(d->role())),
                          d->data_dependent_output_shape() ? "data-dependent"
                          : d->needs_values()              ? "value-dependent"
                                                           : "from-shapes");
  }
  return out;
}

}  // namespace hetpass
