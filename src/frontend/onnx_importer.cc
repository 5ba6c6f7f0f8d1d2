// ONNX importer: ModelProto bytes -> a hetpass Module with one function.
//
// Phases:
//   0. Parse. Protobuf parsing never throws, but everything that touches the proto runs inside a
//      try block anyway, so no exception escapes; bytes that do not parse are InvalidArgument.
//   1. Check. The default-domain opset must be 11..17 (error names it), or older when every op
//      of the model has the same version there as in opset 11 (ONNX's schema registry says),
//      so the opset-11 converters apply unchanged (ConstantOfShape-9, Gemm-11 stays Gemm-11...). Every node's op type is
//      looked up in the converter table (onnx_converters.cc); ALL unsupported nodes are listed
//      in one Unimplemented error (op type, node name, opset), so a user sees the whole gap.
//   2. Signature. Graph inputs that are not initializers become parameters (sequence and
//      optional inputs `seq<T>` / `opt<T>`, their element dims unknown: TypeFromOnnx). A named dynamic dim
//      (dim_param) becomes one symbol shared by every input that names it (sanitised into an
//      identifier, made unique); an unnamed or unknown dim becomes a fresh symbol.
//   3. Constants. Initializers become bound `constant` nodes (never parameters: passing weights
//      as parameters would disable fold-constants, see DESIGN.md).
//   4. Nodes, in graph order (ONNX requires a topological order): each converter emits registry
//      ops through ImportContext, which stamps Location::name with the ONNX node name and types
//      the results with the registry's rule (locally, for dtypes and ranks). A large main-graph
//      initializer that a converter folded into a new constant (a MatMul weight transposed) is
//      released after its last ONNX use, so the weights are not held twice until dce.
//   5. Results: the graph outputs, in order. Optionally infer-types, whose errors name the node.
//
// Subgraphs. If and Loop become the IR's `if` and `loop`, their bodies regions (SequenceMap
// a `loop` over the sequence's elements, see ImportSequenceMap). ONNX scoping
// maps directly onto the IR's: a body may name any value of the enclosing graphs, and the IR
// lets a region use every value of its enclosing blocks, so a captured value is just an outer
// value used inside (the VM passes such captures to the region's function). Names resolve
// through a stack of scopes, innermost first. A body's formal inputs become block parameters;
// Loop's missing trip count / condition become constants (INT64_MAX / true), as ONNX defines.
// Result types of a region node are only guessed locally (dtype and rank; dims that differ
// between branches or change across iterations are unknown), infer-types then finds the
// precise join.
//
// Known gaps: Scan, non-default domains, sparse initializers. External tensor data is read from
// the model's folder (onnx_external_data.h).
#include "passes/frontend/onnx_importer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx_context.h"
#include "frontend/onnx_external_data.h"
#include "frontend/onnx_mapped_model.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx-data.pb.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/file.h"
#include "passes/support/pages.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/infer_types.h"

namespace hetpass {
namespace onnx_frontend {

// ---- ImportContext ---------------------------------------------------------------------------

std::string ImportContext::Where() const {
  if (current_ == nullptr) return "";
  if (current_->name().empty() && current_->output_size() > 0) {  // unnamed: name its output
    return absl::StrFormat("%s '' (output '%s', opset %d): ", current_->op_type(),
                           current_->output(0), model_opset_);
  }
  return absl::StrFormat("%s '%s' (opset %d): ", current_->op_type(), current_->name(), model_opset_);
}

absl::Status ImportContext::Error(absl::string_view msg) const {
  return absl::InvalidArgumentError(absl::StrCat(Where(), msg));
}

absl::Status ImportContext::Unimplemented(absl::string_view msg) const {
  return absl::UnimplementedError(absl::StrCat(Where(), msg));
}

absl::StatusOr<Node*> ImportContext::OpNode(absl::string_view op, std::vector<Value*> operands,
                                            Attrs attrs) {
  auto n = builder_.CallNode(op, operands, std::move(attrs));
  if (!n.ok()) return Error(n.status().message());
  Node* node = *n;
  node->set_loc(NamedLocation(current_ ? current_->name() : ""));
  // Local typing: the registry's rule with the constants we know. Values that are computed
  // stay unknown (a value-dependent rule then gives `?` dims; infer-types refines them with
  // symbolic values at the end), so a failure here is a real shape error of this node.
  std::vector<ShapeInput> ins;
  std::vector<std::optional<Tensor>> consts(operands.size());
  bool all_typed = true;
  for (size_t i = 0; i < operands.size(); ++i) {
    Type t = TypeOf(operands[i]);
    if (!t.is_tensor()) all_typed = false;
    consts[i] = ConstValue(operands[i]);
  }
  if (all_typed) {
    for (size_t i = 0; i < operands.size(); ++i) {
      ins.push_back(ShapeInput{TypeOf(operands[i]), consts[i] ? &*consts[i] : nullptr});
    }
    auto types = node->op()->InferTypes(node->attrs(), std::move(ins));
    if (!types.ok()) return Error(types.status().message());
    if (static_cast<int>(types->size()) == node->num_results()) {
      for (int r = 0; r < node->num_results(); ++r) types_[node->result(r)] = (*types)[r];
    }
  }
  return node;
}

absl::StatusOr<Value*> ImportContext::Op(absl::string_view op, std::vector<Value*> operands,
                                         Attrs attrs) {
  ASSIGN_OR_RETURN(Node * n, OpNode(op, std::move(operands), std::move(attrs)));
  if (n->num_results() != 1) return Error(absl::StrCat("op ", op, " has several results"));
  return n->result(0);
}

Value* ImportContext::Const(Tensor t, std::string name) {
  Value* v = builder_.Constant(std::move(t), std::move(name));
  if (current_ != nullptr) v->producer()->set_loc(NamedLocation(current_->name()));
  types_[v] = v->producer()->constant_value().type();
  return v;
}

void ImportContext::Forget(const Value* v) {
  types_.erase(v);
  folded_.erase(v);
}

Value* ImportContext::ScalarLike(Value* like, double v) {
  return Const(Tensor::Scalar(DTypeOf(like), v));
}

std::optional<Tensor> ImportContext::ConstValue(const Value* v) const { return Fold(v, 0); }

// The value of `v` when it follows from constants and static dims alone: constants, shape_of
// of a value whose local type is static, and registry ops over such values, evaluated with
// their reference kernels. Small tensors only (shape arithmetic), bounded depth.
std::optional<Tensor> ImportContext::Fold(const Value* v, int depth) const {
  constexpr int kMaxDepth = 48;
  if (v == nullptr || v->producer() == nullptr) return std::nullopt;
  if (v->producer()->kind() == NodeKind::kConstant) return v->producer()->constant_value();
  if (depth > kMaxDepth) return std::nullopt;
  if (auto it = folded_.find(v); it != folded_.end()) return it->second;
  std::optional<Tensor> r = FoldCall(*v->producer(), depth);
  folded_[v] = r;
  return r;
}

// Fold's work for one call node (not memoised itself).
std::optional<Tensor> ImportContext::FoldCall(const Node& n, int depth) const {
  constexpr int64_t kMaxElements = 64;
  if (n.kind() != NodeKind::kCall || n.num_results() != 1 || !n.op()->reference()) {
    return std::nullopt;
  }
  const OpDef& op = *n.op();
  // shape_of's value as a tensor of its dtype; with `partial`, symbolic dims read as 0 (for
  // Gather picking only static ones).
  auto shape_value = [&](const Node& shape_of, bool partial) -> std::optional<Tensor> {
    const Type t = TypeOf(shape_of.operand(0));
    const AttrValue* dtype = shape_of.attrs().Find("dtype");
    if (!t.is_tensor() || dtype == nullptr) return std::nullopt;
    std::vector<int64_t> dims;
    for (const DimExpr& d : t.shape()) {
      if (!d.is_constant() && !partial) return std::nullopt;
      dims.push_back(d.is_constant() ? d.constant() : 0);
    }
    return Tensor::FromInt64s(std::get<DType>(*dtype), {t.rank()}, dims);
  };
  if (op.name() == "shape_of") return shape_value(n, /*partial=*/false);
  std::vector<Tensor> ins;
  ins.reserve(n.num_operands());
  const Node* source = n.operand(0) ? n.operand(0)->producer() : nullptr;
  if (op.name() == "take" && source != nullptr && source->kind() == NodeKind::kCall &&
      source->op()->name() == "shape_of") {
    // Static dims picked out of a partly symbolic shape (Shape -> Gather): only the picked
    // dims matter, and the indices must be constant.
    std::optional<Tensor> idx = Fold(n.operand(1), depth + 1);
    std::optional<Tensor> shape = shape_value(*source, /*partial=*/true);
    if (!idx || !shape) return std::nullopt;
    const Type t = TypeOf(source->operand(0));
    const int64_t rank = t.rank();
    for (int64_t i = 0; i < idx->num_elements(); ++i) {
      int64_t k = static_cast<int64_t>(idx->GetDouble(i));
      if (k < 0) k += rank;
      if (k < 0 || k >= rank || !t.shape()[k].is_constant()) return std::nullopt;
    }
    ins.push_back(*std::move(shape));
    ins.push_back(*std::move(idx));
  } else {
    for (const Value* operand : n.operands()) {
      std::optional<Tensor> t = Fold(operand, depth + 1);
      // Small operands only: folding weights is fold-constants' job, not the importer's.
      if (!t || t->num_elements() > kMaxElements) return std::nullopt;
      ins.push_back(*std::move(t));
    }
  }
  std::vector<ShapeInput> shape_ins;
  for (const Tensor& t : ins) shape_ins.push_back(ShapeInput{t.type(), &t});
  auto types = op.InferTypes(n.attrs(), std::move(shape_ins));
  if (!types.ok() || types->size() != 1) return std::nullopt;
  // The result's size is known before running the kernel: check it first (a Range or
  // ConstantOfShape of constants may ask for any size; folding is for small values only).
  std::vector<int64_t> out_dims;
  for (const DimExpr& d : (*types)[0].shape()) {
    if (!d.is_constant()) return std::nullopt;
    out_dims.push_back(d.constant());
  }
  auto out_count = CheckedNumElements(out_dims);
  if (!out_count.ok() || *out_count > kMaxElements) return std::nullopt;
  auto out = op.reference()(ins, n.attrs(), *types);
  if (!out.ok() || out->size() != 1 || (*out)[0].num_elements() > kMaxElements) {
    return std::nullopt;
  }
  return (*out)[0];
}

Type ImportContext::TypeOf(const Value* v) const {
  if (v == nullptr) return Type();
  if (!v->type().is_unset()) return v->type();
  auto it = types_.find(v);
  return it == types_.end() ? Type() : it->second;
}

DType ImportContext::DTypeOf(const Value* v) const {
  Type t = TypeOf(v);
  return t.is_tensor() ? t.dtype() : DType::kF32;
}

int ImportContext::RankOf(const Value* v) const {
  Type t = TypeOf(v);
  return t.is_tensor() ? t.rank() : -1;
}

// ---- tensors ---------------------------------------------------------------------------------

absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: return DType::kF32;
    case onnx::TensorProto::DOUBLE: return DType::kF64;
    case onnx::TensorProto::FLOAT16: return DType::kF16;
    case onnx::TensorProto::BFLOAT16: return DType::kBF16;
    case onnx::TensorProto::INT8: return DType::kI8;
    case onnx::TensorProto::UINT8: return DType::kU8;
    case onnx::TensorProto::INT32: return DType::kI32;
    case onnx::TensorProto::INT64: return DType::kI64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    case onnx::TensorProto::INT16: return DType::kI16;
    case onnx::TensorProto::UINT16: return DType::kU16;
    case onnx::TensorProto::UINT32: return DType::kU32;
    case onnx::TensorProto::UINT64: return DType::kU64;
    default: break;
  }
  const std::string name = onnx::TensorProto::DataType_IsValid(elem_type)
                               ? onnx::TensorProto::DataType_Name(
                                     static_cast<onnx::TensorProto::DataType>(elem_type))
                               : absl::StrCat(elem_type);
  return absl::UnimplementedError(absl::StrCat("unsupported ONNX element type ", name));
}

absl::StatusOr<Type> TypeFromOnnx(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) {
    if (!t.sequence_type().has_elem_type()) return Type::Sequence(Type());
    // Exporters write element types loosely (ONNX's own tests declare `[]` for sequences of
    // vectors, or no shape at all): an element type without dims is left open (`seq<?>`), so
    // what goes in decides.
    const onnx::TypeProto& e = t.sequence_type().elem_type();
    if (e.has_tensor_type() && (!e.tensor_type().has_shape() || e.tensor_type().shape().dim_size() == 0)) {
      return Type::Sequence(Type());
    }
    ASSIGN_OR_RETURN(Type elem, TypeFromOnnx(e));
    if (!elem.is_tensor()) return absl::UnimplementedError("only sequences of tensors are supported");
    return Type::Sequence(std::move(elem));
  }
  if (t.has_optional_type()) {
    if (!t.optional_type().has_elem_type()) return absl::InvalidArgumentError("optional type without element type");
    ASSIGN_OR_RETURN(Type elem, TypeFromOnnx(t.optional_type().elem_type()));
    if (elem.is_optional()) return absl::InvalidArgumentError("an optional of an optional");
    return Type::Optional(std::move(elem));
  }
  if (!t.has_tensor_type()) return absl::UnimplementedError("maps and sparse tensors are not supported");
  const auto& tt = t.tensor_type();
  ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(tt.elem_type()));
  if (!tt.has_shape()) return absl::UnimplementedError("a tensor type without a shape (unknown rank)");
  std::vector<DimExpr> dims;
  for (const auto& d : tt.shape().dim()) {
    dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? DimExpr(d.dim_value()) : DimExpr::Unknown());
  }
  return Type::Tensor(dtype, std::move(dims));
}

namespace {

// TensorFromProto; with `take` (t's own raw_data, given up by the caller) the bytes are moved.
absl::StatusOr<Tensor> TensorFromProtoImpl(const onnx::TensorProto& t, std::string* take) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(t.data_type()));
  if (t.segment().begin() != 0 || t.segment().end() != 0) {
    return absl::UnimplementedError(absl::StrFormat("tensor '%s' is segmented", t.name()));
  }
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  auto count = CheckedNumElements(shape);
  if (!count.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tensor '%s': %s", t.name(), count.status().message()));
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    // Beside the model file (onnx_external_data.h): read once into the tensor's own buffer.
    if (DTypeSize(dtype) == 0) {
      return absl::UnimplementedError(absl::StrFormat("tensor '%s': external data of this dtype", t.name()));
    }
    int64_t expected = 0;
    if (__builtin_mul_overflow(*count, static_cast<int64_t>(DTypeSize(dtype)), &expected)) {
      return absl::InvalidArgumentError(absl::StrFormat("tensor '%s': its byte size overflows", t.name()));
    }
    ASSIGN_OR_RETURN(std::string bytes, ReadExternalData(t, expected));
    auto r = Tensor::FromOwnedBytes(dtype, shape, std::move(bytes));
    if (!r.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("tensor '%s': %s", t.name(), r.status().message()));
    }
    return r;
  }
  if (t.has_raw_data()) {
    // A marker of a mapped file's skeleton (onnx_mapped_model.h): the weight is copied out of
    // the mapping into the tensor's own buffer, the one copy of it the process holds.
    std::string copied;
    if (const MappedModel* mapped = PayloadScope::Current()) {
      int64_t expected = -1;
      if (__builtin_mul_overflow(*count, static_cast<int64_t>(DTypeSize(dtype)), &expected)) expected = -1;
      if (std::optional<absl::string_view> payload = mapped->Resolve(t.raw_data(), expected)) {
        // Chunk by chunk, each copied chunk's file pages dropped: the weight is held about once
        // at the peak, not once in the mapping and once in the copy.
        copied.reserve(payload->size());
        PrefaultForWrite(copied.data(), payload->size());
        AppendOutOfMapping(&copied, payload->data(), payload->size());
        mapped->Release(*payload);
        take = &copied;
      }
    }
    auto r = take != nullptr ? Tensor::FromOwnedBytes(dtype, shape, std::move(*take))
                             : Tensor::FromBytes(dtype, shape, t.raw_data());
    if (!r.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor '%s': %s", t.name(), r.status().message()));
    }
    return r;
  }
  const int64_t n = *count;
  // Check the element count against the data field BEFORE allocating (dims are user input).
  int64_t have = 0;
  switch (dtype) {
    case DType::kF32: have = t.float_data_size(); break;
    case DType::kF64: have = t.double_data_size(); break;
    case DType::kI64: have = t.int64_data_size(); break;
    case DType::kU32:
    case DType::kU64: have = t.uint64_data_size(); break;
    default: have = t.int32_data_size(); break;  // i32, i16, u16, i8, u8, bool; f16/bf16 bits
  }
  if (have != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' has %d elements for shape [%s]", t.name(), have, absl::StrJoin(shape, ", ")));
  }
  Tensor out = Tensor::Zeros(dtype, shape);
  switch (dtype) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) out.SetDouble(i, t.float_data(i));
      return out;
    case DType::kF64:
      for (int64_t i = 0; i < n; ++i) out.SetDouble(i, t.double_data(i));
      return out;
    case DType::kI64:
      for (int64_t i = 0; i < n; ++i) out.SetInt64(i, t.int64_data(i));
      return out;
    case DType::kI32:
    case DType::kI16:
    case DType::kU16:
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) out.SetInt64(i, t.int32_data(i));
      return out;
    case DType::kU32:
    case DType::kU64:  // bit patterns: SetInt64 wraps the u64 values from 2^63 up back
      for (int64_t i = 0; i < n; ++i) out.SetInt64(i, static_cast<int64_t>(t.uint64_data(i)));
      return out;
    case DType::kF16:
    case DType::kBF16: {
      uint16_t* p = out.mutable_data_as<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(t.int32_data(i));
      return out;
    }
  }
  return absl::InternalError("unhandled dtype");
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& t) {
  return TensorFromProtoImpl(t, nullptr);
}

absl::StatusOr<Tensor> TensorFromProto(onnx::TensorProto&& t) {
  return TensorFromProtoImpl(t, t.has_raw_data() ? t.mutable_raw_data() : nullptr);
}

}  // namespace onnx_frontend

namespace {

using onnx_frontend::ImportContext;

// One read into a buffer of the file's size: models are megabytes, and streaming them through
// an ostringstream cost a tenth of a warm compile of the MLP.
// A directory, a missing path or an empty file is an error naming it (support/file.h).
// An empty .pb is a valid (empty) protobuf message; an empty model is not a model.
absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what,
                                     bool allow_empty = false) {
  ReadFileOptions options;
  options.what = what;
  options.allow_empty = allow_empty;
  return ReadRegularFile(path, options);
}

// A valid IR identifier ([A-Za-z_][A-Za-z0-9_]*) from an ONNX dim_param.
std::string SanitizeSymbol(absl::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

// Converters implement opsets kMinConvertedOpset..kMaxOpset.
constexpr int kMinConvertedOpset = 11;
constexpr int kMaxOpset = 17;

class GraphImporter {
 public:
  // `model` is consumed: each initializer's parsed bytes become its constant's, uncopied, so a
  // model's weights live in memory once after parsing (the file's bytes are freed then).
  GraphImporter(onnx::ModelProto& model, const OnnxImportOptions& options,
                absl::string_view source_name)
      : model_(model), options_(options), source_name_(source_name) {}

  absl::StatusOr<std::unique_ptr<Module>> Run() {
    ASSIGN_OR_RETURN(int64_t opset, CheckOpset());
    const onnx::GraphProto& g = model_.graph();
    RETURN_IF_ERROR(CheckSupported(g, opset));

    auto module = std::make_unique<Module>();
    module->set_source_name(std::string(source_name_));
    Function* f = module->AddFunction(options_.function_name);
    f->set_loc(NamedLocation(g.name()));
    ImportContext ctx(module.get(), &f->body(), options_.registry,
                      std::max<int64_t>(opset, kMinConvertedOpset), opset);

    // Phase 2 + 3: signature and initializers.
    absl::flat_hash_set<std::string> initializer_names;
    for (const auto& init : g.initializer()) initializer_names.insert(init.name());
    ReserveNamedSymbols(g, initializer_names);
    for (const auto& in : g.input()) {
      if (initializer_names.contains(in.name())) continue;
      ASSIGN_OR_RETURN(Type t, InputType(in));
      Define(in.name(), f->body().AddParam(std::move(t), in.name()));
    }
    for (auto& init : *model_.mutable_graph()->mutable_initializer()) {
      auto t = onnx_frontend::TensorFromProto(std::move(init));  // its bytes move over
      if (!t.ok()) return WithSource(t.status(), "initializer");
      const bool large = t->nbytes() >= kReleasableInitializerBytes;
      Value* v = ctx.Const(*std::move(t), init.name());
      Define(init.name(), v);
      if (large) {
        large_initializers_[init.name()] = v;
        large_values_.insert(v);
      }
    }
    CountInitializerUses(g);

    // Phase 4: nodes.
    top_graph_ = &g;
    RETURN_IF_ERROR(ImportNodes(g, ctx));
    SweepReleasedInitializers(f->body());

    // Phase 5: results.
    ASSIGN_OR_RETURN(std::vector<Value*> results, GraphResults(g, "graph"));
    f->body().set_results(std::move(results));
    if (options_.infer_types) {
      // Data-dependent dims stay `?` in an import: naming them is the pipeline's choice.
      InferTypesOptions infer;
      infer.name_data_dims = false;
      auto changed = CreateInferTypesPass(infer)->Run(*module);
      if (!changed.ok()) return WithSource(changed.status(), "");
    }
    return module;
  }

 private:
  absl::Status WithSource(const absl::Status& s, absl::string_view what) const {
    return absl::Status(s.code(), absl::StrCat(source_name_, ": ", what,
                                               what.empty() ? "" : " ", s.message()));
  }

  // ---- names and scopes ----

  void Define(const std::string& name, Value* v) { scopes_.back()[name] = v; }

  // Innermost scope first: a subgraph sees (and may shadow) the names of its enclosing graphs.
  Value* Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return nullptr;
  }

  absl::StatusOr<std::vector<Value*>> GraphResults(const onnx::GraphProto& g,
                                                   absl::string_view what) const {
    std::vector<Value*> results;
    for (const auto& out : g.output()) {
      Value* v = Lookup(out.name());
      if (v == nullptr) {
        auto m = missing_outputs_.find(out.name());
        if (m != missing_outputs_.end()) {
          return absl::UnimplementedError(
              absl::StrCat(m->second, "output '", out.name(), "' is not supported"));
        }
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: %s output '%s' is not produced by any node", source_name_, what, out.name()));
      }
      results.push_back(v);
    }
    return results;
  }

  // ---- nodes ----

  // Phase 4 for one graph (the main graph or a body), into ctx's current block.
  absl::Status ImportNodes(const onnx::GraphProto& g, ImportContext& ctx) {
    Block* block = ctx.block();
    for (const auto& node : g.node()) {
      ctx.set_current(&node);
      std::vector<Value*> inputs;
      for (const std::string& name : node.input()) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        Value* v = Lookup(name);
        if (v == nullptr) {
          return WithSource(
              ctx.Error(absl::StrFormat("input '%s' is not defined before its use", name)), "");
        }
        inputs.push_back(v);
      }
      const size_t first_new = block->nodes().size();
      absl::StatusOr<std::vector<Value*>> outs;
      if (node.op_type() == "If") {
        outs = ImportIf(node, inputs, ctx);
      } else if (node.op_type() == "Loop") {
        outs = ImportLoop(node, inputs, ctx);
      } else if (node.op_type() == "SequenceMap") {
        outs = ImportSequenceMap(node, inputs, ctx);
      } else {
        outs = onnx_frontend::FindConverter(node.op_type())(ctx, node, inputs);
      }
      if (!outs.ok()) {
        // Errors from inside a body already carry the source name.
        if (absl::StartsWith(outs.status().message(), source_name_)) return outs.status();
        return WithSource(outs.status(), "");
      }
      ctx.set_current(&node);
      // Values made for this node take the ONNX output names (pass-through outputs, such as
      // Identity's, keep the name they have).
      absl::flat_hash_set<const Node*> made;
      for (size_t i = first_new; i < block->nodes().size(); ++i) {
        made.insert(block->nodes()[i].get());
      }
      for (int i = 0; i < node.output_size(); ++i) {
        const std::string& name = node.output(i);
        if (name.empty()) continue;
        Value* v = i < static_cast<int>(outs->size()) ? (*outs)[i] : nullptr;
        if (v == nullptr) {
          // Only an error if something uses it; record the gap.
          missing_outputs_[name] = ctx.Where();
          continue;
        }
        if (v->producer() != nullptr && made.contains(v->producer())) v->set_name(name);
        Define(name, v);
      }
      if (&g == top_graph_ && !large_initializers_.empty()) {
        ReleaseConsumedInitializers(node, *outs, made, ctx);
      }
    }
    ctx.set_current(nullptr);
    return absl::OkStatus();
  }

  // ---- initializers folded away ----
  //
  // A converter may fold a large initializer into a new constant (MatMul's weight transposed,
  // a Gemm's B with transB = 0): the original then has no use left, but until dce it held the
  // model's bytes a second time, and a BERT-base encoder's import peaked at the file size plus
  // its transposed weights. An initializer of the main graph is released once the last ONNX
  // node naming it is converted, when no IR node uses it and no name stands for it: its data
  // goes at once, its node when the graph is done. Small ones stay for dce: they cost nothing
  // and keep an import readable.

  static constexpr size_t kReleasableInitializerBytes = 64 * 1024;

  // Uses left per large initializer: each time a main-graph node names it as an input. A graph
  // output and a name read inside any subgraph (If/Loop bodies capture outer names) pin it.
  void CountInitializerUses(const onnx::GraphProto& g) {
    if (large_initializers_.empty()) return;
    for (const auto& node : g.node()) {
      for (const std::string& in : node.input()) {
        if (large_initializers_.contains(in)) ++initializer_uses_[in];
      }
      for (const auto& a : node.attribute()) PinSubgraphNames(a);
    }
    for (const auto& out : g.output()) Pin(out.name());
  }
  void PinSubgraphNames(const onnx::AttributeProto& a) {
    auto walk = [&](const onnx::GraphProto& body) {
      for (const auto& n : body.node()) {
        for (const std::string& in : n.input()) Pin(in);
        for (const auto& inner : n.attribute()) PinSubgraphNames(inner);
      }
      for (const auto& out : body.output()) Pin(out.name());
    };
    if (a.has_g()) walk(a.g());
    for (const auto& body : a.graphs()) walk(body);
  }
  void Pin(const std::string& name) {
    if (auto it = large_initializers_.find(name); it != large_initializers_.end()) {
      pinned_.insert(it->second);
    }
  }

  // After `node` is converted: its new IR nodes' operands and its outputs pin what they name;
  // its inputs' counts go down, and an initializer at zero is released.
  void ReleaseConsumedInitializers(const onnx::NodeProto& node, const std::vector<Value*>& outs,
                                   const absl::flat_hash_set<const Node*>& made,
                                   ImportContext& ctx) {
    // Only large initializers are remembered: every other value a node uses is no candidate.
    auto pin = [&](const Value* v) {
      if (large_values_.contains(v)) pinned_.insert(v);
    };
    std::function<void(const Node&)> pin_operands = [&](const Node& n) {
      for (const Value* v : n.operands()) pin(v);
      for (int r = 0; r < n.num_regions(); ++r) {
        for (const Value* v : n.region(r)->results()) pin(v);
        WalkNodes(static_cast<const Block&>(*n.region(r)), pin_operands);
      }
    };
    for (const Node* n : made) pin_operands(*n);
    for (const Value* v : outs) pin(v);
    for (const std::string& in : node.input()) {
      auto uses = initializer_uses_.find(in);
      if (uses == initializer_uses_.end() || --uses->second > 0) continue;
      Value* v = large_initializers_.at(in);
      if (pinned_.contains(v)) continue;
      Node* constant = v->producer();
      constant->set_constant_value(Tensor());  // the bytes go now (unless a fold shares them)
      released_.insert(constant);
      ctx.Forget(v);
      scopes_.front().erase(in);
    }
  }

  // Removes the released initializers' nodes from the main body, in one pass.
  void SweepReleasedInitializers(Block& body) {
    if (released_.empty()) return;
    auto& nodes = body.mutable_nodes();
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                               [&](const std::unique_ptr<Node>& n) { return released_.contains(n.get()); }),
                nodes.end());
    released_.clear();
  }

  static const onnx::GraphProto* GraphAttr(const onnx::NodeProto& node, absl::string_view name) {
    for (const auto& a : node.attribute()) {
      if (a.name() == name && a.has_g()) return &a.g();
    }
    return nullptr;
  }

  // Imports `body` into `region` in a new scope (whose names vanish afterwards, as in ONNX),
  // then returns the values named by the body's outputs. `params` are defined first.
  absl::StatusOr<std::vector<Value*>> ImportBody(
      const onnx::GraphProto& body, Block* region, ImportContext& ctx,
      const std::vector<std::pair<std::string, Value*>>& params, absl::string_view what) {
    const onnx::NodeProto* owner = &ctx.current();
    Block* outer = ctx.block();
    scopes_.emplace_back();
    for (const auto& [name, v] : params) Define(name, v);
    // Initializers of a body are constants of the region.
    ctx.set_block(region);
    absl::Status st = absl::OkStatus();
    for (const auto& init : body.initializer()) {
      auto t = onnx_frontend::TensorFromProto(init);
      if (!t.ok()) {
        st = WithSource(t.status(), absl::StrCat(what, " initializer"));
        break;
      }
      Define(init.name(), ctx.Const(*std::move(t), init.name()));
    }
    if (st.ok()) st = ImportNodes(body, ctx);
    absl::StatusOr<std::vector<Value*>> results =
        st.ok() ? GraphResults(body, what) : absl::StatusOr<std::vector<Value*>>(st);
    scopes_.pop_back();
    ctx.set_block(outer);
    ctx.set_current(owner);
    return results;
  }

  // dtype and rank when both sides agree; a dim stays only where both have the same one.
  static Type JoinLocal(const Type& a, const Type& b) {
    if ((a.is_sequence() || a.is_optional()) && a.kind() == b.kind()) {
      return JoinTypes(a, b).value_or(Type());
    }
    if (!a.is_tensor() || !b.is_tensor() || a.dtype() != b.dtype() || a.rank() != b.rank()) {
      return Type();
    }
    std::vector<DimExpr> dims;
    for (int i = 0; i < a.rank(); ++i) {
      dims.push_back(a.shape()[i] == b.shape()[i] ? a.shape()[i] : DimExpr::Unknown());
    }
    return Type::Tensor(a.dtype(), std::move(dims));
  }

  static Type UnknownDims(const Type& t) {
    if (t.is_sequence()) return Type::Sequence(t.element().is_unset() ? Type() : UnknownDims(t.element()));
    if (t.is_optional()) return Type::Optional(UnknownDims(t.element()));
    if (!t.is_tensor()) return Type();
    return Type::Tensor(t.dtype(), std::vector<DimExpr>(t.rank(), DimExpr::Unknown()));
  }

  Node* AppendRegionNode(NodeKind kind, const std::vector<Value*>& operands, ImportContext& ctx) {
    auto owned = std::make_unique<Node>(kind);
    for (Value* v : operands) owned->AddOperand(v);
    owned->set_loc(NamedLocation(ctx.current().name()));
    return ctx.block()->Append(std::move(owned));
  }

  // If(cond) then_branch / else_branch -> `if (%cond) { ... } else { ... }`.
  absl::StatusOr<std::vector<Value*>> ImportIf(const onnx::NodeProto& node,
                                               const std::vector<Value*>& inputs,
                                               ImportContext& ctx) {
    const onnx::GraphProto* then_g = GraphAttr(node, "then_branch");
    const onnx::GraphProto* else_g = GraphAttr(node, "else_branch");
    if (then_g == nullptr || else_g == nullptr) {
      return ctx.Error("needs graph attributes 'then_branch' and 'else_branch'");
    }
    if (inputs.size() != 1 || inputs[0] == nullptr) return ctx.Error("takes one input, cond");
    if (then_g->output_size() != else_g->output_size() ||
        then_g->output_size() != node.output_size()) {
      return ctx.Error(absl::StrFormat(
          "then_branch yields %d values and else_branch %d, for %d outputs",
          then_g->output_size(), else_g->output_size(), node.output_size()));
    }
    if (then_g->input_size() != 0 || else_g->input_size() != 0) {
      return ctx.Error("If branches take no inputs");
    }
    // A condition that follows from constants and static shapes (exporters test a dim, e.g.
    // torchvision's "squeeze if dim 1 is 1") picks its branch now. This is not only shorter:
    // such branches may yield different ranks, which no `if` result type can join.
    if (std::optional<Tensor> cond = ctx.ConstValue(inputs[0]);
        cond && cond->num_elements() == 1) {
      const onnx::GraphProto* taken = cond->GetDouble(0) != 0 ? then_g : else_g;
      return ImportBody(*taken, ctx.block(), ctx, {},
                        absl::StrCat(ctx.Where(), taken == then_g ? "then_branch" : "else_branch"));
    }
    Node* n = AppendRegionNode(NodeKind::kIf, {inputs[0]}, ctx);
    ASSIGN_OR_RETURN(std::vector<Value*> then_r,
                     ImportBody(*then_g, n->region(0), ctx, {},
                                absl::StrCat(ctx.Where(), "then_branch")));
    ASSIGN_OR_RETURN(std::vector<Value*> else_r,
                     ImportBody(*else_g, n->region(1), ctx, {},
                                absl::StrCat(ctx.Where(), "else_branch")));
    n->region(0)->set_results(then_r);
    n->region(1)->set_results(else_r);
    std::vector<Value*> outs;
    for (size_t i = 0; i < then_r.size(); ++i) {
      Value* r = n->AddResult();
      ctx.SetLocalType(r, JoinLocal(ctx.TypeOf(then_r[i]), ctx.TypeOf(else_r[i])));
      outs.push_back(r);
    }
    return outs;
  }

  // SequenceMap(s, extra...) body(x, extra...) -> (y...): a loop over the elements of s,
  //   %len = seq.length(%s)
  //   %r... = loop(%len, true, seq.empty()...) (%i, %c, %acc...) {
  //     %x = seq.at(%s, %i)          (each sequence input; tensors are used as they are)
  //     ...body...
  //     yield %c, seq.insert(%acc, %y)...
  //   }
  // ONNX requires every sequence input to have the length of the first.
  absl::StatusOr<std::vector<Value*>> ImportSequenceMap(const onnx::NodeProto& node,
                                                        const std::vector<Value*>& inputs,
                                                        ImportContext& ctx) {
    const onnx::GraphProto* body = GraphAttr(node, "body");
    if (body == nullptr) return ctx.Error("needs a graph attribute 'body'");
    if (inputs.empty() || inputs[0] == nullptr) return ctx.Error("needs an input sequence");
    if (body->input_size() != static_cast<int>(inputs.size())) {
      return ctx.Error(absl::StrFormat("the body has %d inputs for %d node inputs",
                                       body->input_size(), inputs.size()));
    }
    const int results = body->output_size();
    if (node.output_size() > results) {
      return ctx.Error(absl::StrFormat("has %d outputs but its body gives %d", node.output_size(), results));
    }
    ASSIGN_OR_RETURN(Value * len, ctx.BuiltinOp(Builtin::kSeqLength, {inputs[0]}));
    std::vector<Value*> operands{len, ctx.Const(Tensor::Scalar(DType::kBool, 1))};
    for (int j = 0; j < results; ++j) {
      ASSIGN_OR_RETURN(Value * e, ctx.BuiltinOp(Builtin::kSeqEmpty, {}, Type::Sequence(Type())));
      operands.push_back(e);
    }
    Node* n = AppendRegionNode(NodeKind::kLoop, operands, ctx);
    Block* region = n->region(0);
    Value* iter = region->AddParam(Type(), "i");
    ctx.SetLocalType(iter, Type::Tensor(DType::kI64, {}));
    Value* cond = region->AddParam(Type(), "cond");
    ctx.SetLocalType(cond, Type::Tensor(DType::kBool, {}));
    std::vector<Value*> accs;
    for (int j = 0; j < results; ++j) {
      accs.push_back(region->AddParam(Type(), "acc"));
      ctx.SetLocalType(accs.back(), Type::Sequence(Type()));
    }
    Block* outer = ctx.block();
    ctx.set_block(region);
    std::vector<std::pair<std::string, Value*>> params;
    for (size_t k = 0; k < inputs.size(); ++k) {
      Value* in = inputs[k];
      if (in == nullptr) {
        ctx.set_block(outer);
        return ctx.Error(absl::StrCat("input ", k, " is empty"));
      }
      if (ctx.TypeOf(in).is_sequence()) {
        auto at = ctx.BuiltinOp(Builtin::kSeqAt, {in, iter});
        if (!at.ok()) {
          ctx.set_block(outer);
          return at.status();
        }
        in = *at;
      }
      params.emplace_back(body->input(static_cast<int>(k)).name(), in);
    }
    ctx.set_block(outer);
    ASSIGN_OR_RETURN(std::vector<Value*> ys,
                     ImportBody(*body, region, ctx, params, absl::StrCat(ctx.Where(), "body")));
    ctx.set_block(region);
    std::vector<Value*> yields{cond};
    for (int j = 0; j < results; ++j) {
      auto ins = ctx.BuiltinOp(Builtin::kSeqInsert, {accs[j], ys[j]});
      if (!ins.ok()) {
        ctx.set_block(outer);
        return ins.status();
      }
      yields.push_back(*ins);
    }
    ctx.set_block(outer);
    region->set_results(yields);
    std::vector<Value*> outs;
    for (int j = 0; j < results; ++j) {
      Value* r = n->AddResult();
      ctx.SetLocalType(r, UnknownDims(ctx.TypeOf(yields[1 + j])));
      outs.push_back(r);
    }
    return outs;
  }

  // Loop(M?, cond?, v_initial...) body(iter, cond_in, v...) -> (cond_out, v..., scan...)
  // -> `loop(%M, %cond, %v...) (%iter, %cond_in, %v...) { ... yield ... }`.
  absl::StatusOr<std::vector<Value*>> ImportLoop(const onnx::NodeProto& node,
                                                 const std::vector<Value*>& inputs,
                                                 ImportContext& ctx) {
    const onnx::GraphProto* body = GraphAttr(node, "body");
    if (body == nullptr) return ctx.Error("needs a graph attribute 'body'");
    if (inputs.size() < 2) return ctx.Error("takes M, cond and the loop-carried values");
    const int carried = static_cast<int>(inputs.size()) - 2;
    if (body->input_size() != 2 + carried) {
      return ctx.Error(absl::StrFormat(
          "the body has %d inputs but needs %d (iteration number, condition and %d carried)",
          body->input_size(), 2 + carried, carried));
    }
    if (body->output_size() < 1 + carried) {
      return ctx.Error(absl::StrFormat(
          "the body has %d outputs but needs at least %d (condition and %d carried)",
          body->output_size(), 1 + carried, carried));
    }
    const int scans = body->output_size() - 1 - carried;
    if (node.output_size() > carried + scans) {
      return ctx.Error(absl::StrFormat("has %d outputs but its body gives %d carried and %d scan",
                                       node.output_size(), carried, scans));
    }
    std::vector<Value*> operands = inputs;
    // ONNX: an absent M means no trip limit, an absent cond means true.
    if (operands[0] == nullptr) {
      operands[0] = ctx.Const(Tensor::FromInt64s(DType::kI64, {}, {INT64_MAX}));
    }
    if (operands[1] == nullptr) operands[1] = ctx.Const(Tensor::Scalar(DType::kBool, 1));
    for (int k = 0; k < carried; ++k) {
      if (operands[2 + k] == nullptr) return ctx.Error("a loop-carried input is empty");
    }
    Node* n = AppendRegionNode(NodeKind::kLoop, operands, ctx);
    Block* region = n->region(0);
    std::vector<std::pair<std::string, Value*>> params;
    // The iteration number and condition are typed by infer-types (i64[], bool[]); carried
    // values start from their initial value, whose dims may change from one trip to the next.
    for (int i = 0; i < body->input_size(); ++i) {
      Value* p = region->AddParam(Type(), body->input(i).name());
      if (i == 0) ctx.SetLocalType(p, Type::Tensor(DType::kI64, {}));
      if (i == 1) ctx.SetLocalType(p, Type::Tensor(DType::kBool, {}));
      if (i >= 2) ctx.SetLocalType(p, UnknownDims(ctx.TypeOf(operands[i])));
      params.emplace_back(body->input(i).name(), p);
    }
    ASSIGN_OR_RETURN(std::vector<Value*> yields,
                     ImportBody(*body, region, ctx, params, absl::StrCat(ctx.Where(), "body")));
    // Loop-16 lets an optional carried value come back as its content (test_loop16_seq_none:
    // an absent sequence, then a sequence): the body re-wraps it with opt.some, and the result
    // is unwrapped with opt.get after the loop (the graph declares the content's type).
    std::vector<bool> unwrap(carried, false);
    for (int k = 0; k < carried; ++k) {
      const Type in = ctx.TypeOf(operands[2 + k]);
      const Type out = ctx.TypeOf(yields[1 + k]);
      if (!in.is_optional() || out.is_unset() || out.is_optional()) continue;
      Block* outer = ctx.block();
      ctx.set_block(region);
      auto some = ctx.BuiltinOp(Builtin::kOptSome, {yields[1 + k]});
      ctx.set_block(outer);
      if (!some.ok()) return some.status();
      yields[1 + k] = *some;
      unwrap[k] = true;
    }
    region->set_results(yields);
    std::vector<Value*> outs;
    for (int i = 0; i < carried + scans; ++i) {
      Value* r = n->AddResult();
      if (i < carried && unwrap[i]) {
        ctx.SetLocalType(r, UnknownDims(ctx.TypeOf(operands[2 + i])));
        ASSIGN_OR_RETURN(Value * got, ctx.BuiltinOp(Builtin::kOptGet, {r}));
        outs.push_back(got);
        continue;
      }
      if (i < carried) {
        ctx.SetLocalType(r, UnknownDims(ctx.TypeOf(operands[2 + i])));
      } else {
        Type t = ctx.TypeOf(yields[1 + i]);
        if (t.is_tensor()) {
          std::vector<DimExpr> dims{DimExpr::Unknown()};
          dims.insert(dims.end(), t.shape().begin(), t.shape().end());
          ctx.SetLocalType(r, Type::Tensor(t.dtype(), std::move(dims)));
        }
      }
      outs.push_back(r);
    }
    return outs;
  }

  absl::StatusOr<int64_t> CheckOpset() const {
    std::optional<int64_t> opset;
    for (const auto& id : model_.opset_import()) {
      if (id.domain().empty() || id.domain() == "ai.onnx") opset = id.version();
    }
    if (!opset) {
      // Models of other domains only (ai.onnx.preview.training: Adam, Momentum, ...).
      std::vector<std::string> domains;
      for (const auto& id : model_.opset_import()) domains.push_back(id.domain());
      return absl::UnimplementedError(absl::StrCat(
          source_name_, ": model imports no opset of the default domain (domains: ",
          absl::StrJoin(domains, ", "), ")"));
    }
    if (*opset < 1 || *opset > kMaxOpset) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: unsupported opset %d (the ONNX importer supports opsets %d to %d, and older "
          "ones for ops unchanged since)",
          source_name_, *opset, kMinConvertedOpset, kMaxOpset));
    }
    return *opset;
  }

  // For a model older than opset 11: "" when op_type has the same version at `opset` as at 11
  // (ONNX's schema registry), or an older version its converter handles, else why it cannot be
  // imported.
  static std::string OlderVersionProblem(const std::string& op_type, int64_t opset) {
    if (opset >= kMinConvertedOpset) return "";
    const onnx::OpSchema* then = onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(opset));
    const onnx::OpSchema* now = onnx::OpSchemaRegistry::Schema(op_type, kMinConvertedOpset);
    if (then == nullptr || now == nullptr) return "";  // reported as unsupported op types
    if (then->since_version() == now->since_version()) return "";
    // Older versions whose converters read them: Scatter-9 is ScatterElements without negative
    // indices, Upsample-9 takes its scales as an input like Upsample-10, ReduceLogSum-1 lacks
    // only negative axes, and ConvTranspose-1 differs from -11 only in how output_shape and
    // SAME padding split the padding, which its converter refuses below opset 11.
    static const absl::flat_hash_map<std::string, int> kOlderConverted = {
        {"Scatter", 9}, {"Upsample", 9}, {"ReduceLogSum", 1}, {"ConvTranspose", 1}};
    if (auto it = kOlderConverted.find(op_type);
        it != kOlderConverted.end() && then->since_version() >= it->second) {
      return "";
    }
    return absl::StrFormat("%s-%d differs from %s-%d, the oldest version this importer converts",
                           op_type, then->since_version(), op_type, now->since_version());
  }

  absl::Status CheckSupported(const onnx::GraphProto& g, int64_t opset) const {
    std::vector<std::string> problems;
    CollectUnsupported(g, opset, problems);
    if (problems.empty()) return absl::OkStatus();
    return absl::UnimplementedError(
        absl::StrFormat("%s: %d unsupported node(s):\n  %s", source_name_, problems.size(),
                        absl::StrJoin(problems, "\n  ")));
  }

  // Every unsupported node, bodies of If and Loop included (depth-first, in graph order).
  void CollectUnsupported(const onnx::GraphProto& g, int64_t opset,
                          std::vector<std::string>& problems) const {
    for (const auto& node : g.node()) {
      const std::string where =
          absl::StrFormat("%s '%s' (opset %d)", node.op_type(), node.name(), opset);
      if (!node.domain().empty() && node.domain() != "ai.onnx") {
        problems.push_back(absl::StrCat(where, ": domain '", node.domain(), "' is not supported"));
        continue;
      }
      absl::string_view reason = onnx_frontend::OutOfScopeReason(node.op_type());
      if (std::string old = OlderVersionProblem(node.op_type(), opset); !old.empty()) {
        problems.push_back(absl::StrCat(where, ": ", old));
      } else if (node.op_type() == "If" || node.op_type() == "Loop" ||
                 node.op_type() == "SequenceMap") {
        for (const auto& a : node.attribute()) {
          if (a.has_g()) CollectUnsupported(a.g(), opset, problems);
        }
      } else if (!reason.empty()) {
        problems.push_back(absl::StrCat(where, ": ", reason));
      } else if (onnx_frontend::FindConverter(node.op_type()) == nullptr) {
        problems.push_back(absl::StrCat(where, ": no converter for op type '", node.op_type(), "'"));
      }
    }
  }

  // Named dims first, so fresh symbols can avoid their names.
  void ReserveNamedSymbols(const onnx::GraphProto& g,
                           const absl::flat_hash_set<std::string>& initializers) {
    for (const auto& in : g.input()) {
      if (initializers.contains(in.name()) || !in.type().has_tensor_type()) continue;
      for (const auto& d : in.type().tensor_type().shape().dim()) {
        if (!d.has_dim_param() || d.dim_param().empty() || symbols_.contains(d.dim_param())) {
          continue;
        }
        std::string base = SanitizeSymbol(d.dim_param());
        std::string name = base;
        for (int k = 1; used_symbols_.contains(name); ++k) name = absl::StrCat(base, "_", k);
        used_symbols_.insert(name);
        symbols_[d.dim_param()] = name;
      }
    }
  }

  std::string FreshSymbol(absl::string_view input, int axis) {
    std::string base = absl::StrCat(SanitizeSymbol(input), "_d", axis);
    std::string name = base;
    for (int k = 1; used_symbols_.contains(name); ++k) name = absl::StrCat(base, "_", k);
    used_symbols_.insert(name);
    return name;
  }

  absl::StatusOr<Type> InputType(const onnx::ValueInfoProto& in) {
    if (in.type().has_sequence_type() || in.type().has_optional_type()) {
      auto t = onnx_frontend::TypeFromOnnx(in.type());
      if (!t.ok()) {
        return absl::Status(t.status().code(), absl::StrFormat("%s: graph input '%s': %s", source_name_,
                                                               in.name(), t.status().message()));
      }
      return t;
    }
    if (!in.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: graph input '%s' is not a tensor, sequence or optional (maps are not supported)",
          source_name_, in.name()));
    }
    const auto& tt = in.type().tensor_type();
    auto dtype = onnx_frontend::DTypeFromOnnx(tt.elem_type());
    if (!dtype.ok()) {
      return absl::UnimplementedError(
          absl::StrFormat("%s: graph input '%s': %s", source_name_, in.name(),
                          dtype.status().message()));
    }
    if (!tt.has_shape()) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: graph input '%s' has no shape (unknown rank is not supported)", source_name_,
          in.name()));
    }
    std::vector<DimExpr> dims;
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() >= 0) {
        dims.push_back(DimExpr(d.dim_value()));
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        dims.push_back(DimExpr::Symbol(symbols_.at(d.dim_param())));
      } else {
        dims.push_back(DimExpr::Symbol(FreshSymbol(in.name(), i)));
      }
    }
    return Type::Tensor(*dtype, std::move(dims));
  }

  onnx::ModelProto& model_;
  const OnnxImportOptions& options_;
  absl::string_view source_name_;
  // Name scopes: the main graph's, then one per body being imported.
  std::vector<absl::flat_hash_map<std::string, Value*>> scopes_{1};
  // Initializers of kReleasableInitializerBytes or more (the main graph's), by name; ONNX
  // inputs naming each still to be converted; values that must stay; nodes to sweep.
  const onnx::GraphProto* top_graph_ = nullptr;
  absl::flat_hash_map<std::string, Value*> large_initializers_;
  absl::flat_hash_map<std::string, int64_t> initializer_uses_;
  absl::flat_hash_set<const Value*> large_values_;  // large_initializers_' values
  absl::flat_hash_set<const Value*> pinned_;
  absl::flat_hash_set<const Node*> released_;
  absl::flat_hash_map<std::string, std::string> missing_outputs_;
  absl::flat_hash_map<std::string, std::string> symbols_;  // dim_param -> symbol
  absl::flat_hash_set<std::string> used_symbols_;
};

}  // namespace

namespace {

// ImportOnnx with the bytes owned here: they are freed as soon as they are parsed.
absl::StatusOr<std::unique_ptr<Module>> ImportOwnedBytes(std::string* owned,
                                                         absl::string_view model_bytes,
                                                         const OnnxImportOptions& options,
                                                         absl::string_view source_name) {
  if (options.function_name.empty() ||
      SanitizeSymbol(options.function_name) != options.function_name) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "function name '%s' is not an identifier", options.function_name));
  }
  try {
    onnx::ModelProto model;
    if (model_bytes.size() > static_cast<size_t>(INT32_MAX) ||
        !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_name, ": not a valid ONNX model (the ModelProto does not parse)"));
    }
    if (owned != nullptr) std::string().swap(*owned);  // the parsed copy is all that is needed
    if (!model.has_graph()) {
      return absl::InvalidArgumentError(absl::StrCat(source_name, ": the model has no graph"));
    }
    return GraphImporter(model, options, source_name).Run();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(source_name, ": ONNX import failed: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(source_name, ": ONNX import failed"));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ImportOnnx(absl::string_view model_bytes,
                                                   const OnnxImportOptions& options,
                                                   absl::string_view source_name) {
  return ImportOwnedBytes(nullptr, model_bytes, options, source_name);
}

absl::StatusOr<std::unique_ptr<Module>> ImportOnnxFile(const std::string& path,
                                                       const OnnxImportOptions& options) {
  return onnx_frontend::ImportOnnxFileWith(path, options, onnx_frontend::MappedModel::kMinPayload);
}

absl::StatusOr<std::unique_ptr<Module>> onnx_frontend::ImportOnnxFileWith(
    const std::string& path, const OnnxImportOptions& options, size_t min_payload) {
  // External data files are found in the model's folder (onnx_external_data.h).
  const onnx_frontend::ExternalDataScope external(std::filesystem::path(path).parent_path().string());
  // Mapped, its weights copied once each (onnx_mapped_model.h). A file that cannot be mapped
  // or is not well-formed wire format is read and parsed whole, which names the problem.
  if (auto mapped = onnx_frontend::MappedModel::Open(path); mapped.ok()) {
    if (absl::StatusOr<std::string> skeleton = (*mapped)->Skeleton(min_payload); skeleton.ok()) {
      const onnx_frontend::PayloadScope scope(mapped->get());
      const absl::string_view view = *skeleton;
      return ImportOwnedBytes(&*skeleton, view, options, path);
    }
  }
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, "an ONNX model (.onnx)"));
  const absl::string_view view = bytes;
  return ImportOwnedBytes(&bytes, view, options, path);
}

absl::StatusOr<Tensor> ParseOnnxTensor(absl::string_view bytes) {
  try {
    onnx::TensorProto t;
    if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
        !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::InvalidArgumentError("not a valid ONNX TensorProto");
    }
    return onnx_frontend::TensorFromProto(t);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("ONNX tensor parse failed: ", e.what()));
  } catch (...) {
    return absl::InternalError("ONNX tensor parse failed");
  }
}

absl::StatusOr<Tensor> ReadOnnxTensorFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, "an ONNX tensor (.pb)", true));
  auto t = ParseOnnxTensor(bytes);
  if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  return t;
}

namespace {

absl::StatusOr<OnnxValue> FromSequenceProto(const onnx::SequenceProto& p);

absl::StatusOr<OnnxValue> FromOptionalProto(const onnx::OptionalProto& p) {
  OnnxValue v;
  v.kind = OnnxValue::Kind::kOptional;
  if (p.has_tensor_value()) {
    OnnxValue e;
    ASSIGN_OR_RETURN(e.tensor, onnx_frontend::TensorFromProto(p.tensor_value()));
    v.elements.push_back(std::move(e));
  } else if (p.has_sequence_value()) {
    ASSIGN_OR_RETURN(OnnxValue e, FromSequenceProto(p.sequence_value()));
    v.elements.push_back(std::move(e));
  } else if (p.has_sparse_tensor_value() || p.has_map_value() || p.has_optional_value()) {
    return absl::UnimplementedError("optional of a sparse tensor, map or optional");
  }
  return v;
}

absl::StatusOr<OnnxValue> FromSequenceProto(const onnx::SequenceProto& p) {
  OnnxValue v;
  v.kind = OnnxValue::Kind::kSequence;
  for (const auto& t : p.tensor_values()) {
    OnnxValue e;
    ASSIGN_OR_RETURN(e.tensor, onnx_frontend::TensorFromProto(t));
    v.elements.push_back(std::move(e));
  }
  for (const auto& s : p.sequence_values()) {
    ASSIGN_OR_RETURN(OnnxValue e, FromSequenceProto(s));
    v.elements.push_back(std::move(e));
  }
  if (p.sparse_tensor_values_size() + p.map_values_size() + p.optional_values_size() > 0) {
    return absl::UnimplementedError("sequence of sparse tensors, maps or optionals");
  }
  return v;
}

}  // namespace

absl::StatusOr<OnnxValue> ParseOnnxValue(absl::string_view bytes, OnnxValue::Kind kind) {
  if (kind == OnnxValue::Kind::kTensor) {
    OnnxValue v;
    ASSIGN_OR_RETURN(v.tensor, ParseOnnxTensor(bytes));
    return v;
  }
  try {
    const int size = bytes.size() > static_cast<size_t>(INT32_MAX) ? -1 : static_cast<int>(bytes.size());
    if (kind == OnnxValue::Kind::kSequence) {
      onnx::SequenceProto p;
      if (size < 0 || !p.ParseFromArray(bytes.data(), size)) {
        return absl::InvalidArgumentError("not a valid ONNX SequenceProto");
      }
      return FromSequenceProto(p);
    }
    onnx::OptionalProto p;
    if (size < 0 || !p.ParseFromArray(bytes.data(), size)) {
      return absl::InvalidArgumentError("not a valid ONNX OptionalProto");
    }
    return FromOptionalProto(p);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("ONNX value parse failed: ", e.what()));
  } catch (...) {
    return absl::InternalError("ONNX value parse failed");
  }
}

absl::StatusOr<OnnxValue> ReadOnnxValueFile(const std::string& path, OnnxValue::Kind kind) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, "an ONNX value (.pb)", true));
  auto v = ParseOnnxValue(bytes, kind);
  if (!v.ok()) return absl::Status(v.status().code(), absl::StrCat(path, ": ", v.status().message()));
  return v;
}

}  // namespace hetpass
