// Text IR printer. The output form (parsed back by parser.cc, described in docs/text_ir.md):
//
//   def @name(%p: type, ...) -> type, ... {
//     %r, ... = <expr> : type, ... @device loc("name")
//     return %v, ...
//   }
//
// - Two spaces of indentation per nesting level; region bodies close with `} else {` (if) and
//   `} : types` after the last region.
// - ` : types` only when every result is typed (constants always print their type);
// - A function's assumptions (assumption.h) follow its result types, one per line, indented
//   four spaces: `assume(dyn1 == batch, "reason")`.
//   ` @device` only when a device is set; ` loc("...")` only when the location has a name, or,
//   with PrintOptions::source_locations, ` loc("file":line:col[, "name"])` for a node whose
//   line and file are known.
// - Naming: a value whose name is non-empty and not all digits keeps it (characters outside
//   [A-Za-z0-9_] become '_', a leading digit gets a '_' prefix), made unique per function with a
//   `_1`, `_2`, ... suffix; every other value gets the next number %0, %1, ... Names are given
//   in textual order (a binding's results before the bodies of its regions), so printing is
//   deterministic and print(parse(print(m))) == print(m).
// - Constants with at most max_inline_elements elements print as numbers (a rank-0 constant
//   as one number); larger ones as raw little-endian bytes `0x...` or `elided`. Floats print
//   with the fewest digits that read back to the same value, and always with '.', 'e', inf or
//   nan; float constants holding a NaN print as bytes so the payload survives.
#include "passes/ir/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "passes/ir/op_def.h"

namespace hetpass {
namespace {

void EnsureFloatForm(char* buf, std::string* out) {
  const size_t start = out->size();
  out->append(buf);
  if (out->find_first_of(".eE", start) == std::string::npos) out->append(".0");
}

// Shortest text that reads back to the same double (as AttrValueToString).
void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("nan");
    return;
  }
  if (std::isinf(d)) {
    out->append(d > 0 ? "inf" : "-inf");
    return;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  EnsureFloatForm(buf, out);
}

// Shortest text that reads back to the same float (f32, and f16/bf16 which floats represent
// exactly).
void AppendFloat(float f, std::string* out) {
  if (std::isnan(f) || std::isinf(f)) {
    AppendDouble(f, out);
    return;
  }
  char buf[64];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, static_cast<double>(f));
    if (static_cast<float>(std::strtod(buf, nullptr)) == f) break;
  }
  EnsureFloatForm(buf, out);
}

void AppendElement(const Tensor& t, int64_t i, std::string* out) {
  switch (t.dtype()) {
    case DType::kBool:
      out->append(t.GetInt64(i) != 0 ? "true" : "false");
      return;
    case DType::kF64:
      AppendDouble(t.GetDouble(i), out);
      return;
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      AppendFloat(static_cast<float>(t.GetDouble(i)), out);
      return;
    default:
      absl::StrAppend(out, t.GetInt64(i));
      return;
  }
}

// Elements the number form cannot carry back to the same bits: NaN payloads, and u64 values
// from 2^63 up (the parser reads integers as int64).
bool NeedsHex(const Tensor& t) {
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (IsFloat(t.dtype()) && std::isnan(t.GetDouble(i))) return true;
    if (t.dtype() == DType::kU64 && t.GetInt64(i) < 0) return true;
  }
  return false;
}

void AppendLiteral(const Tensor& t, const PrintOptions& options, std::string* out) {
  const int64_t n = t.num_elements();
  if (n <= options.max_inline_elements && !NeedsHex(t)) {
    if (t.rank() == 0) {
      AppendElement(t, 0, out);
      return;
    }
    out->push_back('[');
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) out->append(", ");
      AppendElement(t, i, out);
    }
    out->push_back(']');
    return;
  }
  if (n > options.max_inline_elements && options.elide_large_constants) {
    out->append("elided");
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  const uint8_t* data = t.data();
  out->reserve(out->size() + 2 + 2 * t.nbytes());
  out->append("0x");
  for (size_t i = 0; i < t.nbytes(); ++i) {
    out->push_back(kHex[data[i] >> 4]);
    out->push_back(kHex[data[i] & 15]);
  }
}

// Attributes equal to the op's schema default are not printed: the parser fills defaults back
// in, so the round trip stays exact and the text shows only what was chosen.
Attrs NonDefaultAttrs(const OpDef& op, const Attrs& attrs) {
  Attrs out;
  for (const auto& [name, value] : attrs.entries()) {
    bool is_default = false;
    for (const AttrSpec& spec : op.attrs()) {
      if (spec.name == name && spec.default_value && *spec.default_value == value) {
        is_default = true;
      }
    }
    if (!is_default) out.Set(name, value);
  }
  return out;
}

bool IsAllDigits(absl::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string Sanitize(absl::string_view name) {
  std::string out;
  out.reserve(name.size() + 1);
  if (name[0] >= '0' && name[0] <= '9') out.push_back('_');
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  return out;
}

}  // namespace

// Names are assigned in the printer's order: the function's parameters, then per binding its
// results, then each region's parameters and bindings. Kept names are stored once; numbered
// values only carry their number (a million-binding function needs a 16-byte entry per value,
// not a string).
void ValueNames::Assign() const {
  assigned_ = true;
  const Function& f = *function_;
  // At least one value per top-level binding: sized once without a walk of its own (a second
  // walk over 100k cold bindings cost more than the table's remaining growth).
  slots_.reserve(f.body().params().size() + f.body().nodes().size());
  for (const auto& p : f.body().params()) Define(p.get());
  DefineBlock(f.body());
}

void ValueNames::DefineBlock(const Block& b) const {
  for (const auto& n : b.nodes()) {
    for (const auto& r : n->results()) Define(r.get());
    for (int i = 0; i < n->num_regions(); ++i) {
      for (const auto& p : n->region(i)->params()) Define(p.get());
      DefineBlock(*n->region(i));
    }
  }
}

void ValueNames::Define(const Value* v) const {
  Slot slot;
  if (!v->name().empty() && !IsAllDigits(v->name())) {
    // Sanitize() never yields an all-digit name, so kept names cannot collide with numbers.
    std::string base = Sanitize(v->name());
    std::string name = base;
    for (int suffix = 1; used_.contains(name); ++suffix) name = absl::StrCat(base, "_", suffix);
    used_.insert(name);
    slot.kept = static_cast<uint32_t>(kept_names_.size());
    kept_names_.push_back(std::move(name));
  } else {
    slot.number = next_number_++;
  }
  slots_[v] = slot;
}

void ValueNames::AppendTo(std::string* out, const Value* v) const {
  if (!assigned_) Assign();
  out->push_back('%');
  auto it = slots_.find(v);
  if (it == slots_.end()) {
    out->append("<undefined>");
  } else if (it->second.number >= 0) {
    char buf[absl::numbers_internal::kFastToBufferSize];
    out->append(buf, absl::numbers_internal::FastIntToBuffer(it->second.number, buf) - buf);
  } else {
    out->append(kept_names_[it->second.kept]);
  }
}

std::string ValueNames::Name(const Value* v) const {
  std::string s;
  AppendTo(&s, v);
  return s;
}

namespace {

class FunctionPrinter {
 public:
  FunctionPrinter(const Function& f, const PrintOptions& options, std::string* out)
      : options_(options), out_(out), names_(f), module_(f.module()) {}

  void Print(const Function& f) {
    absl::StrAppend(out_, "def @", f.name(), "(");
    PrintParams(f.body());
    out_->append(")");
    if (!f.result_types().empty()) {
      out_->append(" -> ");
      for (size_t i = 0; i < f.result_types().size(); ++i) {
        if (i > 0) out_->append(", ");
        out_->append(f.result_types()[i].ToString());
      }
    }
    for (const Assumption& a : f.assumptions()) {
      absl::StrAppend(out_, "\n    assume(", a.Condition(), ", ", AttrValueToString(AttrValue(a.reason)),
                      ")");
    }
    if (!f.attrs().empty()) absl::StrAppend(out_, " attributes ", f.attrs().ToString());
    out_->append(" {\n");
    PrintBody(f.body(), 1, "return");
    out_->append("}\n");
  }

 private:
  void Ref(const Value* v) { names_.AppendTo(out_, v); }

  // The file a node's `loc(...)` names under PrintOptions::source_locations; empty when the
  // option is off or nothing is known (no line, or neither the node nor the module names one).
  std::string SourceFile(const Location& loc) const {
    if (!options_.source_locations || loc.line <= 0) return "";
    if (!loc.file.empty()) return loc.file;
    return module_ != nullptr ? module_->source_name() : "";
  }

  void RefList(const std::vector<Value*>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_->append(", ");
      Ref(values[i]);
    }
  }

  void PrintParams(const Block& block) {
    for (int i = 0; i < block.num_params(); ++i) {
      const Value* p = block.param(i);
      if (i > 0) out_->append(", ");
      Ref(p);
      if (!p->type().is_unset()) absl::StrAppend(out_, ": ", p->type().ToString());
      if (p->device() != DeviceKind::kUnset) absl::StrAppend(out_, " @", DeviceName(p->device()));
    }
  }

  void Indent(int level) { out_->append(2 * level, ' '); }

  void PrintBody(const Block& block, int level, absl::string_view terminator) {
    for (const auto& node : block.nodes()) PrintNode(*node, level);
    Indent(level);
    absl::StrAppend(out_, terminator);
    if (!block.results().empty()) {
      out_->push_back(' ');
      RefList(block.results());
    }
    out_->push_back('\n');
  }

  void PrintNode(const Node& node, int level) {
    Indent(level);
    for (int i = 0; i < node.num_results(); ++i) {
      if (i > 0) out_->append(", ");
      Ref(node.result(i));
    }
    if (node.num_results() > 0) out_->append(" = ");
    switch (node.kind()) {
      case NodeKind::kCall:
        absl::StrAppend(out_, node.op() != nullptr ? node.OpName() : "<null op>");
        out_->push_back('(');
        RefList(node.operands());
        out_->push_back(')');
        if (node.op() != nullptr) {
          const std::string attrs = NonDefaultAttrs(*node.op(), node.attrs()).ToString();
          if (!attrs.empty()) absl::StrAppend(out_, " ", attrs);
        } else if (!node.attrs().empty()) {
          absl::StrAppend(out_, " ", node.attrs().ToString());
        }
        break;
      case NodeKind::kConstant:
        out_->append("constant<");
        AppendLiteral(node.constant_value(), options_, out_);
        out_->push_back('>');
        break;
      case NodeKind::kBuiltin:
        absl::StrAppend(out_, BuiltinName(node.builtin()), "(");
        RefList(node.operands());
        out_->push_back(')');
        break;
      case NodeKind::kTuple:
        out_->append("tuple(");
        RefList(node.operands());
        out_->push_back(')');
        break;
      case NodeKind::kGetItem:
        out_->append("get_item(");
        RefList(node.operands());
        absl::StrAppend(out_, ") ", node.attrs().ToString());
        break;
      case NodeKind::kInvoke:
        absl::StrAppend(out_, "invoke @", node.callee(), "(");
        RefList(node.operands());
        out_->push_back(')');
        if (!node.attrs().empty()) absl::StrAppend(out_, " ", node.attrs().ToString());
        break;
      case NodeKind::kIf:
        out_->append("if (");
        RefList(node.operands());
        out_->append(") {\n");
        PrintBody(*node.region(0), level + 1, "yield");
        Indent(level);
        out_->append("} else {\n");
        PrintBody(*node.region(1), level + 1, "yield");
        Indent(level);
        out_->push_back('}');
        break;
      case NodeKind::kLoop:
        out_->append("loop(");
        RefList(node.operands());
        out_->append(") (");
        PrintParams(*node.region(0));
        out_->append(") {\n");
        PrintBody(*node.region(0), level + 1, "yield");
        Indent(level);
        out_->push_back('}');
        break;
    }
    PrintResultTypes(node);
    if (node.device() != DeviceKind::kUnset) absl::StrAppend(out_, " @", DeviceName(node.device()));
    const Location& loc = node.loc();
    const std::string file = SourceFile(loc);
    if (!file.empty()) {
      absl::StrAppend(out_, " loc(", AttrValueToString(AttrValue(file)), ":", loc.line, ":",
                      loc.col);
      if (!loc.name.empty()) absl::StrAppend(out_, ", ", AttrValueToString(AttrValue(loc.name)));
      out_->push_back(')');
    } else if (!loc.name.empty()) {
      absl::StrAppend(out_, " loc(", AttrValueToString(AttrValue(loc.name)), ")");
    }
    out_->push_back('\n');
  }

  void PrintResultTypes(const Node& node) {
    if (node.num_results() == 0) return;
    bool all_typed = true;
    for (int i = 0; i < node.num_results(); ++i) all_typed &= !node.result(i)->type().is_unset();
    if (!all_typed) {
      // A constant always shows its type (the parser needs it); it is the data's type.
      if (node.kind() == NodeKind::kConstant && node.num_results() == 1) {
        absl::StrAppend(out_, " : ", node.constant_value().type().ToString());
      }
      return;
    }
    out_->append(" : ");
    for (int i = 0; i < node.num_results(); ++i) {
      if (i > 0) out_->append(", ");
      out_->append(node.result(i)->type().ToString());
    }
  }

  const PrintOptions& options_;
  std::string* out_;
  ValueNames names_;
  const Module* module_;
};

}  // namespace

std::string PrintFunction(const Function& function, const PrintOptions& options) {
  std::string out;
  FunctionPrinter(function, options, &out).Print(function);
  return out;
}

std::string PrintModule(const Module& module, const PrintOptions& options) {
  std::string out;
  for (size_t i = 0; i < module.functions().size(); ++i) {
    if (i > 0) out.push_back('\n');
    FunctionPrinter(*module.functions()[i], options, &out).Print(*module.functions()[i]);
  }
  return out;
}

}  // namespace hetpass
