// The op registry: one immutable table describing every op, queried by passes and tools.
//
// Passes never test an op's name; they ask its OpDef: how many inputs, which attributes, what
// the shape rule computes, which inputs the shape rule reads and how (the per-input dependence
// mask), whether output shapes are only known from the data, how it fuses.
//
// Per-input dependence (a bit set, the heart of hetpass):
//   none   the shape rule ignores the input (bias of a clip, the fill value of a pad)
//   shape  the rule reads the input's shape only: metadata, never a device-to-host copy
//   value  the rule reads the input's contents: the host needs the data (a copy if it lives on
//          the accelerator)
//   shape+value  both (argwhere: rank from the shape, count from the values)
// `value` is declared only where the contents can change an output shape: a rule never reads
// values just to validate them (the kernel checks data on the device), see docs/masks.md.
// TVM had one `data_dependent` flag per op, which copied the sliced tensor of every
// dyn.strided_slice to the host; here only begin/end/strides are `value`.
//
// One shape rule per op serves two modes (so type inference and the shape function can never
// disagree):
//   symbolic  type inference: dims are DimExprs over symbols; `value` inputs are known only if
//             they are constants or carry symbolic values (shape_of results), else unknown
//             and the rule answers `?` dims
//   concrete  the host shape function at run time: every dim a constant, `value` inputs hold
//             their data
// The ShapeContext enforces the mask: reading the shape or values of an input whose dependence
// does not include it is an error (the mask-verification test relies on that).
//
// Registration is explicit and fluent (RegisterAllOps in src/shape_funcs/register_all.cc lists
// every family); the table is frozen by Build() and never changes afterwards.
//
// Layering: this is the op-definition machinery, part of the IR layer (the IR's call nodes
// point at OpDefs, the parser and builder look ops up by name). The op families that fill the
// registry sit above it in src/shape_funcs (passes/shape_funcs/op_registry.h); the global
// registry instance is built from them on first use (OpRegistry::Global, defined there).
#ifndef HETPASS_IR_OP_DEF_H_
#define HETPASS_IR_OP_DEF_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "passes/ir/assumption.h"
#include "passes/ir/attributes.h"
#include "passes/ir/input_dep.h"
#include "passes/ir/tensor.h"
#include "passes/ir/type.h"

namespace hetpass {

enum class FusionPattern : uint8_t {
#define HETPASS_FUSION_PATTERN(e, name) e,
#include "passes/ir/fusion_patterns.def"
#undef HETPASS_FUSION_PATTERN
};
absl::string_view FusionPatternName(FusionPattern p);

// What an op is, for passes that must treat some ops specially (ask this, never the name).
enum class OpRole : uint8_t {
  kCompute,     // an ordinary kernel
  kShapeQuery,  // output computed from input metadata alone (shape_of): reads no input data
  kDeviceCopy,  // moves its input between devices (attrs src, dst): inserted by plan-devices
  kAllocStorage,  // allocates device memory (manifest-alloc)
  kAllocTensor,   // views storage as a tensor (manifest-alloc)
  kAllocTensorDyn,  // allocates a tensor whose dims arrive at run time (manifest-alloc)
  kKill,            // its operands are dead from here on: their memory may be released (plan-memory)
};
absl::string_view OpRoleName(OpRole r);

// Where an op may run, for plan-devices.
enum class Placement : uint8_t {
  kAnywhere,  // cheap kernels on every device: the planner's min-cut chooses (default for
              // elementwise, broadcast and injective ops)
  kTarget,    // runs on the pipeline's target device (heavy kernels: dense, conv, reductions)
  kHost,      // runs on the host only (shape queries)
};
absl::string_view PlacementName(Placement p);

struct InputSpec {
  std::string name;
  InputDep dep = InputDep::kShape;
  bool storage = false;  // a storage operand (memory.alloc_tensor), not a tensor
};

struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kInt;
  std::optional<AttrValue> default_value;  // nullopt: required
};

class OpDef;

// What a shape rule sees of one input.
struct ShapeInput {
  Type type;                                        // always a tensor type
  const Tensor* value = nullptr;                    // data, when known (constant / run time)
  const std::vector<DimExpr>* sym_value = nullptr;  // symbolic integer values, when known
};

class ShapeContext {
 public:
  ShapeContext(const OpDef& op, const Attrs& attrs, std::vector<ShapeInput> inputs,
               bool enforce_mask = true);

  const OpDef& op() const { return op_; }
  const Attrs& attrs() const { return attrs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Metadata of the static type: always readable, whatever the mask.
  DType dtype(int i) const { return inputs_[i].type.dtype(); }
  int rank(int i) const { return inputs_[i].type.rank(); }

  // The shape of input i. Error if the op's dependence on input i lacks `shape`.
  absl::StatusOr<absl::Span<const DimExpr>> Shape(int i);
  // The integer contents of input i, flattened (exact or symbolic); nullopt when not known
  // now. Error if the dependence lacks `value`.
  absl::StatusOr<std::optional<std::vector<DimExpr>>> IntValues(int i);
  // How many values input i holds: metadata that travels with the values, known even when
  // the values are not (a 1-D target shape's length fixes the output rank). Error as above.
  absl::StatusOr<DimExpr> NumValues(int i);
  // The contents of input i as doubles; nullopt unless the data is known. Error as above.
  absl::StatusOr<std::optional<std::vector<double>>> FloatValues(int i);

  // An InvalidArgument error prefixed with the op name.
  absl::Status Error(absl::string_view message) const;

  // Assumptions (passes/ir/assumption.h). infer-types gives the context a sink: a rule that
  // succeeds only under a condition on symbols (two dims equal, one at most a constant) then
  // records it with Assume and keeps the input-derived dim. Without a sink (shape functions at
  // run time, where every dim is a number; other symbolic callers) can_assume() is false and
  // the rule answers as it always did (`?`).
  void set_assumption_sink(std::vector<Assumption>* sink) { assumptions_ = sink; }
  bool can_assume() const { return assumptions_ != nullptr; }
  // Records `lhs kind rhs` with the reason "op '<name>': <why>" (the caller adds the node).
  void Assume(Assumption::Kind kind, DimExpr lhs, DimExpr rhs, absl::string_view why) const;
  // Accesses the mask forbade (each also returned an error).
  const std::vector<std::string>& violations() const { return violations_; }
  // What the rule has asked of input i so far (the shape and/or value bit), allowed or not:
  // a composed shape function records from it which of its parameters it really read.
  InputDep accessed(int i) const;

 private:
  absl::Status CheckAccess(int i, bool value_access);
  const OpDef& op_;
  const Attrs& attrs_;
  std::vector<ShapeInput> inputs_;
  bool enforce_mask_;
  std::vector<std::string> violations_;
  std::vector<InputDep> accessed_;  // one per input, see accessed()
  std::vector<Assumption>* assumptions_ = nullptr;
};

// Output types from input types (see the two modes above).
using ShapeRule = std::function<absl::StatusOr<std::vector<Type>>(ShapeContext&)>;
// Optional: an integer output's contents as expressions of the symbols (shape_of of
// f32[n, 1024] is [n, 1024]). Lets type inference see through shape arithmetic. Runs with an
// unrestricted context (it is value propagation, not the shape function). One entry per output.
using SymbolicValueRule =
    std::function<std::optional<std::vector<std::vector<DimExpr>>>(ShapeContext&)>;
// Reference kernel on host tensors (constant folding, correctness oracle). `output_types` are
// the concrete types from the shape rule.
using ReferenceKernel = std::function<absl::StatusOr<std::vector<Tensor>>(
    absl::Span<const Tensor> inputs, const Attrs& attrs, absl::Span<const Type> output_types)>;

class OpDef {
 public:
  const std::string& name() const { return name_; }
  const std::vector<InputSpec>& inputs() const { return inputs_; }
  // The last input may repeat (concatenate); then min_inputs() == inputs().size() - 1 + 1.
  bool variadic() const { return variadic_; }
  int min_inputs() const { return static_cast<int>(inputs_.size()); }
  bool AcceptsInputCount(int n) const;
  // Spec of operand i (variadic operands share the last spec).
  const InputSpec& input(int i) const;
  InputDep dep(int i) const { return input(i).dep; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  int num_outputs() const { return num_outputs_; }
  FusionPattern pattern() const { return pattern_; }
  // True if output shapes are known only from input contents after they are computed
  // (argwhere): planning must bring a count to the host, not a shape.
  bool data_dependent_output_shape() const { return data_dependent_; }
  // True for ops whose results are not a function of their inputs (random draws): never folded
  // into constants and never merged with an equal-looking call by CSE.
  bool impure() const { return impure_; }
  // For data-dependent ops: the op that computes, on the op's own device, the scalar deciding
  // the unknown output dim (argwhere: count_nonzero). manifest-alloc copies only that scalar.
  const std::string& shape_counter() const { return shape_counter_; }
  // Results typed by their declaration (allocation ops: the size lives in the result type as
  // an expression of the symbols); such ops have no shape rule.
  bool typed_by_declaration() const { return typed_by_declaration_; }
  // A view: the result holds its first input's bytes unchanged, in the same order, under
  // another shape (reshape, squeeze, expand_dims). A kernel for it is a copy, and once memory
  // planning lets outputs alias inputs, nothing at all.
  bool is_view() const { return view_; }
  // True if some input's dependence includes `value`.
  bool needs_values() const;
  OpRole role() const { return role_; }
  Placement placement() const { return placement_; }
  const std::string& doc() const { return doc_; }

  const ShapeRule& shape_rule() const { return shape_rule_; }
  const SymbolicValueRule& symbolic_value_rule() const { return symbolic_value_rule_; }
  const ReferenceKernel& reference() const { return reference_; }

  // Checks attribute names and types against the schema and fills in defaults. Ints are
  // accepted for float attributes, and an empty int list for a float list.
  absl::StatusOr<Attrs> CheckAttrs(const Attrs& attrs) const;
  // CheckAttrs' errors, in its order, without building the checked copy (the verifier's
  // question: it runs after every pass over every call).
  absl::Status ValidateAttrs(const Attrs& attrs) const;

  // Runs the shape rule. Errors are prefixed with the op name. With `assumptions`, the rule
  // may keep an input-derived dim under a recorded condition (ShapeContext::Assume).
  absl::StatusOr<std::vector<Type>> InferTypes(const Attrs& attrs, std::vector<ShapeInput> inputs,
                                               std::vector<Assumption>* assumptions = nullptr) const;

  // A slot for shape_funcs' OpIdOf to remember this op's id in (the registry layer numbers
  // built-in ops; the IR does not know them): found by name once, then read, since kernel
  // matchers and layout passes ask for every node. kNoCachedId until then; a copy (CloneWith)
  // starts empty, as an edit may rename. Relaxed atomics: racing first lookups write the same
  // value.
  static constexpr int32_t kNoCachedId = -1;
  int32_t cached_id() const { return cached_id_.value.load(std::memory_order_relaxed); }
  void set_cached_id(int32_t id) const { cached_id_.value.store(id, std::memory_order_relaxed); }

 private:
  struct IdSlot {
    mutable std::atomic<int32_t> value{kNoCachedId};
    IdSlot() = default;
    IdSlot(const IdSlot&) {}
    IdSlot& operator=(const IdSlot&) { return *this; }
  };
  friend class OpDefBuilder;
  absl::StatusOr<const AttrSpec*> FindAttrSpec(absl::string_view name) const;
  absl::Status AttrTypeError(absl::string_view name, const AttrSpec& spec,
                             const AttrValue& value) const;
  absl::Status MissingAttrError(const AttrSpec& spec) const;
  friend class OpRegistry;
  std::string name_;
  std::vector<InputSpec> inputs_;
  bool variadic_ = false;
  std::vector<AttrSpec> attrs_;
  int num_outputs_ = 1;
  FusionPattern pattern_ = FusionPattern::kOpaque;
  bool data_dependent_ = false;
  bool impure_ = false;
  std::string shape_counter_;
  bool typed_by_declaration_ = false;
  bool view_ = false;
  OpRole role_ = OpRole::kCompute;
  std::optional<Placement> placement_override_;
  Placement placement_ = Placement::kTarget;  // resolved by Build()
  std::string doc_;
  ShapeRule shape_rule_;
  SymbolicValueRule symbolic_value_rule_;
  ReferenceKernel reference_;
  IdSlot cached_id_;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(OpDef* def) : def_(def) {}
  OpDefBuilder& Input(std::string name, InputDep dep);
  // A repeated last input (concatenate's tensors); at least one operand.
  OpDefBuilder& VariadicInput(std::string name, InputDep dep);
  OpDefBuilder& Attr(std::string name, AttrType type);  // required
  OpDefBuilder& Attr(std::string name, AttrType type, AttrValue default_value);
  OpDefBuilder& Outputs(int n);
  OpDefBuilder& Pattern(FusionPattern p);
  OpDefBuilder& DataDependentOutputShape();
  OpDefBuilder& Impure();
  // Data-dependent output shape whose unknown dim is the scalar computed by `counter`.
  OpDefBuilder& DataDependentOutputShape(std::string counter);
  OpDefBuilder& StorageInput(std::string name);
  OpDefBuilder& TypedByDeclaration();
  OpDefBuilder& View();
  OpDefBuilder& Role(OpRole role);
  // Overrides the placement derived from the fusion pattern.
  OpDefBuilder& Placed(Placement placement);
  OpDefBuilder& Doc(std::string text);
  OpDefBuilder& Rule(ShapeRule rule);
  OpDefBuilder& SymbolicValues(SymbolicValueRule rule);
  OpDefBuilder& Reference(ReferenceKernel kernel);

 private:
  OpDef* def_;
};

class OpRegistry {
 public:
  class Builder {
   public:
    OpDefBuilder Register(std::string name);
    // Freezes the table; errors on duplicate names or ops without a shape rule.
    absl::StatusOr<std::unique_ptr<OpRegistry>> Build();

   private:
    std::vector<std::unique_ptr<OpDef>> defs_;
  };

  // The registry of every built-in op, built on first use by RegisterAllOps (thread-safe).
  static const OpRegistry& Global();

  const OpDef* Find(absl::string_view name) const;
  // The op of a role that exactly one op has (every role but kCompute): passes create device
  // copies and allocations by what they are, not by name. nullptr for kCompute or an unknown
  // role.
  const OpDef* FindByRole(OpRole role) const;
  // Sorted by name.
  const std::vector<std::unique_ptr<OpDef>>& ops() const { return ops_; }

  // Overrides for tests and comparisons: a copy whose definitions `edit` may change (the
  // baseline tables of other systems' masks, passes/analysis/baseline_masks.h, are made so).
  std::unique_ptr<OpRegistry> CloneWith(const std::function<void(OpDef&)>& edit) const;
  // Helpers for such edits.
  static void SetDep(OpDef& def, int input, InputDep dep);
  // "" removes the on-device counter: the host shape function then reads the op's inputs.
  static void SetShapeCounter(OpDef& def, std::string counter);

  // One line per op: name, inputs with masks, attrs, outputs, pattern, data dependence.
  std::string Describe() const;

 private:
  OpRegistry() = default;
  // Fills by_role_ from ops_ (after Build or CloneWith).
  void IndexRoles();
  std::vector<std::unique_ptr<OpDef>> ops_;
  absl::flat_hash_map<std::string, const OpDef*> by_name_;
  // FindByRole's answer per role (manifest-alloc asks once per allocation it writes).
  std::vector<const OpDef*> by_role_;
};

}  // namespace hetpass

#endif  // HETPASS_IR_OP_DEF_H_
