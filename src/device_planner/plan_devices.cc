// plan-devices: device placement for two devices (host cpu + one accelerator).
//
// Definitions
//   Side: host (cpu) or accelerator (the pipeline target: sim or cuda). With target=cpu every
//   value is on the host and nothing is copied.
//   Graph node: every binding that computes (op call, invoke, if, loop), every function
//   parameter, and two fixed pseudo nodes HOST and ACCEL. Constants are not graph nodes: a
//   constant is materialised at load time on every side that uses it (duplicated, never
//   copied per inference).
//   Use site: where a value's data is read (device_rules.h): kernel inputs on the user's side;
//   `value` inputs of shape functions and if/loop control on HOST (a large value input, which
//   the kernel reads too, on both); inputs of shape queries (shape_of) nowhere (metadata);
//   function results on HOST (or ACCEL with outputs=target); yields on the owner's side.
//
// Constraints, and where they come from
//   1. Annotations (`@cpu`, `@sim` on bindings and parameters, including those left by an
//      earlier run): fixed. An annotation that contradicts the target or a host-only op is an
//      error naming both.
//   2. Op placement from the registry: host-only ops (shape queries) on HOST; `target` ops
//      (dense, conv2d, reductions, argwhere, ...) and invokes on ACCEL; existing device_copy
//      nodes at their dst; `anywhere` ops (elementwise, broadcast, injective) and if/loop are
//      free.
//      Then the device's kernels: an op that no kernel provider of the target runs
//      (KernelCapabilities::CanRun), or a call no provider takes as a group of its own with its
//      dtypes and attributes (DeviceRunsGroup), is fixed to HOST, as ONNX Runtime falls back to its CPU
//      provider; an annotation putting it on the accelerator is an error.
//   3. Parameters: annotated, else inputs=host|target.
//   4. Shape subgraph: a free binding all of whose uses are on HOST (value inputs of shape
//      functions, host-only ops, other such bindings) is fixed to HOST (shape_of -> take ->
//      concatenate -> dyn.reshape target stays on the host). A `target` op whose every use is
//      on HOST is shape arithmetic too (detection preprocessing's min over an image's dims):
//      it is freed, so the cut runs it where its input already is.
//
// Phase 1  Build the graph and the use sites (program order, into regions).
// Phase 2  Fix nodes by constraints 1-4.
// Phase 3  Solve the exact two-device min-cut (two_device_cut.h): minimise the bytes of copied
//          values, one copy per value and destination, sizes from the types with every symbol
//          and `?` set to `symbol-value`, times `symbol-value` per enclosing loop (a copy in a
//          loop body runs every iteration); ties go to the accelerator.
// Phase 4  Write devices on bindings and parameters; give constants their side(s), cloning a
//          constant used on both sides.
// Phase 5  Insert one device_copy per (value, other side) right after the value's definition
//          (at the top of the block for parameters) and redirect exactly the uses on the other
//          side. The host need of a large value input whose operand stays on the device is
//          costed here but copied by manifest-alloc, next to the shape function that reads it.
//
// Output invariants (VerifyDevicePlacement): every binding and parameter has a device; every
// data-reading use reads a value on its own side; a device_copy stands at every boundary and
// nowhere else. Running the pass again changes nothing.
// Sequences and optionals (builtins.def): a builtin is a graph node like a call; the
//   container operand is used on the builtin's side, a position on HOST, and seq.length /
//   opt.has read metadata only (fixed to HOST). A container value costs more than any tensor
//   in the cut, so it stays on one side with its producer and users and only the tensors
//   entering it are copied; a container that fixed sides would force across is an error
//   (CheckContainersStay), since there is no copy of a container.
// Known gaps: tuples are not placed (error); an invoked non-primitive function's body is not
//   planned (its caller's invoke runs on the target); cheap shape subgraphs needed on both
//   sides are copied, not recomputed (only constants are duplicated).
#include "passes/device_planner/plan_devices.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/device_planner/device_rules.h"
#include "passes/device_planner/two_device_cut.h"
#include "passes/ir/printer.h"
#include "passes/ir/scratch_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

constexpr int kHostNode = 0;
constexpr int kAccelNode = 1;

struct UseSite {
  Node* user = nullptr;    // operand use: the binding; block-result use: the region owner
  Block* block = nullptr;  // set for block results (return / yield)
  int index = 0;
  int consumer = kHostNode;  // graph node whose side needs the data
  // False for the host need of an operand whose slot holds the device-side value (a large
  // value input also read by the kernel): it costs a copy, which manifest-alloc inserts for
  // the shape function; the operand itself is not redirected.
  bool operand = true;
};

class Planner {
 public:
  Planner(const PlanDevicesOptions& options, Module& module, Function& f)
      : options_(options), module_(module), f_(f), names_(f, /*lazy=*/true) {}

  absl::StatusOr<bool> Run() {
    RETURN_IF_ERROR(Collect());
    RETURN_IF_ERROR(FixNodes());
    ForceShapeSubgraphToHost();
    ASSIGN_OR_RETURN(CutSolution solution, Solve());
    side_ = solution.side;
    RETURN_IF_ERROR(CheckContainersStay());
    RETURN_IF_ERROR(AssignDevices());
    PlaceConstants();
    InsertCopies();
    Flush();
    return changed_;
  }

 private:
  DeviceKind Device(int side) const {
    return side == CutProblem::kHost ? DeviceKind::kCpu : options_.target;
  }
  int SideOf(DeviceKind d) const { return IsAccelerator(d) ? CutProblem::kAccel : CutProblem::kHost; }
  std::string Where(const Node& n) const {
    std::string names;
    for (const auto& r : n.results()) absl::StrAppend(&names, names.empty() ? "" : ", ", names_.Name(r.get()));
    return absl::StrCat(FormatLocation(&module_, n.loc()), ": ", n.OpName(), " ", names);
  }
  absl::Status Error(const Node& n, absl::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(n), ": ", msg));
  }

  int NewNode(Node* n, Value* param) {
    nodes_.push_back(n);
    params_.push_back(param);
    problem_.fixed.push_back(CutProblem::kFree);
    return static_cast<int>(nodes_.size()) - 1;
  }

  // ---- Phase 1 ------------------------------------------------------------------------------
  absl::Status Collect() {
    NewNode(nullptr, nullptr);  // HOST
    NewNode(nullptr, nullptr);  // ACCEL
    problem_.fixed[kHostNode] = CutProblem::kHost;
    problem_.fixed[kAccelNode] = CutProblem::kAccel;
    for (const auto& p : f_.body().params()) {
      RETURN_IF_ERROR(CheckTyped(p.get(), nullptr));
      NumberValue(p.get(), NewNode(nullptr, p.get()));
    }
    RETURN_IF_ERROR(CollectBlock(f_.body()));
    const int out = options_.outputs_on_host ? kHostNode : kAccelNode;
    for (size_t i = 0; i < f_.body().results().size(); ++i) {
      AddUse(f_.body().results()[i], UseSite{nullptr, &f_.body(), static_cast<int>(i), out});
    }
    uses_.Build(value_ids_.size());
    return absl::OkStatus();
  }

  // Numbers `v` (a constant's result: producer -1) and lists it in values_ unless constant.
  void NumberValue(Value* v, int producer) {
    value_ids_.Number(v);
    producer_.push_back(producer);
    if (producer >= 0) values_.push_back(v);
  }
  int ProducerOf(const Value* v) const {
    const int id = value_ids_.Id(v);
    HETPASS_CHECK(id >= 0, "plan-devices: a value its function does not define");
    return producer_[id];
  }

  // The use sites of `v` in program order (none for a value the function does not define).
  absl::Span<const UseSite> Uses(const Value* v) const { return uses_.Of(value_ids_.Id(v)); }

  absl::Status CheckTyped(const Value* v, const Node* n) const {
    if (!v->type().is_unset()) return absl::OkStatus();
    const std::string what = absl::StrCat("plan-devices needs typed IR (run infer-types first): ",
                                          names_.Name(v), " has no type");
    return n ? Error(*n, what) : absl::InvalidArgumentError(what);
  }

  // A use of a value the function does not define (invalid IR, which the verifier reports) is
  // not one the cut can act on.
  void AddUse(Value* v, UseSite site) { uses_.Add(value_ids_.Id(v), site); }

  absl::Status CollectBlock(Block& block) {
    for (const auto& node : block.nodes()) {
      Node& n = *node;
      for (const auto& r : n.results()) RETURN_IF_ERROR(CheckTyped(r.get(), &n));
      if (n.kind() == NodeKind::kTuple || n.kind() == NodeKind::kGetItem) {
        return Error(n, "plan-devices does not place tuple values yet; flatten tuples first");
      }
      node_ids_.Number(&n);
      if (n.kind() == NodeKind::kConstant) {
        constants_.push_back(&n);
        for (const auto& r : n.results()) NumberValue(r.get(), -1);
        continue;
      }
      const int id = NewNode(&n, nullptr);
      for (const auto& r : n.results()) NumberValue(r.get(), id);
      for (int i = 0; i < n.num_operands(); ++i) {
        const bool is_copy = n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kDeviceCopy;
        if (is_copy) {
          const auto src = ParseDevice(n.attrs().GetString("src"));
          AddUse(n.operand(i), UseSite{&n, nullptr, i, src && IsAccelerator(*src) ? kAccelNode : kHostNode});
          continue;
        }
        const UseNeeds needs = OperandNeeds(n, i);
        if (needs.device) AddUse(n.operand(i), UseSite{&n, nullptr, i, id});
        if (needs.host) AddUse(n.operand(i), UseSite{&n, nullptr, i, kHostNode, !needs.device});
      }
      for (int r = 0; r < n.num_regions(); ++r) {
        Block& region = *n.region(r);
        for (int p = 0; p < region.num_params(); ++p) {
          Value* param = region.param(p);
          RETURN_IF_ERROR(CheckTyped(param, &n));
          // Loop iteration number and condition are driven by the host.
          NumberValue(param, (n.kind() == NodeKind::kLoop && p < 2) ? kHostNode : id);
        }
        RETURN_IF_ERROR(CollectBlock(region));
        for (size_t i = 0; i < region.results().size(); ++i) {
          const int consumer = YieldNeeds(n, static_cast<int>(i)).host ? kHostNode : id;
          AddUse(region.results()[i], UseSite{&n, &region, static_cast<int>(i), consumer});
        }
      }
    }
    return absl::OkStatus();
  }

  // ---- Phase 2 ------------------------------------------------------------------------------
  absl::Status CheckAnnotation(const Node& n, DeviceKind d) const {
    if (d == DeviceKind::kUnset) return absl::OkStatus();
    if (IsAccelerator(d) && d != options_.target) {
      return Error(n, absl::StrFormat("annotation @%s conflicts with the pipeline target '%s'",
                                      DeviceName(d), DeviceName(options_.target)));
    }
    if (n.kind() == NodeKind::kCall && n.op()->placement() == Placement::kHost && IsAccelerator(d)) {
      return Error(n, absl::StrFormat("annotation @%s conflicts with '%s' running on the host only",
                                      DeviceName(d), n.op()->name()));
    }
    if (IsAccelerator(d) && !AcceleratorRuns(n)) {
      return Error(n, absl::StrFormat("annotation @%s: no kernel provider of %s runs '%s'",
                                      DeviceName(d), DeviceName(d), n.op()->name()));
    }
    return absl::OkStatus();
  }

  // Whether the target's kernel providers run `n` (true for everything but compute op calls:
  // device copies, shape queries and the memory ops are not kernels): some provider runs the op
  // (CanRun, from the op alone), and one takes this call as a group of its own, with its dtypes
  // and attributes (DeviceRunsGroup: an f16 sum is a reduction cuda runs only for other dtypes).
  bool AcceleratorRuns(const Node& n) const {
    if (n.kind() != NodeKind::kCall || n.op()->role() != OpRole::kCompute) return true;
    const KernelCapabilities& caps =
        options_.capabilities != nullptr ? *options_.capabilities : BuiltinKernelCapabilities();
    if (!caps.CanRun(*n.op(), options_.target)) return false;
    absl::InlinedVector<Value*, 4> results;  // asked for every call: no allocation
    for (const auto& r : n.results()) results.push_back(r.get());
    const Node* self = &n;
    return DeviceRunsGroup(caps, absl::MakeConstSpan(&self, 1), results, options_.target, &answers_);
  }

  absl::Status FixNodes() {
    const bool host_only = !IsAccelerator(options_.target);
    for (size_t id = 2; id < nodes_.size(); ++id) {
      int8_t& fixed = problem_.fixed[id];
      if (Value* p = params_[id]) {
        if (IsAccelerator(p->device()) && p->device() != options_.target) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "parameter %s of @%s: annotation @%s conflicts with the pipeline target '%s'",
              names_.Name(p), f_.name(), DeviceName(p->device()), DeviceName(options_.target)));
        }
        fixed = p->device() != DeviceKind::kUnset ? SideOf(p->device())
                : options_.inputs_on_host || host_only ? CutProblem::kHost
                                                       : CutProblem::kAccel;
        continue;
      }
      const Node& n = *nodes_[id];
      RETURN_IF_ERROR(CheckAnnotation(n, n.device()));
      if (n.device() != DeviceKind::kUnset) {
        fixed = SideOf(n.device());
      } else if (host_only) {
        fixed = CutProblem::kHost;
      } else if (n.kind() == NodeKind::kCall) {
        if (n.op()->role() == OpRole::kDeviceCopy) {
          fixed = SideOf(ParseDevice(n.attrs().GetString("dst")).value_or(DeviceKind::kCpu));
        } else if (n.op()->placement() == Placement::kHost || !AcceleratorRuns(n)) {
          fixed = CutProblem::kHost;
        } else if (n.op()->placement() == Placement::kTarget) {
          fixed = CutProblem::kAccel;
          target_pinned_.insert(id);
        }
      } else if (n.kind() == NodeKind::kInvoke) {
        fixed = CutProblem::kAccel;
      } else if (n.kind() == NodeKind::kBuiltin &&
                 (n.builtin() == Builtin::kSeqLength || n.builtin() == Builtin::kOptHas)) {
        fixed = CutProblem::kHost;  // host scalars from container metadata
      }
    }
    return absl::OkStatus();
  }

  // Constraint 4, to a fixpoint: free bindings whose every use is on the host. Then a
  // `target` op (a reduction) whose every use is on the host, such as the ReduceMin of an
  // image's dims in detection preprocessing, is shape arithmetic: it is freed for the cut,
  // which keeps it on the device when its input is there (copying the smaller result) and
  // moves it to the host when its input is already there (no copy to the device and back).
  // One sweep from the last binding back reaches the fixpoint, since a binding's uses come
  // after it, except through a region's results, whose consumer is the node owning the region
  // (numbered before the bindings inside it): only when such a node changes is there another
  // sweep.
  void ForceShapeSubgraphToHost() {
    bool again = true;
    while (again) {
      again = false;
      for (size_t id = nodes_.size(); id-- > 2;) {
        if (problem_.fixed[id] != CutProblem::kFree || nodes_[id] == nullptr) continue;
        if (AllUsesOnHost(id)) {
          problem_.fixed[id] = CutProblem::kHost;
          again |= nodes_[id]->num_regions() > 0;
        }
      }
    }
    for (int id : target_pinned_) {
      if (AllUsesOnHost(id)) problem_.fixed[id] = CutProblem::kFree;
    }
  }

  bool AllUsesOnHost(size_t id) const {
    bool any = false, all_host = true;
    for (const auto& r : nodes_[id]->results()) {
      for (const UseSite& u : Uses(r.get())) {
        any = true;
        // Returning a value is not a shape computation: the network's tail stays with
        // the kernels (the cut decides where its result is copied).
        const bool returned = u.block == &f_.body();
        all_host &= !returned && problem_.fixed[u.consumer] == CutProblem::kHost;
      }
    }
    return any && all_host;
  }

  // ---- Phase 3 ------------------------------------------------------------------------------
  int64_t EstimateBytes(const Type& t) const {
    // A sequence or optional is never copied as a whole (there is no such copy): the cut keeps
    // it with its producer and users by pricing it above any tensor.
    if (t.is_sequence() || t.is_optional()) return int64_t{1} << 40;
    if (!t.is_tensor()) return 0;
    int64_t n = DTypeSize(t.dtype());
    for (const DimExpr& d : t.shape()) {
      int64_t v = options_.symbol_value;
      if (d.is_constant()) {
        v = d.constant();
      } else if (!d.is_unknown()) {
        // A model repeats a few symbolic dims (`batch`, `seq`) on every value.
        auto [it, inserted] = dim_estimates_.try_emplace(d, options_.symbol_value);
        if (inserted) {
          std::set<std::string> syms;
          d.CollectSymbols(&syms);
          DimExpr::Bindings b;
          for (const std::string& s : syms) b[s] = options_.symbol_value;
          auto e = d.Evaluate(b);
          if (e.ok() && *e >= 0) it->second = *e;
        }
        v = it->second;
      }
      if (__builtin_mul_overflow(n, v, &n)) return int64_t{1} << 40;
    }
    return std::min<int64_t>(n, int64_t{1} << 40);
  }

  static int LoopDepth(const Value* v) {
    const Block* b = v->producer() ? v->producer()->parent() : v->param_block();
    int depth = 0;
    for (; b != nullptr && b->parent_node() != nullptr; b = b->parent_node()->parent()) {
      depth += b->parent_node()->kind() == NodeKind::kLoop;
    }
    return depth;
  }

  absl::StatusOr<CutSolution> Solve() {
    problem_.host_penalty.assign(nodes_.size(), 0);
    for (size_t id = 2; id < nodes_.size(); ++id) {
      if (problem_.fixed[id] == CutProblem::kFree) problem_.host_penalty[id] = 1;  // ties: accel
    }
    for (Value* v : values_) {
      const absl::Span<const UseSite> uses = Uses(v);
      if (uses.empty()) continue;
      CutProblem::Value cv;
      cv.producer = ProducerOf(v);
      // A copy sits right after the value's definition, so it runs as often as that block:
      // once per iteration of every enclosing loop (each estimated at symbol-value trips).
      cv.bytes = EstimateBytes(v->type());
      for (int d = LoopDepth(v); d > 0 && cv.bytes < (int64_t{1} << 40); --d) {
        cv.bytes *= options_.symbol_value;
      }
      cv.bytes = std::min<int64_t>(cv.bytes, int64_t{1} << 40);
      for (const UseSite& u : uses) {
        if (std::find(cv.consumers.begin(), cv.consumers.end(), u.consumer) == cv.consumers.end()) {
          cv.consumers.push_back(u.consumer);
        }
      }
      problem_.values.push_back(std::move(cv));
    }
    return SolveTwoDeviceCut(problem_);
  }

  // ---- Phase 4 ------------------------------------------------------------------------------
  absl::Status AssignDevices() {
    for (size_t id = 2; id < nodes_.size(); ++id) {
      if (nodes_[id] != nullptr && nodes_[id]->device() != Device(side_[id])) {
        nodes_[id]->set_device(Device(side_[id]));
        changed_ = true;
      }
    }
    // Parameters of the function and of regions live where their producer node is.
    for (Value* v : values_) {
      if (!v->is_param()) continue;
      const DeviceKind d = Device(side_[ProducerOf(v)]);
      if (v->device() != d) {
        v->set_param_device(d);
        changed_ = true;
      }
    }
    // A device_copy must read from its src: its input's side is the planner's to check.
    for (size_t id = 2; id < nodes_.size(); ++id) {
      Node* n = nodes_[id];
      if (n == nullptr || n->kind() != NodeKind::kCall || n->op()->role() != OpRole::kDeviceCopy) continue;
      const Value* in = n->operand(0);
      const DeviceKind in_device = ConstantData(in) ? ParseDevice(n->attrs().GetString("src")).value_or(DeviceKind::kCpu)
                                                    : Device(side_[ProducerOf(in)]);
      if (DeviceName(in_device) != n->attrs().GetString("src")) {
        return Error(*n, absl::StrFormat("copies from '%s' but its input %s is on '%s'",
                                         n->attrs().GetString("src"), names_.Name(in),
                                         DeviceName(in_device)));
      }
    }
    return absl::OkStatus();
  }

  static const Tensor* ConstantData(const Value* v) {
    const Node* p = v->producer();
    return p && p->kind() == NodeKind::kConstant ? &p->constant_value() : nullptr;
  }

  int ConsumerSide(const UseSite& u) const { return side_[u.consumer]; }

  void PlaceConstants() {
    for (Node* c : constants_) {
      Value* v = c->result(0);
      bool host = false, accel = false;
      const absl::Span<const UseSite> uses = Uses(v);
      for (const UseSite& u : uses) (ConsumerSide(u) == CutProblem::kHost ? host : accel) = true;
      const DeviceKind own = host || !accel ? DeviceKind::kCpu : options_.target;
      if (c->device() != own) {
        c->set_device(own);
        changed_ = true;
      }
      if (host && accel) {
        // Materialise a second copy of the constant on the accelerator (at load time).
        auto clone = std::make_unique<Node>(NodeKind::kConstant);
        clone->set_constant_value(c->constant_value());
        clone->set_loc(c->loc());
        clone->set_device(options_.target);
        Value* cv = clone->AddResult(v->type(), v->name().empty() ? "" : absl::StrCat(v->name(), "_", DeviceName(options_.target)));
        for (const UseSite& u : uses) {
          if (ConsumerSide(u) == CutProblem::kAccel) Redirect(u, cv);
        }
        InsertAfter(c, std::move(clone));
        changed_ = true;
      }
    }
  }

  // ---- Phase 5 ------------------------------------------------------------------------------
  void Redirect(const UseSite& u, Value* to) {
    if (!u.operand) return;  // a shape-function need: manifest-alloc copies for it
    if (u.block != nullptr) {
      u.block->mutable_results()[u.index] = to;
    } else {
      u.user->set_operand(u.index, to);
    }
  }

  // Sequences and optionals stay on one side: their elements are copied where they enter
  // (seq.insert's tensor operand), never the container. Only fixed sides (annotations,
  // parameters, function results) can force one across; say which.
  absl::Status CheckContainersStay() const {
    for (Value* v : values_) {
      if (!v->type().is_sequence() && !v->type().is_optional()) continue;
      const int from = side_[ProducerOf(v)];
      for (const UseSite& u : Uses(v)) {
        if (u.operand && ConsumerSide(u) != from) {
          return absl::UnimplementedError(absl::StrFormat(
              "plan-devices: %s of @%s (%s) is made on %s but used on %s; sequences and optionals "
              "are not copied between devices",
              names_.Name(v), f_.name(), v->type().ToString(), DeviceName(Device(from)),
              DeviceName(Device(1 - from))));
        }
      }
    }
    return absl::OkStatus();
  }

  void InsertCopies() {
    for (Value* v : values_) {
      const int from = side_[ProducerOf(v)];
      std::vector<const UseSite*> across;
      for (const UseSite& u : Uses(v)) {
        if (ConsumerSide(u) != from) across.push_back(&u);
      }
      const bool redirected = std::any_of(across.begin(), across.end(),
                                          [](const UseSite* u) { return u->operand; });
      if (!redirected) continue;  // only shape-function needs: manifest-alloc's copies
      const DeviceKind src = Device(from), dst = Device(1 - from);
      auto copy = std::make_unique<Node>(NodeKind::kCall);
      copy->set_op(OpRegistry::Global().FindByRole(OpRole::kDeviceCopy));
      copy->AddOperand(v);
      copy->mutable_attrs().Set("src", std::string(DeviceName(src)));
      copy->mutable_attrs().Set("dst", std::string(DeviceName(dst)));
      copy->set_device(dst);
      copy->set_loc(v->producer() ? v->producer()->loc() : f_.loc());
      Value* cv = copy->AddResult(v->type(), v->name().empty() || IsAllDigits(v->name())
                                                 ? ""
                                                 : absl::StrCat(v->name(), "_", DeviceName(dst)));
      for (const UseSite* u : across) Redirect(*u, cv);
      if (v->producer() != nullptr) {
        InsertAfter(v->producer(), std::move(copy));
      } else {
        insertions_[v->param_block()].push_back(Insertion{-1, nullptr, std::move(copy)});
      }
      changed_ = true;
    }
  }

  static bool IsAllDigits(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  }

  // The bindings to insert, by block: after the binding of node id `after` (`after_node`), or
  // at the block's start (-1, nullptr).
  struct Insertion {
    int after;
    const Node* after_node;
    std::unique_ptr<Node> node;
  };
  void InsertAfter(const Node* n, std::unique_ptr<Node> added) {
    const int id = node_ids_.Id(n);
    HETPASS_CHECK(id >= 0, "plan-devices inserts after a binding it did not collect");
    insertions_[n->parent()].push_back(Insertion{id, n, std::move(added)});
  }

  // Splices the new bindings into their blocks, each block on its own: the blocks without
  // insertions are not visited, and the bindings of one with insertions are moved, never read
  // (a sweep reading every binding of a 100k-binding block again cost more than the copies).
  void Flush() {
    for (auto& [block, list] : insertions_) FlushBlock(*block, list);
  }
  void FlushBlock(Block& block, std::vector<Insertion>& list) {
    // Node ids grow in program order within a block; for one binding, the order of the calls.
    std::stable_sort(list.begin(), list.end(),
                     [](const Insertion& a, const Insertion& b) { return a.after < b.after; });
    std::vector<std::unique_ptr<Node>>& nodes = block.mutable_nodes();
    const size_t old_size = nodes.size();
    for (Insertion& ins : list) block.Append(std::move(ins.node));  // placed below
    std::vector<std::unique_ptr<Node>> merged;
    merged.reserve(nodes.size());
    size_t next = 0;
    while (next < list.size() && list[next].after_node == nullptr) {
      merged.push_back(std::move(nodes[old_size + next++]));
    }
    for (size_t i = 0; i < old_size; ++i) {
      const Node* at = nodes[i].get();
      merged.push_back(std::move(nodes[i]));
      while (next < list.size() && list[next].after_node == at) {
        merged.push_back(std::move(nodes[old_size + next++]));
      }
    }
    nodes = std::move(merged);
  }

  const PlanDevicesOptions& options_;
  // The capabilities' answers about single-call groups (a model repeats a few op signatures).
  mutable GroupAnswerCache answers_;
  // EstimateBytes' value of each symbolic dim.
  mutable absl::flat_hash_map<DimExpr, int64_t> dim_estimates_;
  Module& module_;
  Function& f_;
  ValueNames names_;
  CutProblem problem_;
  std::vector<int8_t> side_;
  std::vector<Node*> nodes_;
  std::vector<Value*> params_;
  std::vector<Value*> values_;  // every non-constant value, in program order
  std::vector<Node*> constants_;
  // Every value of the function, constants' results included, and its graph node (-1 for a
  // constant's), by value id.
  ScratchIds<Value> value_ids_;
  std::vector<int> producer_;
  // Nodes fixed to the accelerator only by their op's `target` placement (constraint 2).
  absl::flat_hash_set<int> target_pinned_;
  // The use sites of each value, by value id.
  IdBuckets<UseSite> uses_;
  // Every binding of the function (InsertAfter names a binding by its id).
  ScratchIds<Node> node_ids_;
  absl::flat_hash_map<Block*, std::vector<Insertion>> insertions_;  // InsertAfter's
  bool changed_ = false;
};

class PlanDevicesPass : public Pass {
 public:
  explicit PlanDevicesPass(PlanDevicesOptions options) : options_(std::move(options)) {}
  absl::string_view name() const override { return PlanDevicesOptions::kName; }
  absl::StatusOr<bool> Run(Module& module) override {
    Function* f = module.FindFunction(options_.function);
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan-devices: no function @%s in the module", options_.function));
    }
    return Planner(options_, module, *f).Run();
  }
  absl::Status VerifyPostconditions(const Module& module) const override {
    return VerifyDevicePlacement(module, options_.function, options_.outputs_on_host);
  }

 private:
  PlanDevicesOptions options_;
};

// ---- VerifyDevicePlacement -------------------------------------------------------------------

class PlacementChecker {
 public:
  PlacementChecker(const Module& m, const Function& f, bool outputs_on_host)
      : m_(m), f_(f), names_(f, /*lazy=*/true), outputs_on_host_(outputs_on_host) {}

  absl::Status Check() {
    for (const auto& p : f_.body().params()) {
      if (p->device() == DeviceKind::kUnset) {
        return absl::InvalidArgumentError(absl::StrFormat("parameter %s of @%s has no device",
                                                          names_.Name(p.get()), f_.name()));
      }
    }
    RETURN_IF_ERROR(CheckBlock(f_.body()));
    for (const Value* v : f_.body().results()) {
      const bool host = !IsAccelerator(v->device());
      if (host != outputs_on_host_) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "@%s returns %s on '%s' but results must be on the %s", f_.name(), names_.Name(v),
            DeviceName(v->device()), outputs_on_host_ ? "host" : "accelerator"));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Fail(const Node& n, absl::string_view msg) const {
    return absl::InvalidArgumentError(
        absl::StrCat(FormatLocation(&m_, n.loc()), ": ", n.OpName(), ": ", msg));
  }

  absl::Status Expect(const Node& n, const Value* v, DeviceKind want, absl::string_view what) const {
    if (v->device() == want) return absl::OkStatus();
    return Fail(n, absl::StrFormat("%s %s is on '%s' but is read on '%s' with no device_copy",
                                   what, names_.Name(v), DeviceName(v->device()), DeviceName(want)));
  }

  absl::Status CheckBlock(const Block& b) {
    for (const auto& node : b.nodes()) {
      const Node& n = *node;
      if (n.device() == DeviceKind::kUnset) return Fail(n, "binding has no device");
      const bool is_copy = n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kDeviceCopy;
      for (int i = 0; i < n.num_operands(); ++i) {
        const Value* v = n.operand(i);
        if (is_copy) {
          const auto src = ParseDevice(n.attrs().GetString("src"));
          RETURN_IF_ERROR(Expect(n, v, src.value_or(DeviceKind::kUnset), "the copied value"));
          continue;
        }
        const UseNeeds needs = OperandNeeds(n, i);
        if (needs.device) {
          RETURN_IF_ERROR(Expect(n, v, n.device(), absl::StrCat("input ", i)));
        } else if (needs.host) {
          RETURN_IF_ERROR(Expect(n, v, DeviceKind::kCpu, absl::StrCat("value input ", i)));
        }
      }
      for (int r = 0; r < n.num_regions(); ++r) {
        const Block& region = *n.region(r);
        RETURN_IF_ERROR(CheckBlock(region));
        for (size_t i = 0; i < region.results().size(); ++i) {
          const DeviceKind want =
              YieldNeeds(n, static_cast<int>(i)).host ? DeviceKind::kCpu : n.device();
          RETURN_IF_ERROR(Expect(n, region.results()[i], want, absl::StrCat("yield ", i)));
        }
      }
    }
    return absl::OkStatus();
  }

  const Module& m_;
  const Function& f_;
  ValueNames names_;
  bool outputs_on_host_;
};

}  // namespace

std::unique_ptr<Pass> CreatePlanDevicesPass(const PlanDevicesOptions& options) {
  return std::make_unique<PlanDevicesPass>(options);
}

absl::Status VerifyDevicePlacement(const Module& module, absl::string_view function,
                                   bool outputs_on_host) {
  const Function* f = module.FindFunction(function);
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("no function @%s in the module", function));
  }
  return PlacementChecker(module, *f, outputs_on_host).Check();
}

}  // namespace hetpass
