// The compile engine (see compile_engine.h): asks the device's kernel providers, in their order
// (providers.cc), for an implementation of each primitive function, caches it by structural
// hash and device, and builds host shape functions.
//
// The reference path interprets the group's body op by op with the registry's reference
// kernels on host tensors. It is the fallback that makes every registered op runnable on every
// device (the sim device runs it inside Launch, where its memory is accessible), and the oracle
// the fast paths are tested against.
#include "passes/compile_engine/compile_engine.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/builtin_providers.h"
#include "compile_engine/tiered_kernel.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/structural.h"
#include "passes/runtime/device.h"
#include "passes/support/status_macros.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/shape_funcs/primitive_function.h"

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

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
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
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::make_unique<ReferenceInstance>(f_, &attrs_);
  }
  std::string Describe() const override { return absl::StrCat("reference[", ops_, "]"); }

 private:
  const Function* f_;
  std::vector<Attrs> attrs_;
  std::string ops_;
};

// A group of one view op (OpDef::is_view) reading the first parameter and returned: its bytes.
bool IsSingleView(const Function& f) {
  const auto& nodes = f.body().nodes();
  if (nodes.size() != 1 || nodes[0]->kind() != NodeKind::kCall) return false;
  return nodes[0]->op()->is_view() && nodes[0]->num_operands() >= 1 &&
         nodes[0]->operand(0) == f.body().param(0) && f.body().results().size() == 1 &&
         f.body().results()[0] == nodes[0]->result();
}

class CopyInstance : public KernelInstance {
 public:
  explicit CopyInstance(const Function* f) : f_(f) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
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
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::make_unique<CopyInstance>(f_);
  }
  std::string Describe() const override { return "copy (reshape)"; }

 private:
  const Function* f_;
};

class ViewCopy final : public KernelProvider {
 public:
  absl::string_view name() const override { return "view.copy"; }
  absl::StatusOr<std::unique_ptr<CompiledKernel>> TryCompile(const Function& primitive,
                                                             const KernelTarget&) const override {
    if (!IsSingleView(primitive)) {
      return absl::UnimplementedError(absl::StrCat("@", primitive.name(), " is not a single view op"));
    }
    return std::make_unique<CopyKernel>(&primitive);
  }
  bool Runs(const OpDef& op) const override { return op.is_view(); }
};

class Reference final : public KernelProvider {
 public:
  absl::string_view name() const override { return "reference"; }
  absl::StatusOr<std::unique_ptr<CompiledKernel>> TryCompile(const Function& primitive,
                                                             const KernelTarget&) const override {
    return CompileReferenceKernel(primitive);
  }
  bool Runs(const OpDef& op) const override { return static_cast<bool>(op.reference()); }
  bool Fuses(const OpDef& op) const override { return static_cast<bool>(op.reference()); }
  bool is_fallback() const override { return true; }
};

// The answers per (op, device) are computed once from the provider lists and remembered:
// the passes ask for every node (fuse-ops, plan-devices), and each answer walks every provider
// of the device, whose predicates look the op up by name. The key is what the built-in
// providers read of an OpDef (its name, whether it has a reference kernel, whether it is a
// view), not its address: registries are cloned and freed (the baseline tables), and a new
// OpDef may reuse a freed one's address. Built-in ops (an OpId) are answered from a flat
// table without a lock (the passes ask tens of thousands of times per model; a string key
// under a mutex was ~300 instructions a question); other registries' ops from the map.
class BuiltinCapabilities final : public KernelCapabilities {
 public:
  bool CanRun(const OpDef& op, DeviceKind device) const override { return Get(op, device).run; }
  bool CanFuse(const OpDef& op, DeviceKind device) const override { return Get(op, device).fuse; }
  bool TakesEveryGroup(DeviceKind device) const override {
    for (const KernelProvider* p : KernelProviders(device)) {
      if (p->is_fallback()) return true;
    }
    return false;
  }
  bool TakesGroup(const Function& primitive, DeviceKind device) const override {
    // A fallback runs every group: no need to ask (the others may compile to answer).
    if (TakesEveryGroup(device)) return true;
    return TakesGroupNatively(primitive, device);
  }
  bool TakesGroupNatively(const Function& primitive, DeviceKind device) const override {
    const KernelTarget target{device};
    for (const KernelProvider* p : KernelProviders(device)) {
      if (!p->is_fallback() && p->Takes(primitive, target)) return true;
    }
    return false;
  }

 private:
  struct Answers {
    bool run = false;
    bool fuse = false;
  };
  static Answers Compute(const OpDef& op, DeviceKind device) {
    Answers a;
    bool native = false;  // some non-fallback provider runs it alone
    bool fuses = false;   // some non-fallback provider fuses it
    for (const KernelProvider* p : KernelProviders(device)) {
      a.run |= p->Runs(op);
      if (p->is_fallback()) continue;
      fuses |= p->Fuses(op);
      native |= p->Runs(op);
    }
    // Only the fallback runs it: a group with it runs there anyway, so fusing loses nothing.
    a.fuse = fuses || !native;
    return a;
  }
  using Key = std::tuple<std::string, DeviceKind, bool, bool>;
  static constexpr size_t kDevices = 0
#define HETPASS_DEVICE(e, name, accel) +1
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
      ;
  static constexpr size_t kOps = static_cast<size_t>(OpId::kUnknown);
  // Per (op id, device, has a reference kernel, is a view): 0 unknown yet, else
  // kKnown | run? | fuse?. Racing first questions store the same value.
  static constexpr uint8_t kKnown = 1, kRun = 2, kFuse = 4;
  Answers Get(const OpDef& op, DeviceKind device) const {
    const bool reference = static_cast<bool>(op.reference());
    const OpId id = OpIdOf(op);
    const size_t d = static_cast<size_t>(device);
    if (id != OpId::kUnknown && d < kDevices) {
      std::atomic<uint8_t>& slot =
          fast_[((static_cast<size_t>(id) * kDevices + d) * 2 + reference) * 2 + op.is_view()];
      uint8_t v = slot.load(std::memory_order_relaxed);
      if (v == 0) {
        const Answers a = Compute(op, device);
        v = kKnown | (a.run ? kRun : 0) | (a.fuse ? kFuse : 0);
        slot.store(v, std::memory_order_relaxed);
      }
      return Answers{(v & kRun) != 0, (v & kFuse) != 0};
    }
    Key key(op.name(), device, reference, op.is_view());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(std::move(key), Compute(op, device)).first;
    return it->second;
  }
  mutable std::array<std::atomic<uint8_t>, kOps * kDevices * 4> fast_{};
  mutable std::mutex mu_;
  mutable absl::flat_hash_map<Key, Answers> cache_;
};

bool Enabled(const KernelProvider& p, const CompileEngineOptions& options) {
  return ((p.needs() & kNeedsKernelLibrary) == 0 || options.use_kernel_library) &&
         ((p.needs() & kNeedsJit) == 0 || options.use_jit);
}

}  // namespace

const KernelProvider& ViewCopyProvider() {
  static const ViewCopy provider;
  return provider;
}

const KernelProvider& ReferenceProvider() {
  static const Reference provider;
  return provider;
}

const KernelCapabilities& BuiltinKernelCapabilities() {
  static const BuiltinCapabilities capabilities;
  return capabilities;
}

namespace {

// The group of `members` copied into a scratch primitive function (the module's only one);
// null where an output is not a value of the members.
std::unique_ptr<Module> Candidate(absl::Span<const Node* const> members, absl::Span<Value* const> outputs) {
  auto scratch = std::make_unique<Module>();
  Function* fn = scratch->AddFunction("candidate");
  fn->mutable_attrs().Set(kPrimitiveAttr, AttrValue(true));
  Block& body = fn->body();
  absl::flat_hash_map<const Value*, Value*> copy;
  for (const Node* n : members) {
    auto c = std::make_unique<Node>(NodeKind::kCall);
    c->set_op(n->op());
    c->set_attrs(n->attrs());
    c->set_device(n->device());
    for (Value* v : n->operands()) {
      auto it = copy.find(v);
      if (it == copy.end()) {
        Value* p = body.AddParam(v->type(), v->name());
        p->set_param_device(v->device());
        it = copy.emplace(v, p).first;
      }
      c->AddOperand(it->second);
    }
    for (const auto& r : n->results()) copy[r.get()] = c->AddResult(r->type(), r->name());
    body.Append(std::move(c));
  }
  std::vector<Value*> results;
  std::vector<Type> types;
  for (Value* v : outputs) {
    auto it = copy.find(v);
    if (it == copy.end()) return nullptr;  // not a value of the members
    results.push_back(it->second);
    types.push_back(v->type());
  }
  body.set_results(results);
  fn->set_result_types(std::move(types));
  return scratch;
}

// The questions a cache tells apart.
constexpr int kTakesGroup = 0;
constexpr int kTakesGroupNatively = 1;

// Whether `candidate` (a Candidate) is structurally what Candidate(members, outputs) would be.
bool CandidateMatches(absl::Span<const Node* const> members, absl::Span<Value* const> outputs,
                      const Function& candidate) {
  const Block& body = candidate.body();
  std::vector<const Node*> nodes;
  nodes.reserve(body.nodes().size());
  for (const auto& n : body.nodes()) nodes.push_back(n.get());
  return GroupsStructurallyEqual(members, outputs, nodes, body.results());
}

bool CandidateTaken(absl::Span<const Node* const> members, absl::Span<Value* const> outputs,
                    int question, DeviceKind device, GroupAnswerCache* cache,
                    const std::function<bool(const Function&)>& takes,
                    std::optional<size_t> structural_hash = std::nullopt) {
  if (cache != nullptr) return cache->Answer(members, outputs, question, device, takes, structural_hash);
  std::unique_ptr<Module> scratch = Candidate(members, outputs);
  if (scratch == nullptr) return false;
  return takes(*scratch->functions().front());
}

}  // namespace

GroupAnswerCache::GroupAnswerCache() = default;
GroupAnswerCache::~GroupAnswerCache() = default;

bool GroupAnswerCache::Answer(absl::Span<const Node* const> members, absl::Span<Value* const> outputs,
                              int question, DeviceKind device,
                              const std::function<bool(const Function&)>& ask,
                              std::optional<size_t> structural_hash) {
  // Hashed and compared on the members themselves: the candidate is built only for a miss
  // (at 100k ops, building it per question was most of fuse-ops' rule i).
  const size_t hash =
      absl::HashOf(structural_hash ? *structural_hash : GroupStructuralHash(members, outputs),
                   question, static_cast<int>(device));
  std::vector<Entry>& bucket = entries_[hash];
  for (const Entry& e : bucket) {
    if (e.question == question && e.device == device &&
        CandidateMatches(members, outputs, *e.module->functions().front())) {
      ++hits_;
      return e.answer;
    }
  }
  std::unique_ptr<Module> scratch = Candidate(members, outputs);
  if (scratch == nullptr) return false;  // an output that is not a value of the members
  ++misses_;
  const bool answer = ask(*scratch->functions().front());
  bucket.push_back(Entry{std::move(scratch), question, device, answer});
  return answer;
}

bool DeviceRunsGroup(const KernelCapabilities& caps, absl::Span<const Node* const> members,
                     absl::Span<Value* const> outputs, DeviceKind device, GroupAnswerCache* cache) {
  // plan-devices asks for every call: build the candidate only where the answer depends on it.
  if (caps.TakesEveryGroup(device)) return true;
  return CandidateTaken(members, outputs, kTakesGroup, device, cache,
                        [&](const Function& f) { return caps.TakesGroup(f, device); });
}

bool DeviceRunsGroupNatively(const KernelCapabilities& caps, absl::Span<const Node* const> members,
                             absl::Span<Value* const> outputs, DeviceKind device, GroupAnswerCache* cache,
                             std::optional<size_t> structural_hash) {
  return CandidateTaken(members, outputs, kTakesGroupNatively, device, cache,
                        [&](const Function& f) { return caps.TakesGroupNatively(f, device); },
                        structural_hash);
}

const KernelContext& KernelContext::Host() {
  // One cpu device and pool for the process, never destroyed (kernels may run at exit).
  static const KernelContext* host = [] {
    auto* device = runtime::MakeCpuDevice().release();
    auto* pool = new runtime::PoolingAllocator(device);
    return new KernelContext{device, nullptr, pool};
  }();
  return *host;
}

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

CompileEngine::CompileEngine(CompileEngineOptions options)
    : options_(std::move(options)),
      kernel_cache_(options_.use_jit ? KernelCache::ForSetting(options_.kernel_cache_dir)
                                     : nullptr),
      tiered_(options_.background_jit ? std::make_unique<TieredCompiler>() : nullptr) {}

CompileEngine::~CompileEngine() {
  // Before the cached kernels and the kernel cache: queued compiles are withdrawn (their
  // kernels stay on the reference tier), a running one finishes first.
  tiered_.reset();
}

absl::Status CompileEngine::WaitForBackgroundCompiles() {
  return tiered_ != nullptr ? tiered_->WaitForAll() : absl::OkStatus();
}

int64_t CompileEngine::background_pending() const {
  return tiered_ != nullptr ? tiered_->pending() : 0;
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
  const KernelTarget target{device, kernel_cache_.get(), tiered_.get()};
  const absl::Span<const KernelProvider* const> providers =
      options_.providers ? options_.providers(device) : KernelProviders(device);
  for (const KernelProvider* provider : providers) {
    if (!Enabled(*provider, options_)) continue;
    absl::StatusOr<std::unique_ptr<CompiledKernel>> k = provider->TryCompile(primitive, target);
    if (k.ok()) {
      kernel = *std::move(k);
      break;
    }
    if (absl::IsUnimplemented(k.status()) && !provider->is_fallback()) continue;  // not mine
    return absl::Status(k.status().code(),
                        absl::StrCat("cannot compile @", primitive.name(), " for ", DeviceName(device),
                                     " (", provider->name(), "): ", k.status().message()));
  }
  if (kernel == nullptr) {
    return absl::UnimplementedError(absl::StrCat("cannot compile @", primitive.name(), " for ",
                                                 DeviceName(device), ": no kernel provider of ",
                                                 DeviceName(device), " takes it"));
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
