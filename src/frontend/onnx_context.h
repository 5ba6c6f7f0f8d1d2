// Internal to the ONNX frontend: the state one import shares with the per-op converters
// (onnx_convert_<family>.cc, their table in onnx_converters.cc). Includes the ONNX protobuf
// classes, so only src/frontend includes it.
#ifndef HETPASS_FRONTEND_ONNX_CONTEXT_H_
#define HETPASS_FRONTEND_ONNX_CONTEXT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "passes/ir/builder.h"
#include "passes/ir/ir.h"

namespace hetpass::onnx_frontend {

// One import in progress: the builder, the ONNX name -> IR value map, and per-value types
// inferred while building (the registry's rules without symbolic values), used for dtypes and
// ranks; the final infer-types pass gives the precise symbolic types.
class ImportContext {
 public:
  // `opset` is the one converters implement (at least 11); `model_opset`, the model's own, is
  // the one messages name (older models import when each of their ops is unchanged since).
  ImportContext(Module* module, Block* block, const OpRegistry* registry, int64_t opset,
                int64_t model_opset)
      : module_(module), builder_(block, registry), opset_(opset), model_opset_(model_opset) {}

  int64_t opset() const { return opset_; }
  // The opset the model imports, below 11 for an older model (opset() is then 11): the
  // converters of older op versions (ConvTranspose-1, Upsample-9) check it.
  int64_t model_opset() const { return model_opset_; }
  Builder& builder() { return builder_; }
  // Where new nodes go: the function body, or a region while an If/Loop body is imported.
  Block* block() const { return builder_.block(); }
  void set_block(Block* block) { builder_ = Builder(block, &builder_.registry()); }

  // The node being converted (for names in locations and messages).
  void set_current(const onnx::NodeProto* node) { current_ = node; }
  const onnx::NodeProto& current() const { return *current_; }

  // A registered op call; sets the location to the ONNX node and types the results locally.
  absl::StatusOr<Value*> Op(absl::string_view op, std::vector<Value*> operands, Attrs attrs = {});
  absl::StatusOr<Node*> OpNode(absl::string_view op, std::vector<Value*> operands,
                               Attrs attrs = {});
  // A sequence/optional builtin (ir/builtins.def), located and typed locally like Op;
  // `declared` types seq.empty and opt.none (onnx_convert_container.cc).
  absl::StatusOr<Value*> BuiltinOp(Builtin b, std::vector<Value*> operands, Type declared = Type());
  // A bound constant.
  Value* Const(Tensor t, std::string name = "");
  Value* ScalarLike(Value* like, double v);  // a scalar of `like`'s dtype (f32 when unknown)

  // The data of a value produced by a constant node, or computable at import from constants
  // and static dims alone (shape arithmetic such as Unsqueeze(Constant) or Gather(Shape(x), 1)
  // with dim 1 static): registry ops evaluated with their reference kernels, small tensors
  // only, memoised. Converters then emit static ops where the exporter left computations.
  std::optional<Tensor> ConstValue(const Value* v) const;
  // Type known so far (unset when the local rule could not type it).
  Type TypeOf(const Value* v) const;
  DType DTypeOf(const Value* v) const;  // f32 when unknown
  int RankOf(const Value* v) const;     // -1 when unknown

  void SetLocalType(const Value* v, Type t) { types_[v] = std::move(t); }
  // Drops what the context knows of `v` (the importer is about to delete its node).
  void Forget(const Value* v);

  // Error prefix naming the current node: "Reshape 'Reshape_12' (opset 13): ".
  std::string Where() const;
  absl::Status Error(absl::string_view msg) const;          // InvalidArgument
  absl::Status Unimplemented(absl::string_view msg) const;  // Unimplemented

 private:
  Module* module_;
  Builder builder_;
  int64_t opset_;
  int64_t model_opset_;
  const onnx::NodeProto* current_ = nullptr;
  absl::flat_hash_map<const Value*, Type> types_;
  mutable absl::flat_hash_map<const Value*, std::optional<Tensor>> folded_;

  std::optional<Tensor> Fold(const Value* v, int depth) const;
  std::optional<Tensor> FoldCall(const Node& n, int depth) const;
};

// Converts one node; `inputs` has nullptr for absent optional inputs. Returns one value per
// ONNX output (nullptr for an output the converter does not produce).
using Converter = absl::StatusOr<std::vector<Value*>> (*)(ImportContext& ctx,
                                                          const onnx::NodeProto& node,
                                                          const std::vector<Value*>& inputs);
// The converter for an op type of the default domain, or nullptr when unsupported.
Converter FindConverter(absl::string_view op_type);
// Ops recognised but deliberately out of scope (If, Loop, ...): their reason, else "".
absl::string_view OutOfScopeReason(absl::string_view op_type);

// An ONNX TypeProto as an IR type: tensors (dims: values, named or fresh symbols through
// `dim`, called per dim without a value), sequences and optionals (their element dims
// unknown: the elements of one sequence differ). Maps and sparse tensors are Unimplemented.
absl::StatusOr<Type> TypeFromOnnx(const onnx::TypeProto& t);

// TensorProto -> Tensor (also used for initializers and Constant attributes).
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& t);
// The same for a proto the caller gives up: its raw_data buffer becomes the tensor's, uncopied.
absl::StatusOr<Tensor> TensorFromProto(onnx::TensorProto&& t);
absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type);

}  // namespace hetpass::onnx_frontend

#endif  // HETPASS_FRONTEND_ONNX_CONTEXT_H_
