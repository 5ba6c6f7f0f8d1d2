// The compile engine (see compile_engine.h): picks an implementation per primitive function,
// caches it by structural hash and device, and builds host shape functions.
//
// The reference path interprets the group's body op by op with the registry's reference
// kernels on host tensors. It is the fallback that makes every registered op runnable on every
// device (the sim device runs it inside Launch, where its memory is accessible), and the oracle
// the fast paths are tested against.
#include "passes/compile_engine/compile_engine.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/batch_matmul_kernel.h"
#include "compile_engine/conv_kernel.h"
#include "compile_engine/deconv_kernel.h"
#include "compile_engine/dense_kernel.h"
#include "compile_engine/image_kernel.h"
#include "compile_engine/jit_elementwise.h"
#include "compile_engine/reduce_kernel.h"
#include "compile_engine/split_kernel.h"
#include "passes/ir/structural.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/primitive_function.h"

namespace hetpass {
namespace {

Type ConcreteType(DType dtype, absl::Span<const int64_t> shape) {
  return Type::Tensor(dtype, std::vector<DimExpr>(shape.begin(), shape.end()));
}

absl::StatusOr<std::vector<int64_t>> StaticDims(const Type& t, absl::string_view what) {
  std::vector<int64_t> dims;
  for (const DimExpr& d : t.shape()) {
    if (!d.is_constant()) {
      return absl::InternalError(absl::StrCat(what, ": shape ", t.ToString(),
                                              " is not concrete after the shape function"));
    }
    dims.push_back(d.constant());
  }
  return dims;
}

class ReferenceInstance : public KernelInstance {
 public:
  ReferenceInstance(const Function* f, const std::vector<Attrs>* attrs) : f_(f), attrs_(attrs) {}

  absl::Status Run(absl::Span<const TensorArg> args) override {
    const Block& body = f_->body();
    const int np = body.num_params();
    const int nr = static_cast<int>(body.results().size());
    if (static_cast<int>(args.size()) != np + nr) {
      return absl::InvalidArgumentError(absl::StrCat("@", f_->name(), ": kernel expects ", np + nr,
                                                     " arguments, got ", args.size()));
    }
    absl::flat_hash_map<const Value*, Tensor> env;
    for (int i = 0; i < np; ++i) {
      const TensorArg& a = args[i];
      ASSIGN_OR_RETURN(Tensor t, Tensor::FromBytes(a.dtype, {a.shape.begin(), a.shape.end()},
                                                   absl::string_view(static_cast<const char*>(a.data),
                                                                     a.nbytes())));
      env.emplace(body.param(i), std::move(t));
    }
    int k = 0;
    for (const auto& node : body.nodes()) {
      const Attrs& attrs = (*attrs_)[k++];
      std::vector<Tensor> inputs;
      std::vector<ShapeInput> shape_inputs;
      inputs.reserve(node->num_operands());
      for (const Value* v : node->operands()) {
        auto it = env.find(v);
        if (it == env.end()) {
          return absl::InternalError(absl::StrCat("@", f_->name(), ": operand of ", node->OpName(),
                                                  " has no value"));
        }
        inputs.push_back(it->second);
      }
      for (const Tensor& t : inputs) shape_inputs.push_back(ShapeInput{t.type(), &t});
      if (node->kind() != NodeKind::kCall) {
        return absl::UnimplementedError(absl::StrCat("@", f_->name(), ": ", node->OpName(),
                                                     " inside a primitive function"));
      }
      const OpDef& op = *node->op();
      ASSIGN_OR_RETURN(std::vector<Type> types, op.InferTypes(attrs, std::move(shape_inputs)));
      if (!op.reference()) {
        return absl::UnimplementedError(absl::StrCat(op.name(), " has no kernel"));
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.reference()(inputs, attrs, types));
      for (int r = 0; r < node->num_results(); ++r) env[node->result(r)] = std::move(outs[r]);
    }
    for (int r = 0; r < nr; ++r) {
      const Tensor& t = env.at(body.results()[r]);
      const TensorArg& out = args[np + r];
      if (t.dtype() != out.dtype ||
          !std::equal(t.shape().begin(), t.shape().end(), out.shape.begin(), out.shape.end())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "@", f_->name(), ": result ", r, " is ", t.type().ToString(), " but its output buffer is ",
            DTypeName(out.dtype), "[", absl::StrJoin(out.shape, ", "), "]"));
      }
      if (t.nbytes() > 0) std::memcpy(out.data, t.data(), t.nbytes());
    }
    return absl::OkStatus();
  }

 private:
  const Function* f_;
  const std::vector<Attrs>* attrs_;
};

class ReferenceKernelImpl : public CompiledKernel {
 public:
  ReferenceKernelImpl(const Function* f, std::vector<Attrs> attrs, std::string ops)
      : f_(f), attrs_(std::move(attrs)), ops_(std::move(ops)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      absl::Span<const Tensor* const>) const override {
    return std::make_unique<ReferenceInstance>(f_, &attrs_);
  }
  std::string Describe() const override { return absl::StrCat("reference[", ops_, "]"); }

 private:
  const Function* f_;
  std::vector<Attrs> attrs_;
  std::string ops_;
};

// Ops that keep the bytes and change only the shape: a copy of the data input (a view, once
// plan-memory lets outputs alias inputs).
bool IsReshapeOnly(const Function& f) {
  const auto& nodes = f.body().nodes();
  if (nodes.size() != 1 || nodes[0]->kind() != NodeKind::kCall) return false;
  const std::string& op = nodes[0]->op()->name();
  return (op == "reshape" || op == "dyn.reshape" || op == "squeeze" ||
          op == "dyn.squeeze" || op == "dyn.unsqueeze" || op == "expand_dims") &&
         nodes[0]->operand(0) == f.body().param(0) && f.body().results().size() == 1 &&
         f.body().results()[0] == nodes[0]->result();
}

class CopyInstance : public KernelInstance {
 public:
  explicit CopyInstance(const Function* f) : f_(f) {}
  absl::Status Run(absl::Span<const TensorArg> args) override {
    const TensorArg& in = args.front();
    const TensorArg& out = args.back();
    if (in.nbytes() != out.nbytes() || in.dtype != out.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("@", f_->name(), ": reshape of ", in.nbytes(),
                                                     " bytes into an output of ", out.nbytes()));
    }
    if (out.data != in.data && in.nbytes() > 0) std::memcpy(out.data, in.data, in.nbytes());
    return absl::OkStatus();
  }

 private:
  const Function* f_;
};

class CopyKernel : public CompiledKernel {
 public:
  explicit CopyKernel(const Function* f) : f_(f) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      absl::Span<const Tensor* const>) const override {
    return std::make_unique<CopyInstance>(f_);
  }
  std::string Describe() const override { return "copy (reshape)"; }

 private:
  const Function* f_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReferenceKernel(const Function& primitive) {
  std::vector<Attrs> attrs;
  std::vector<std::string> ops;
  for (const auto& node : primitive.body().nodes()) {
    if (node->kind() != NodeKind::kCall) {
      return absl::UnimplementedError(absl::StrCat("@", primitive.name(), ": ", node->OpName(),
                                                   " inside a primitive function"));
    }
    ASSIGN_OR_RETURN(Attrs a, node->op()->CheckAttrs(node->attrs()));
    attrs.push_back(std::move(a));
    ops.push_back(node->op()->name());
  }
  return std::make_unique<ReferenceKernelImpl>(&primitive, std::move(attrs),
                                               absl::StrJoin(ops, ","));
}

ShapeFunction::ShapeFunction(const Function* primitive, std::vector<InputDep> mask)
    : primitive_(primitive), mask_(std::move(mask)) {}

absl::StatusOr<std::vector<std::vector<int64_t>>> ShapeFunction::Run(
    absl::Span<const ShapeFunctionArg> args) const {
  const Block& body = primitive_->body();
  if (static_cast<int>(args.size()) != body.num_params()) {
    return absl::InvalidArgumentError(absl::StrCat("shape function of @", primitive_->name(),
                                                   " expects ", body.num_params(),
                                                   " arguments, got ", args.size()));
  }
  std::vector<ShapeInput> inputs;
  inputs.reserve(args.size());
  for (int i = 0; i < body.num_params(); ++i) {
    const bool value = NeedsValue(mask_[i]);
    if (value && args[i].value == nullptr) {
      return absl::InternalError(absl::StrCat("shape function of @", primitive_->name(),
                                              ": parameter ", i, " needs its value on the host"));
    }
    inputs.push_back(ShapeInput{ConcreteType(body.param(i)->type().dtype(), args[i].shape),
                                value ? args[i].value : nullptr});
  }
  ASSIGN_OR_RETURN(std::vector<Type> types, InferPrimitiveTypes(*primitive_, std::move(inputs)));
  std::vector<std::vector<int64_t>> shapes;
  for (const Type& t : types) {
    ASSIGN_OR_RETURN(auto dims, StaticDims(t, absl::StrCat("shape function of @", primitive_->name())));
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

absl::StatusOr<std::shared_ptr<const CompiledKernel>> CompileEngine::Lower(
    const Function& primitive, DeviceKind device) {
  if (!IsPrimitive(primitive)) {
    return absl::InvalidArgumentError(
        absl::StrCat("@", primitive.name(), " is not a primitive function"));
  }
  const size_t key = StructuralHash(primitive) * 31 + static_cast<size_t>(device);
  std::vector<Entry>& bucket = cache_[key];
  for (const Entry& e : bucket) {
    if (e.device == device && StructurallyEqual(*e.function, primitive)) {
      ++hits_;
      return e.kernel;
    }
  }
  ++misses_;
  std::unique_ptr<CompiledKernel> kernel;
  // Fast paths (kernel library, JIT) are tried first; Unimplemented means "not mine", any
  // other error is a real one. Every device runs host code here (sim simulates in host memory).
  auto attempt = [&](absl::StatusOr<std::unique_ptr<CompiledKernel>> k) -> absl::Status {
    if (k.ok()) {
      kernel = *std::move(k);
      return absl::OkStatus();
    }
    if (absl::IsUnimplemented(k.status())) return absl::OkStatus();
    return absl::Status(k.status().code(), absl::StrCat("cannot compile @", primitive.name(), " for ",
                                                        DeviceName(device), ": ", k.status().message()));
  };
  if (!kernel && options_.use_kernel_library && IsDenseGroup(primitive)) {
    RETURN_IF_ERROR(attempt(CompileDenseGroup(primitive)));
  }
  if (!kernel && options_.use_kernel_library && IsConvGroup(primitive)) {
    RETURN_IF_ERROR(attempt(CompileConvGroup(primitive)));
  }
  if (!kernel && options_.use_kernel_library && IsDeconvGroup(primitive)) {
    RETURN_IF_ERROR(attempt(CompileDeconvGroup(primitive)));
  }
  if (!kernel && options_.use_kernel_library && IsBatchMatmulGroup(primitive)) {
    RETURN_IF_ERROR(attempt(CompileBatchMatmulGroup(primitive)));
  }
  if (!kernel && options_.use_kernel_library) {  // reductions, softmax: native loops
    RETURN_IF_ERROR(attempt(CompileReduceOrSoftmaxGroup(primitive)));
  }
  if (!kernel && options_.use_kernel_library) {  // roi_align, resize2d, constant pad, fills
    RETURN_IF_ERROR(attempt(CompileImageOrFillGroup(primitive)));
  }
  if (!kernel && IsReshapeOnly(primitive)) kernel = std::make_unique<CopyKernel>(&primitive);
  if (!kernel && options_.use_kernel_library && options_.use_jit) {
    RETURN_IF_ERROR(attempt(CompileLibraryHeadJitTail(primitive)));
  }
  if (!kernel && options_.use_jit && IsJitElementwise(primitive)) {
    RETURN_IF_ERROR(attempt(CompileJitElementwise(primitive)));
  }
  if (!kernel && options_.use_jit && IsJitInjective(primitive)) {
    RETURN_IF_ERROR(attempt(CompileJitInjective(primitive)));
  }
  if (!kernel) {
    auto fallback = CompileReferenceKernel(primitive);
    if (!fallback.ok()) {
      return absl::Status(fallback.status().code(),
                          absl::StrCat("cannot compile @", primitive.name(), " for ",
                                       DeviceName(device), ": ", fallback.status().message()));
    }
    kernel = *std::move(fallback);
  }
  std::shared_ptr<const CompiledKernel> shared = std::move(kernel);
  bucket.push_back(Entry{&primitive, device, shared});
  return shared;
}

absl::StatusOr<std::shared_ptr<const ShapeFunction>> CompileEngine::LowerShapeFunction(
    const Function& primitive, std::optional<std::vector<InputDep>> recorded_mask) {
  std::vector<InputDep> derived = DeriveInputMask(primitive);
  if (!recorded_mask) return std::make_shared<const ShapeFunction>(&primitive, std::move(derived));
  if (recorded_mask->size() != derived.size()) {
    return absl::InvalidArgumentError(absl::StrCat("shape function of @", primitive.name(), ": mask has ",
                                                   recorded_mask->size(), " entries for ",
                                                   derived.size(), " parameters"));
  }
  for (size_t i = 0; i < derived.size(); ++i) {
    const int need = static_cast<int>(derived[i]), have = static_cast<int>((*recorded_mask)[i]);
    if ((need & have) != need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape function of @", primitive.name(), ": parameter ", i, " is needed as ",
          InputDepName(derived[i]), " but the call supplies only ", InputDepName((*recorded_mask)[i])));
    }
  }
  return std::make_shared<const ShapeFunction>(&primitive, *std::move(recorded_mask));
}

}  // namespace hetpass
