#include "passes/ir/ir.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/op_def.h"
#include "passes/support/status_macros.h"

namespace hetpass {

absl::string_view NodeKindName(NodeKind k) {
  switch (k) {
#define HETPASS_NODE_KIND(e, keyword, regions) \
  case NodeKind::e:                            \
    return keyword;
#include "passes/ir/node_kinds.def"
#undef HETPASS_NODE_KIND
  }
  return "<bad node kind>";
}

int NodeKindNumRegions(NodeKind k) {
  switch (k) {
#define HETPASS_NODE_KIND(e, keyword, regions) \
  case NodeKind::e:                            \
    return regions;
#include "passes/ir/node_kinds.def"
#undef HETPASS_NODE_KIND
  }
  return 0;
}

absl::string_view BuiltinName(Builtin b) {
  switch (b) {
#define HETPASS_BUILTIN(e, name, min_operands, max_operands) \
  case Builtin::e:                                           \
    return name;
#include "passes/ir/builtins.def"
#undef HETPASS_BUILTIN
  }
  return "<bad builtin>";
}

std::optional<Builtin> ParseBuiltin(absl::string_view text) {
#define HETPASS_BUILTIN(e, name, min_operands, max_operands) \
  if (text == name) return Builtin::e;
#include "passes/ir/builtins.def"
#undef HETPASS_BUILTIN
  return std::nullopt;
}

bool BuiltinAcceptsOperandCount(Builtin b, int count) {
  switch (b) {
#define HETPASS_BUILTIN(e, name, min_operands, max_operands) \
  case Builtin::e:                                           \
    return count >= (min_operands) && count <= (max_operands);
#include "passes/ir/builtins.def"
#undef HETPASS_BUILTIN
  }
  return false;
}

absl::string_view DeviceName(DeviceKind d) {
  switch (d) {
#define HETPASS_DEVICE(e, name, accel) \
  case DeviceKind::e:                  \
    return name;
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
  }
  return "<bad device>";
}

std::optional<DeviceKind> ParseDevice(absl::string_view text) {
#define HETPASS_DEVICE(e, name, accel) \
  if (text == name && text != "") return DeviceKind::e;
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
  return std::nullopt;
}

bool IsAccelerator(DeviceKind d) {
  switch (d) {
#define HETPASS_DEVICE(e, name, accel) \
  case DeviceKind::e:                  \
    return accel;
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
  }
  return false;
}

DeviceKind Value::device() const {
  return producer_ != nullptr ? producer_->device() : param_device_;
}

Value* Block::AddParam(Type type, std::string name) {
  std::unique_ptr<Value> v(new Value(std::move(type), std::move(name)));
  v->param_block_ = this;
  v->index_ = static_cast<int>(params_.size());
  params_.push_back(std::move(v));
  return params_.back().get();
}

void Block::RemoveParam(int i) {
  params_.erase(params_.begin() + i);
  for (size_t j = i; j < params_.size(); ++j) params_[j]->index_ = static_cast<int>(j);
}

Node* Block::Append(std::unique_ptr<Node> node) {
  node->parent_ = this;
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

absl::string_view Node::OpName() const {
  if (kind_ == NodeKind::kCall && op_ != nullptr) return op_->name();
  if (kind_ == NodeKind::kBuiltin) return BuiltinName(builtin_);
  return NodeKindName(kind_);
}

Value* Node::AddResult(Type type, std::string name) {
  std::unique_ptr<Value> v(new Value(std::move(type), std::move(name)));
  v->producer_ = this;
  v->index_ = static_cast<int>(results_.size());
  results_.push_back(std::move(v));
  return results_.back().get();
}

Block* Node::AddRegion() {
  std::vector<std::unique_ptr<Block>>& regions = cold().regions;
  regions.push_back(std::make_unique<Block>());
  regions.back()->parent_node_ = this;
  return regions.back().get();
}

void Node::set_loc(Location loc) {
  // A node without a location keeps no out-of-line part for it.
  if (!cold_ && loc.line == 0 && loc.col == 0 && loc.name.empty() && loc.file.empty()) return;
  cold().loc = std::move(loc);
}

const std::string& Node::EmptyString() {
  static const std::string* const empty = new std::string();
  return *empty;
}

const Tensor& Node::EmptyTensor() {
  static const Tensor* const empty = new Tensor();
  return *empty;
}

const Location& Node::EmptyLocation() {
  static const Location* const empty = new Location();
  return *empty;
}

Function::Function(std::string name) : name_(std::move(name)) {
  body_.parent_function_ = this;
}

Function* Module::AddFunction(std::string name) {
  functions_.push_back(std::make_unique<Function>(std::move(name)));
  functions_.back()->module_ = this;
  return functions_.back().get();
}

Function* Module::FindFunction(absl::string_view name) const {
  auto valid = [&](size_t i) { return i < functions_.size() && functions_[i]->name() == name; };
  if (index_.size() == functions_.size()) {
    auto it = index_.find(name);
    if (it == index_.end()) return nullptr;  // consistent index: the name is absent
    if (valid(it->second)) return functions_[it->second].get();
  }
  // Stale: rebuild (the first function of a name wins, as a scan would; duplicate names make
  // the sizes differ, so such modules fall back to a scan).
  index_.clear();
  for (size_t i = 0; i < functions_.size(); ++i) index_.emplace(functions_[i]->name(), i);
  if (index_.size() != functions_.size()) {
    for (const auto& f : functions_) {
      if (f->name() == name) return f.get();
    }
    return nullptr;
  }
  auto it = index_.find(name);
  return it != index_.end() && valid(it->second) ? functions_[it->second].get() : nullptr;
}

void Function::set_name(std::string n) {
  name_ = std::move(n);
  if (module_ != nullptr) module_->index_.clear();
}

bool IsPrimitive(const Function& f) {
  const AttrValue* v = f.attrs().Find(kPrimitiveAttr);
  return v != nullptr && TypeOf(*v) == AttrType::kBool && std::get<bool>(*v);
}

bool IsKernelInvoke(const Node& n) {
  return n.kind() == NodeKind::kInvoke && n.attrs().Has(kKernelOutputsAttr);
}

bool IsShapeFunctionInvoke(const Node& n) {
  if (n.kind() != NodeKind::kInvoke) return false;  // before the attribute lookup: most nodes
  const AttrValue* v = n.attrs().Find(kShapeFuncAttr);
  return v != nullptr && TypeOf(*v) == AttrType::kBool && std::get<bool>(*v);
}

const std::vector<InputDep>* ShapeFunctionMask(const Node& n) {
  if (!IsShapeFunctionInvoke(n)) return nullptr;
  const AttrValue* v = n.attrs().Find(kShapeFuncMaskAttr);
  return v != nullptr && TypeOf(*v) == AttrType::kDepList ? &std::get<std::vector<InputDep>>(*v)
                                                         : nullptr;
}

bool IsPlainInvoke(const Node& n) {
  return n.kind() == NodeKind::kInvoke && !n.attrs().Has(kKernelOutputsAttr) &&
         !n.attrs().Has(kShapeFuncAttr);
}

std::string FormatLocation(const Module* module, const Location& loc) {
  std::string out;
  if (loc.line > 0) {
    const std::string file =
        !loc.file.empty() ? loc.file
        : (module != nullptr && !module->source_name().empty()) ? module->source_name()
                                                               : "<input>";
    out = absl::StrFormat("%s:%d:%d", file, loc.line, loc.col);
  }
  if (!loc.name.empty()) {
    if (!out.empty()) out += " ";
    absl::StrAppend(&out, out.empty() ? "node '" : "(node '", loc.name,
                    out.empty() ? "'" : "')");
  }
  return out.empty() ? "<unknown location>" : out;
}

std::string NodeContext(const Module* module, const Node& node) {
  std::string values;
  for (int i = 0; i < node.num_results(); ++i) {
    const std::string& name = node.result(i)->name();
    absl::StrAppend(&values, i ? ", " : " ",
                    name.empty() ? absl::StrCat("<result ", i, ">") : absl::StrCat("%", name));
  }
  return absl::StrCat(FormatLocation(module, node.loc()), ": ", node.OpName(), values, ": ");
}

absl::flat_hash_map<const Block*, std::string> RegionNames(const Function& f) {
  absl::flat_hash_map<const Block*, std::string> names;
  int next = 0;
  // Pre-order, like WalkNodes: a binding takes its number before its regions' bindings do.
  std::function<void(const Block&, const std::string&)> visit = [&](const Block& b,
                                                                   const std::string& prefix) {
    for (const auto& n : b.nodes()) {
      if (n->num_regions() == 0) continue;
      const int k = next++;
      for (int r = 0; r < n->num_regions(); ++r) {
        std::string name;
        if (n->kind() == NodeKind::kIf) {
          name = absl::StrCat(prefix, "$if", k, r == 0 ? "_then" : "_else");
        } else if (n->kind() == NodeKind::kLoop) {
          name = absl::StrCat(prefix, "$loop", k);
        } else {
          name = absl::StrCat(prefix, "$region", k, "_", r);
        }
        names[n->region(r)] = name;
        visit(*n->region(r), name);
      }
    }
  };
  visit(f.body(), f.name());
  return names;
}

void WalkNodes(Block& block, const std::function<void(Node&)>& fn) {
  for (auto& n : block.mutable_nodes()) {
    fn(*n);
    for (int r = 0; r < n->num_regions(); ++r) WalkNodes(*n->region(r), fn);
  }
}

void WalkNodes(const Block& block, const std::function<void(const Node&)>& fn) {
  for (const auto& n : block.nodes()) {
    fn(*n);
    for (int r = 0; r < n->num_regions(); ++r) {
      WalkNodes(static_cast<const Block&>(*n->region(r)), fn);
    }
  }
}

void ReplaceUses(Block& root, const absl::flat_hash_map<const Value*, Value*>& map) {
  if (map.empty()) return;
  auto remap = [&](Value*& v) {
    auto it = map.find(v);
    if (it != map.end()) v = it->second;
  };
  std::function<void(Block&)> visit = [&](Block& b) {
    for (auto& n : b.mutable_nodes()) {
      for (Value*& v : n->mutable_operands()) remap(v);
      for (int i = 0; i < n->num_regions(); ++i) visit(*n->region(i));
    }
    for (Value*& v : b.mutable_results()) remap(v);
  };
  visit(root);
}

namespace {

using ValueMap = absl::flat_hash_map<const Value*, Value*>;

Value* Mapped(const ValueMap& map, Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;  // unmapped: a capture from outside the clone
}

void CloneBlockInto(const Block& src, Block& dst, ValueMap& map) {
  for (const auto& p : src.params()) {
    Value* q = dst.AddParam(p->type(), p->name());
    q->set_param_device(p->device());
    map[p.get()] = q;
  }
  for (const auto& n : src.nodes()) {
    auto copy = std::make_unique<Node>(n->kind());
    copy->set_builtin(n->builtin());
    copy->set_op(n->op());
    copy->set_callee(n->callee());
    for (Value* v : n->operands()) copy->AddOperand(Mapped(map, v));
    copy->set_attrs(n->attrs());
    copy->set_constant_value(n->constant_value());
    copy->set_loc(n->loc());
    copy->set_device(n->device());
    for (const auto& r : n->results()) map[r.get()] = copy->AddResult(r->type(), r->name());
    for (int i = 0; i < n->num_regions(); ++i) CloneBlockInto(*n->region(i), *copy->region(i), map);
    dst.Append(std::move(copy));
  }
  std::vector<Value*> results;
  for (Value* v : src.results()) results.push_back(Mapped(map, v));
  dst.set_results(std::move(results));
}

}  // namespace

bool Function::AddAssumption(Assumption a) {
  a = a.Canonical();
  if (a.Trivial()) return false;
  for (const Assumption& have : assumptions_) {
    if (have.SameCondition(a)) return false;
  }
  assumptions_.push_back(std::move(a));
  return true;
}

Function* CloneFunction(const Function& src, Module& dest, std::string new_name) {
  Function* f = dest.AddFunction(std::move(new_name));
  ValueMap map;
  CloneBlockInto(src.body(), f->body(), map);
  f->set_result_types(src.result_types());
  f->set_loc(src.loc());
  f->mutable_attrs() = src.attrs();
  for (const Assumption& a : src.assumptions()) f->AddAssumption(a);
  f->param_values() = src.param_values();
  return f;
}

}  // namespace hetpass
