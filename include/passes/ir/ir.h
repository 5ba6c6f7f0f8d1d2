// The hetpass IR: modules of SSA functions.
//
//   Module    functions, looked up by name; the source file name for error locations.
//   Function  a name, a body Block whose params are the function parameters and whose results
//             are the returned values, declared result types, and (optionally) values supplied
//             for parameters that bind-params turns into constants.
//   Block     ordered bindings (Nodes), block parameters, and results (return / yield).
//   Node      one binding: a kind (node_kinds.def), operands, typed attributes, results, nested
//             regions (if: then/else; loop: body), a source location and a device annotation.
//   Value     an SSA value: a node result or a block parameter; has a type and a name hint.
//
// Regions may use values of enclosing blocks (captures), as ONNX If/Loop bodies do.
//
// Loop semantics (ONNX Loop):  %r... = loop(%max_trips, %cond, %init...) { body }
//   body params: (%iter: i64[], %cond: bool[], %carried...)
//   body yields: (%cond_next, %carried_next..., %scan...)
//   results:     final carried values, then each scan value stacked along a new axis 0.
//
// Invoke forms (the callee is a module function):
//   %r... = invoke @f(%args...)                     a call: operands = params, results = results
//   invoke @prim(%args..., %outs...) {outputs = k}  a kernel writing into k explicit outputs
//                                                   (destination passing; no results), after
//                                                   manifest-alloc
//   %s... = invoke @prim(%args...) {mask = [...], shape_func = true}
//                                                   the host shape function of a primitive: one
//                                                   i64[rank] result per callee result; `mask`
//                                                   is the callee's derived per-input mask
//                                                   (a dep[] attribute, `[shape, value]`), fixed
//                                                   by manifest-alloc
//
// There are no use lists: passes that rewrite operands walk the IR with a replacement map,
// which keeps every node small and every rewrite linear.
#ifndef HETPASS_IR_IR_H_
#define HETPASS_IR_IR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/assumption.h"
#include "passes/ir/attributes.h"
#include "passes/ir/tensor.h"
#include "passes/ir/type.h"

namespace hetpass {

class OpDef;
class Node;
class Block;
class Function;
class Module;

enum class NodeKind : uint8_t {
#define HETPASS_NODE_KIND(e, keyword, regions) e,
#include "passes/ir/node_kinds.def"
#undef HETPASS_NODE_KIND
};
absl::string_view NodeKindName(NodeKind k);
int NodeKindNumRegions(NodeKind k);

// The operation of a NodeKind::kBuiltin binding (builtins.def).
enum class Builtin : uint8_t {
#define HETPASS_BUILTIN(e, name, min_operands, max_operands) e,
#include "passes/ir/builtins.def"
#undef HETPASS_BUILTIN
};
absl::string_view BuiltinName(Builtin b);
std::optional<Builtin> ParseBuiltin(absl::string_view name);
// Whether `count` operands are accepted by `b`.
bool BuiltinAcceptsOperandCount(Builtin b, int count);

enum class DeviceKind : uint8_t {
#define HETPASS_DEVICE(e, name, accel) e,
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
};
absl::string_view DeviceName(DeviceKind d);
std::optional<DeviceKind> ParseDevice(absl::string_view name);
bool IsAccelerator(DeviceKind d);

// Where a node came from: line/col in text IR (1-based, 0 = unknown) and/or a source node name
// (ONNX node name). The file name lives in the Module, unless `file` names another: a node
// printed with PrintOptions::source_locations and parsed again (an executable's primitive
// functions) keeps the file and line of the text it was first parsed from, so that a run-time
// error points at the user's file, not at the re-parsed copy.
struct Location {
  int line = 0;
  int col = 0;
  std::string name;
  std::string file;  // empty: the module's source name
};
// A location that is only a source node name (an ONNX node's).
inline Location NamedLocation(std::string name) {
  Location l;
  l.name = std::move(name);
  return l;
}

class Value {
 public:
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const Type& type() const { return type_; }
  void set_type(Type t) { type_ = std::move(t); }
  // The node defining this value, or nullptr for a block parameter.
  Node* producer() const { return producer_; }
  // The block owning this parameter, or nullptr for a node result.
  Block* param_block() const { return param_block_; }
  bool is_param() const { return param_block_ != nullptr; }
  // Result index in the producer, or parameter index in the block.
  int index() const { return index_; }
  // Where the value lives: the producer's device for results, the parameter's own for params.
  DeviceKind device() const;
  // Sets a parameter's device (results take their producer's: Node::set_device).
  void set_param_device(DeviceKind d) { param_device_ = d; }
  // A number a pass gives the value for its own arrays (see passes/ir/scratch_ids.h), in place
  // of a map keyed by pointer. It means nothing outside that pass's run.
  uint32_t scratch() const { return scratch_; }
  void set_scratch(uint32_t s) const { scratch_ = s; }

 private:
  friend class Node;
  friend class Block;
  Value(Type type, std::string name) : name_(std::move(name)), type_(std::move(type)) {}
  std::string name_;
  Type type_;
  Node* producer_ = nullptr;
  Block* param_block_ = nullptr;
  int index_ = 0;
  mutable uint32_t scratch_ = 0;
  DeviceKind param_device_ = DeviceKind::kUnset;
};

class Block {
 public:
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  Value* AddParam(Type type, std::string name = "");
  const std::vector<std::unique_ptr<Value>>& params() const { return params_; }
  Value* param(int i) const { return params_[i].get(); }
  int num_params() const { return static_cast<int>(params_.size()); }
  // Removes parameter i (the caller guarantees it has no uses); later params shift down.
  void RemoveParam(int i);

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  // Direct access for passes that rebuild the binding list in one sweep.
  std::vector<std::unique_ptr<Node>>& mutable_nodes() { return nodes_; }
  Node* Append(std::unique_ptr<Node> node);

  const std::vector<Value*>& results() const { return results_; }
  std::vector<Value*>& mutable_results() { return results_; }
  void set_results(std::vector<Value*> r) { results_ = std::move(r); }

  // The node owning this region, or nullptr for a function body.
  Node* parent_node() const { return parent_node_; }
  Function* parent_function() const { return parent_function_; }

 private:
  friend class Node;
  friend class Function;
  std::vector<std::unique_ptr<Value>> params_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> results_;
  Node* parent_node_ = nullptr;
  Function* parent_function_ = nullptr;
};

class Node {
 public:
  // Use the factories below (or Builder): they check what the registry allows.
  explicit Node(NodeKind kind) : kind_(kind) {
    for (int i = 0; i < NodeKindNumRegions(kind); ++i) AddRegion();
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  NodeKind kind() const { return kind_; }
  // kCall: the op definition (from the registry the module was built with).
  const OpDef* op() const { return op_; }
  void set_op(const OpDef* op) { op_ = op; }
  // Op name for kCall, builtin name for kBuiltin, keyword for other kinds.
  absl::string_view OpName() const;
  // kBuiltin: which one.
  Builtin builtin() const { return builtin_; }
  void set_builtin(Builtin b) { builtin_ = b; }
  // kInvoke: the callee function name.
  const std::string& callee() const { return cold_ ? cold_->callee : EmptyString(); }
  void set_callee(std::string c) { cold().callee = std::move(c); }

  const std::vector<Value*>& operands() const { return operands_; }
  std::vector<Value*>& mutable_operands() { return operands_; }
  Value* operand(int i) const { return operands_[i]; }
  int num_operands() const { return static_cast<int>(operands_.size()); }
  void AddOperand(Value* v) { operands_.push_back(v); }
  void set_operand(int i, Value* v) { operands_[i] = v; }

  const Attrs& attrs() const { return attrs_; }
  Attrs& mutable_attrs() { return attrs_; }
  void set_attrs(Attrs a) { attrs_ = std::move(a); }

  // kConstant: the data.
  const Tensor& constant_value() const { return cold_ ? cold_->constant : EmptyTensor(); }
  void set_constant_value(Tensor t) { cold().constant = std::move(t); }

  Value* AddResult(Type type = Type(), std::string name = "");
  int num_results() const { return static_cast<int>(results_.size()); }
  Value* result(int i = 0) const { return results_[i].get(); }
  const std::vector<std::unique_ptr<Value>>& results() const { return results_; }

  int num_regions() const { return cold_ ? static_cast<int>(cold_->regions.size()) : 0; }
  Block* region(int i) const { return cold_->regions[i].get(); }

  Block* parent() const { return parent_; }
  const Location& loc() const { return cold_ ? cold_->loc : EmptyLocation(); }
  void set_loc(Location loc);
  DeviceKind device() const { return device_; }
  void set_device(DeviceKind d) { device_ = d; }
  // As Value::scratch: a pass's own number for the node (passes/ir/scratch_ids.h).
  uint32_t scratch() const { return scratch_; }
  void set_scratch(uint32_t s) const { scratch_ = s; }

 private:
  friend class Block;
  // What only some nodes have, or only printers and error messages read: kept out of line so
  // that the fields every pass walks over (kind, op, operands, attributes, results, device) fit
  // in two cache lines and the nodes of a block lie close together. At 100k ops the passes are
  // bound by memory traffic, not by instructions (docs/runtime.md, "Pipeline speed at scale").
  struct Cold {
    std::string callee;
    Tensor constant;
    std::vector<std::unique_ptr<Block>> regions;
    Location loc;
  };
  Cold& cold() {
    if (!cold_) cold_ = std::make_unique<Cold>();
    return *cold_;
  }
  static const std::string& EmptyString();
  static const Tensor& EmptyTensor();
  static const Location& EmptyLocation();
  Block* AddRegion();
  NodeKind kind_;
  Builtin builtin_ = Builtin::kSeqConstruct;
  DeviceKind device_ = DeviceKind::kUnset;
  mutable uint32_t scratch_ = 0;
  const OpDef* op_ = nullptr;
  std::vector<Value*> operands_;
  Attrs attrs_;
  std::vector<std::unique_ptr<Value>> results_;
  Block* parent_ = nullptr;
  std::unique_ptr<Cold> cold_;
};

class Function {
 public:
  explicit Function(std::string name);
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n);
  // The module this function belongs to (set by Module::AddFunction).
  Module* module() const { return module_; }
  Block& body() { return body_; }
  const Block& body() const { return body_; }
  const std::vector<Type>& result_types() const { return result_types_; }
  void set_result_types(std::vector<Type> t) { result_types_ = std::move(t); }
  const Location& loc() const { return loc_; }
  void set_loc(Location l) { loc_ = std::move(l); }
  // Function attributes (`def @f(...) attributes {primitive = true} {`): primitive marks a
  // fused kernel group produced by fuse-ops.
  const Attrs& attrs() const { return attrs_; }
  Attrs& mutable_attrs() { return attrs_; }

  // Conditions on symbols the function's types rely on (`assume(...)` in the text form, see
  // passes/ir/assumption.h), in the order they were recorded. AddAssumption records a
  // condition once (a second one with the same condition keeps the first reason) and ignores
  // a trivial one; it returns whether it added it.
  const std::vector<Assumption>& assumptions() const { return assumptions_; }
  bool AddAssumption(Assumption a);
  void clear_assumptions() { assumptions_.clear(); }

  // Values supplied for parameters (model weights) that bind-params turns into constants.
  // Not part of the text form.
  std::map<std::string, Tensor>& param_values() { return param_values_; }
  const std::map<std::string, Tensor>& param_values() const { return param_values_; }

 private:
  friend class Module;
  std::string name_;
  Module* module_ = nullptr;
  Block body_;
  std::vector<Type> result_types_;
  Location loc_;
  Attrs attrs_;
  std::vector<Assumption> assumptions_;
  std::map<std::string, Tensor> param_values_;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Function* AddFunction(std::string name);
  Function* FindFunction(absl::string_view name) const;
  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }
  std::vector<std::unique_ptr<Function>>& mutable_functions() { return functions_; }

  // File (or model) the module came from, used in error locations.
  const std::string& source_name() const { return source_name_; }
  void set_source_name(std::string s) { source_name_ = std::move(s); }

 private:
  std::vector<std::unique_ptr<Function>> functions_;
  std::string source_name_;
  friend class Function;
  // Name -> position in functions_, for O(1) lookups in modules with tens of thousands of
  // primitive functions. Rebuilt when its size disagrees with functions_ (functions added or
  // erased through mutable_functions()) or a hit points at another name (reordered); renames
  // clear it (Function::set_name).
  mutable absl::flat_hash_map<std::string, size_t> index_;
};

// The attributes that mark primitive functions and the invoke forms (see "Invoke forms").
inline constexpr absl::string_view kPrimitiveAttr = "primitive";
inline constexpr absl::string_view kKernelOutputsAttr = "outputs";
inline constexpr absl::string_view kShapeFuncAttr = "shape_func";
inline constexpr absl::string_view kShapeFuncMaskAttr = "mask";
// True if `f` carries `primitive = true` (a fused kernel group made by fuse-ops).
bool IsPrimitive(const Function& f);
// `invoke @p(%ins..., %outs...) {outputs = k}`: a kernel writing into explicit outputs.
bool IsKernelInvoke(const Node& n);
// `invoke @p(...) {mask = [...], shape_func = true}`: a primitive's host shape function.
bool IsShapeFunctionInvoke(const Node& n);
// The mask a shape-function invoke records (one dependence per callee parameter), or nullptr
// when `n` is no shape-function invoke or its mask is missing or not a dep list (the verifier
// reports those; readers treat them as "unknown").
const std::vector<InputDep>* ShapeFunctionMask(const Node& n);
// An invoke of neither special form: a call binding the callee's results.
bool IsPlainInvoke(const Node& n);

// "model.hir:3:7" / "node 'Reshape_12'" / "model.hir:3:7 (node 'Reshape_12')" / "<unknown>".
std::string FormatLocation(const Module* module, const Location& loc);
// Error text prefix for a node: "<loc>: <op> %<name>: ".
std::string NodeContext(const Module* module, const Node& node);

// The regions of `f` (if branches, loop bodies, nested ones included), each named as the VM
// names the function it compiles to: "<f>$if<k>_then", "<f>$if<k>_else", "<f>$loop<k>", a nested
// region prefixed by its parent's name ("main$loop0$if1_then"); k numbers the region-holding
// bindings of `f` in program order (WalkNodes). The copy ledger counts a copy once per execution
// of its region under the same name, so the VM's execution counts bind the ledger's loop terms.
absl::flat_hash_map<const Block*, std::string> RegionNames(const Function& f);

// Visits every node of a block (and, recursively, of its regions) in program order.
void WalkNodes(Block& block, const std::function<void(Node&)>& fn);
void WalkNodes(const Block& block, const std::function<void(const Node&)>& fn);

// Rewrites every operand and block result in `root` (recursively) through `map`.
void ReplaceUses(Block& root, const absl::flat_hash_map<const Value*, Value*>& map);

// Deep copy of a function into `dest` (same module or another); returns the copy.
Function* CloneFunction(const Function& src, Module& dest, std::string new_name);

}  // namespace hetpass

#endif  // HETPASS_IR_IR_H_
