// manifest-alloc: explicit storage, shape functions, copies and destination-passing kernels.
//
// Input: a planned (plan-devices) and fused (fuse-ops) function: every computation is an
// `invoke` of a primitive function with a device; device_copy bindings at the boundaries.
//
// Definitions
//   Bound symbols: the symbols of the function's parameter types. The runtime binds them once
//   per call from the arguments' shapes; after that every static or symbolic size is a host
//   expression and needs no shape function. A result type is *known* when all its dims are
//   constants or expressions of bound symbols. A data-dependent symbol (infer-types names an
//   unknown dim `dynN`) becomes bound at the first alloc_tensor_dyn that has it as a plain
//   dim: the VM binds it there from the computed shape, so every later type over it is known.
//   Such bindings hold for the rest of their block and the regions nested after them (the VM
//   runs a region on its parent's symbol slots); what a region binds is not bound after it.
//
// Per invoke of a primitive @P on device D, results r_i of type T_i:
//   1. Known T_i:   %st = memory.alloc_storage() : storage[bytes(T_i)] @D
//                   %t  = memory.alloc_tensor(%st) : T_i @D
//   2. @P is a data-dependent op with a shape counter (argwhere, non_max_suppression, unique)
//      and T_i has one unknown dim: the counter runs on D, on @P's arguments with the op's
//      attributes, into an 8-byte scalar; only that scalar is copied to the host, and
//                   %t  = memory.alloc_tensor_dyn(%count_on_host) : T_i @D
//      fills the unknown dim. The searched tensor never crosses. The counter runs and crosses
//      once per invoke, however many results it sizes (unique's y, indices and counts).
//   3. Otherwise the host shape function:
//                   %s_i = invoke @P(...) {mask = M, shape_func = true} @cpu
//      with M = DeriveInputMask(@P): `value` parameters are read on the host (a value living
//      on the accelerator is copied once, shared by every shape function that reads it);
//      `shape` parameters pass metadata (the operand stays where it is: no copy).
//                   %t  = memory.alloc_tensor_dyn(%s_i) : T_i @D
//   4. The kernel:  invoke @P(%args..., %t_0, ...) {outputs = k} @D   (no results)
//      and every use of r_i now reads %t_i.
// Regions (if/loop bodies) are rewritten the same way, in place.
//
// Output invariants (VerifyExplicitAllocation): no op call computes outside a primitive; every
// primitive invoke is a kernel with explicit outputs or a shape function. Running it again
// changes nothing. The copy ledger after this pass lists every copy explicitly.
// Known gaps: no kill/free steps yet (the VM frees by liveness); storage is not shared between
// tensors yet (plan-memory's job); device_copy allocates its destination implicitly.
#include "passes/manifest_alloc/manifest_alloc.h"

#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/device_planner/device_rules.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "passes/shape_funcs/primitive_function.h"

namespace hetpass {
namespace {

bool IsPrimitive(const Function* f) { return f != nullptr && hetpass::IsPrimitive(*f); }

class Manifester {
 public:
  Manifester(const ManifestAllocOptions& o, Module& m, Function& f)
      : options_(o),
        module_(m),
        f_(f),
        registry_(OpRegistry::Global()),
        bound_(BoundSymbols(f)) {}

  absl::StatusOr<bool> Run() {
    RETURN_IF_ERROR(CheckPreconditions());
    RETURN_IF_ERROR(RewriteBlock(f_.body()));
    return changed_;
  }

 private:
  // The pipeline-order errors, found before anything changes: the module is left as it was,
  // and the printer's value names (costly to assign for a whole function: a third of this
  // pass's perf samples at 100k ops) are needed only here, where the function is still whole.
  absl::Status CheckPreconditions() const {
    const Node* bad = nullptr;
    absl::string_view why;
    WalkNodes(f_.body(), [&](const Node& n) {
      if (bad != nullptr) return;
      if (n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kCompute) {
        bad = &n;
        why = "manifest-alloc expects every computation inside a primitive function: run "
              "fuse-ops first";
        return;
      }
      if (!IsPlainInvoke(n) || !IsPrimitive(module_.FindFunction(n.callee()))) return;
      if (n.device() == DeviceKind::kUnset) {
        bad = &n;
        why = "manifest-alloc needs devices: run plan-devices first";
        return;
      }
      for (const auto& r : n.results()) {
        if (!r->type().is_unset()) continue;
        bad = &n;
        why = "manifest-alloc needs typed IR: run infer-types first";
        return;
      }
    });
    if (bad == nullptr) return absl::OkStatus();
    const ValueNames names(f_);
    std::string results;
    for (const auto& r : bad->results()) absl::StrAppend(&results, " ", names.Name(r.get()));
    return absl::InvalidArgumentError(absl::StrCat(FormatLocation(&module_, bad->loc()), ": ",
                                                   bad->OpName(), results, ": ", why));
  }

  // An error at an invoke found while rewriting (the function is then in pieces, so it is
  // named by its callee rather than by the printer's names of its results).
  absl::Status Error(const Node& invoke, absl::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat(FormatLocation(&module_, invoke.loc()),
                                                   ": invoke @", invoke.callee(), ": ", msg));
  }

  bool Known(const Type& t) const { return ShapeKnown(t, bound_); }

  // alloc_tensor_dyn binds the unbound symbols that are whole dims of its type (the VM's rule).
  void BindPlainSymbols(const Type& t) {
    for (const DimExpr& d : t.shape()) {
      if (d.is_symbol()) bound_.insert(d.symbol_name());
    }
  }

  void Remap(Value*& v) {
    auto it = replace_.find(v);
    if (it != replace_.end()) v = it->second;
  }

  Node* Emit(std::unique_ptr<Node> n, DeviceKind d, const Location& loc) {
    n->set_device(d);
    n->set_loc(loc);
    out_->push_back(std::move(n));
    return out_->back().get();
  }

  // An op call built by this pass: its attributes are ours, so a schema mismatch is a bug.
  std::unique_ptr<Node> Call(OpRole role, const Attrs& attrs = {}) {
    auto n = std::make_unique<Node>(NodeKind::kCall);
    n->set_op(registry_.FindByRole(role));
    HETPASS_CHECK(n->op() != nullptr, "manifest-alloc op missing from the registry");
    absl::StatusOr<Attrs> checked = n->op()->CheckAttrs(attrs);
    HETPASS_CHECK(checked.ok(), "manifest-alloc built attributes its op rejects");
    n->set_attrs(*std::move(checked));
    return n;
  }
  // The same for the allocations written per kernel result, whose attributes never vary within
  // a run: checked once (at 100k kernels, checking each was a tenth of the pass).
  std::unique_ptr<Node> AllocCall(OpRole role) {
    std::unique_ptr<Node>& proto = alloc_protos_[role];
    if (proto == nullptr) {
      proto = role == OpRole::kAllocTensor ? Call(role)
                                           : Call(role, Attrs{{"alignment", options_.alignment}});
    }
    auto n = std::make_unique<Node>(NodeKind::kCall);
    n->set_op(proto->op());
    n->set_attrs(proto->attrs());
    return n;
  }

  // Storage + tensor for a result of known type.
  // The storage type for tensors of type `t`, made once per distinct type: its byte count is a
  // symbolic product (a polynomial built per call), and a model repeats a few result types over
  // and over (25k invokes of f32[n, 16] at bench/scale's 100k ops share one).
  const Type& StorageFor(const Type& t) {
    auto it = storage_types_.find(t);
    if (it == storage_types_.end()) it = storage_types_.emplace(t, Type::Storage(t.NumBytes())).first;
    return it->second;
  }

  Value* AllocKnown(const Type& t, DeviceKind d, const Location& loc, const std::string& name) {
    auto storage = AllocCall(OpRole::kAllocStorage);
    Value* st = storage->AddResult(StorageFor(t), name.empty() ? "" : absl::StrCat(name, "_storage"));
    Emit(std::move(storage), d, loc);
    auto tensor = AllocCall(OpRole::kAllocTensor);
    tensor->AddOperand(st);
    Value* out = tensor->AddResult(t, name);
    Emit(std::move(tensor), d, loc);
    return out;
  }

  Value* AllocDyn(const Type& t, Value* dims, DeviceKind d, const Location& loc, const std::string& name) {
    auto tensor = AllocCall(OpRole::kAllocTensorDyn);
    tensor->AddOperand(dims);
    Value* out = tensor->AddResult(t, name);
    Emit(std::move(tensor), d, loc);
    return out;
  }

  // A value on the host for a shape function: itself, or one shared copy.
  Value* OnHost(Value* v, const Location& loc) {
    if (!IsAccelerator(v->device())) return v;
    auto it = host_copies_.find(v);
    if (it != host_copies_.end()) return it->second;
    auto copy = Call(OpRole::kDeviceCopy, Attrs{{"src", std::string(DeviceName(v->device()))},
                                          {"dst", std::string("cpu")}});
    copy->AddOperand(v);
    Value* c = copy->AddResult(v->type(), v->name().empty() || std::isdigit(static_cast<unsigned char>(v->name()[0]))
                                             ? ""
                                             : absl::StrCat(v->name(), "_cpu"));
    Emit(std::move(copy), DeviceKind::kCpu, loc);
    host_copies_[v] = c;
    return c;
  }

  // Kernel call into explicit outputs.
  void EmitKernel(const std::string& callee, const std::vector<Value*>& args,
                  const std::vector<Value*>& outs, DeviceKind d, const Location& loc) {
    auto k = std::make_unique<Node>(NodeKind::kInvoke);
    k->set_callee(callee);
    for (Value* a : args) k->AddOperand(a);
    for (Value* o : outs) k->AddOperand(o);
    k->mutable_attrs().Set(kKernelOutputsAttr, static_cast<int64_t>(outs.size()));
    Emit(std::move(k), d, loc);
  }

  // True if the counter's scalar decides `t`: exactly one dim is not known (unique's y,
  // indices and counts each have one, all equal to the count).
  bool CountFillsUnknownDim(const Type& t) const {
    int unknown = 0;
    for (const DimExpr& d : t.shape()) unknown += Known(Type::Tensor(t.dtype(), {d})) ? 0 : 1;
    return unknown == 1;
  }

  // The single op of a primitive whose output shape only a counter can decide, if any.
  const OpDef* CountedOp(const Function& p) const {
    if (p.body().nodes().size() != 1) return nullptr;
    const Node& only = *p.body().nodes()[0];
    if (only.kind() != NodeKind::kCall || only.op()->shape_counter().empty()) return nullptr;
    return only.op();
  }

  // A primitive wrapping the counter op of primitive @P's single op, one per counter,
  // parameter types and attributes. It takes @P's parameters and calls the counter on the op's
  // operands with the op's attributes: argwhere's count_nonzero reads its one tensor,
  // non_max_suppression_count all five inputs and center_point_box. (Operands are mapped
  // through the parameters because one value may feed several operands: fuse-ops makes one
  // parameter per distinct value.) `invoke` calls @P; errors name it.
  absl::StatusOr<std::string> CounterFunction(const Node& invoke, const Function& primitive) {
    const Node& only = *primitive.body().nodes()[0];
    const OpDef& counted = *only.op();
    std::string key = counted.shape_counter();
    for (const auto& param : primitive.body().params()) {
      absl::StrAppend(&key, "|", param->type().ToString());
    }
    absl::StrAppend(&key, "|", only.attrs().ToString());
    auto it = counters_.find(key);
    if (it != counters_.end()) return it->second;
    const OpDef* counter_op = registry_.Find(counted.shape_counter());
    HETPASS_CHECK(counter_op != nullptr, "shape counter missing from the registry");
    absl::StatusOr<Attrs> counter_attrs = counter_op->CheckAttrs(only.attrs());
    if (!counter_attrs.ok()) {
      return Error(invoke, absl::StrCat("the shape counter ", counter_op->name(),
                                        " rejects the attributes of ", counted.name(), ": ",
                                        counter_attrs.status().message()));
    }
    // Checked before anything is added to the module.
    absl::flat_hash_map<const Value*, int> param_index;
    for (int i = 0; i < primitive.body().num_params(); ++i) {
      param_index[primitive.body().params()[i].get()] = i;
    }
    for (const Value* operand : only.operands()) {
      if (!param_index.contains(operand)) {
        return Error(invoke, absl::StrCat("an operand of ", counted.name(), " in @",
                                          primitive.name(), " is not a parameter"));
      }
    }
    std::string name;
    for (int k = 0;; ++k) {
      name = absl::StrCat("count_", counted.name(), "_", k);
      if (module_.FindFunction(name) == nullptr) break;
    }
    Function* fn = module_.AddFunction(name);
    fn->mutable_attrs().Set(kPrimitiveAttr, true);
    std::vector<Value*> params;
    for (const auto& param : primitive.body().params()) {
      params.push_back(fn->body().AddParam(
          param->type(), primitive.body().num_params() == 1 ? "data" : param->name()));
    }
    auto call = std::make_unique<Node>(NodeKind::kCall);
    call->set_op(counter_op);
    call->set_attrs(*std::move(counter_attrs));
    for (const Value* operand : only.operands()) call->AddOperand(params[param_index.at(operand)]);
    Value* r = call->AddResult(Type::Tensor(DType::kI64, {}), "count");
    fn->body().Append(std::move(call));
    fn->body().set_results({r});
    fn->set_result_types({r->type()});
    counters_[key] = name;
    return name;
  }

  absl::Status RewriteInvoke(std::unique_ptr<Node> n, Function* callee) {
    const DeviceKind d = n->device();
    const Location loc = n->loc();
    std::vector<Value*> args(n->operands().begin(), n->operands().end());
    std::vector<Value*> outs;
    const OpDef* counted = CountedOp(*callee);
    std::vector<Value*> shapes;  // from the shape function, when needed
    Value* count_on_host = nullptr;  // the counter's scalar, run once for every result
    for (int i = 0; i < n->num_results(); ++i) {
      Value* r = n->result(i);
      const std::string name = r->name();
      const bool known = Known(r->type());
      if (known) {
        outs.push_back(AllocKnown(r->type(), d, loc, name));
      } else if (counted != nullptr && CountFillsUnknownDim(r->type())) {
        if (count_on_host == nullptr) {
          ASSIGN_OR_RETURN(std::string counter, CounterFunction(*n, *callee));
          const Type scalar = Type::Tensor(DType::kI64, {});
          Value* count =
              AllocKnown(scalar, d, loc, name.empty() ? "" : absl::StrCat(name, "_count"));
          EmitKernel(counter, args, {count}, d, loc);
          count_on_host = OnHost(count, loc);
        }
        outs.push_back(AllocDyn(r->type(), count_on_host, d, loc, name));
      } else {
        if (shapes.empty()) {
          ASSIGN_OR_RETURN(shapes, EmitShapeFunction(*n, *callee, args));
        }
        outs.push_back(AllocDyn(r->type(), shapes[i], d, loc, name));
      }
      if (!known) BindPlainSymbols(r->type());
      replace_[r] = outs.back();
    }
    EmitKernel(n->callee(), args, outs, d, loc);
    retired_.push_back(std::move(n));
    changed_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Value*>> EmitShapeFunction(const Node& n, const Function& callee,
                                                         const std::vector<Value*>& args) {
    const std::vector<InputDep> mask = DeriveInputMask(callee);
    auto sf = std::make_unique<Node>(NodeKind::kInvoke);
    sf->set_callee(n.callee());
    for (size_t i = 0; i < args.size(); ++i) {
      sf->AddOperand(NeedsValue(mask[i]) ? OnHost(args[i], n.loc()) : args[i]);
    }
    sf->mutable_attrs().Set(kShapeFuncAttr, true);
    sf->mutable_attrs().Set(kShapeFuncMaskAttr, mask);
    std::vector<Value*> shapes;
    for (int i = 0; i < n.num_results(); ++i) {
      const std::string& name = n.result(i)->name();
      shapes.push_back(sf->AddResult(Type::Tensor(DType::kI64, {n.result(i)->type().rank()}),
                                     name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))
                                         ? ""
                                         : absl::StrCat(name, "_shape")));
    }
    Emit(std::move(sf), DeviceKind::kCpu, n.loc());
    return shapes;
  }

  absl::Status RewriteBlock(Block& block) {
    std::vector<std::unique_ptr<Node>> old = std::move(block.mutable_nodes());
    block.mutable_nodes().clear();
    std::vector<std::unique_ptr<Node>> out;
    std::vector<std::unique_ptr<Node>>* saved = out_;
    out_ = &out;
    for (auto& n : old) {
      for (Value*& v : n->mutable_operands()) Remap(v);
      for (int r = 0; r < n->num_regions(); ++r) {
        // The VM runs a region on its parent's symbol slots: what is bound before it is bound
        // in it; what it binds may not be bound after it (a branch or a body may not run).
        std::set<std::string> outer = bound_;
        absl::Status st = RewriteBlock(*n->region(r));
        bound_ = std::move(outer);
        RETURN_IF_ERROR(st);
      }
      // CheckPreconditions ruled out compute calls, unplaced and untyped kernels.
      Function* callee = IsPlainInvoke(*n) ? module_.FindFunction(n->callee()) : nullptr;
      if (IsPrimitive(callee)) {
        RETURN_IF_ERROR(RewriteInvoke(std::move(n), callee));
        continue;
      }
      out.push_back(std::move(n));
    }
    out_ = saved;
    for (auto& n : out) block.Append(std::move(n));
    for (Value*& v : block.mutable_results()) Remap(v);
    return absl::OkStatus();
  }

  const ManifestAllocOptions& options_;
  Module& module_;
  Function& f_;
  const OpRegistry& registry_;
  std::set<std::string> bound_;
  absl::flat_hash_map<OpRole, std::unique_ptr<Node>> alloc_protos_;  // AllocCall's, per role
  std::vector<std::unique_ptr<Node>>* out_ = nullptr;
  absl::flat_hash_map<const Value*, Value*> replace_;
  absl::flat_hash_map<const Value*, Value*> host_copies_;
  absl::flat_hash_map<Type, Type> storage_types_;  // StorageFor
  absl::flat_hash_map<std::string, std::string> counters_;
  std::vector<std::unique_ptr<Node>> retired_;
  bool changed_ = false;
};

class ManifestAllocPass : public Pass {
 public:
  explicit ManifestAllocPass(ManifestAllocOptions o) : options_(std::move(o)) {}
  absl::string_view name() const override { return ManifestAllocOptions::kName; }
  absl::StatusOr<bool> Run(Module& module) override {
    Function* f = module.FindFunction(options_.function);
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("manifest-alloc: no function @%s in the module", options_.function));
    }
    return Manifester(options_, module, *f).Run();
  }
  absl::Status VerifyPostconditions(const Module& module) const override {
    return VerifyExplicitAllocation(module, options_.function);
  }

 private:
  ManifestAllocOptions options_;
};

}  // namespace

std::unique_ptr<Pass> CreateManifestAllocPass(const ManifestAllocOptions& options) {
  return std::make_unique<ManifestAllocPass>(options);
}

absl::Status VerifyExplicitAllocation(const Module& module, absl::string_view function) {
  const Function* f = module.FindFunction(function);
  if (f == nullptr) return absl::InvalidArgumentError(absl::StrFormat("no function @%s", function));
  absl::Status status = absl::OkStatus();
  WalkNodes(f->body(), [&](const Node& n) {
    if (!status.ok()) return;
    const bool compute_call = n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kCompute;
    const bool implicit_kernel = IsPlainInvoke(n) && IsPrimitive(module.FindFunction(n.callee()));
    if (compute_call || implicit_kernel) {
      status = absl::InvalidArgumentError(absl::StrCat(
          FormatLocation(&module, n.loc()), ": ", n.OpName(),
          compute_call ? ": computes outside a primitive function"
                       : absl::StrCat(": kernel @", n.callee(), " has no explicit outputs")));
    }
  });
  return status;
}

}  // namespace hetpass
