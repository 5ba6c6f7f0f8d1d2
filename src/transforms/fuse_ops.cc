// fuse-ops: op calls grouped into primitive functions, one `invoke` per group.
//
// Definitions
//   wrappable   an op call whose op role is kCompute. device_copy (kDeviceCopy) is never fused
//               and never wrapped: plan-devices put it on a boundary and later stages must
//               still see it. Shape queries (shape_of) are not wrapped either: they read only
//               metadata, which no kernel is needed for (wrapped, they would look like a
//               kernel reading its input's data on the host). Constants, tuples, get_item, invoke, if and loop are
//               never members of a group.
//   group       a set of wrappable calls of one block, all on the same device (Node::device(),
//               kUnset included), that becomes one primitive function. Its *pattern* (from
//               fusion_patterns.def) says what may still join it.
//   use         an operand of a node at any depth, or an entry of a block's results (return or
//               yield). The users of a value are counted once per function, before rewriting.
//
// Input: typed IR (infer-types ran): every operand and result of a wrappable call has a type,
// else the pass fails naming the node. Functions already marked primitive are left alone, which
// makes the pass idempotent: its own output has nothing left to wrap.
//
// Phase 0  Per non-primitive function, one sweep: number its nodes and values, record the
//          users of every value, check types (an untyped function fails the pass before
//          anything of it changes; functions before it are fused already).
// Phase 1  Group each block greedily in program order (regions are grouped independently when
//          Phase 2 reaches their node; if/loop/invoke nodes themselves are never members).
//          Every wrappable call N starts a group of its own unless it joins the group G of a
//          producer P: N's operands are tried in order and the first P that passes all of
//          these checks wins:
//            a. P is a wrappable call of the same block, in group G;
//            b. every use of every result of P is an operand of N (no other user, no block
//               result, no use inside a region): then no value of G escapes before N, so a
//               group is always a chain whose last member alone has outside uses and the
//               invoke can stand where that member stood;
//            c. N and G are on the same device;
//            d. N does not read any result of P (or of any member of G) as a `value` input
//               (NeedsValue(dep(i))):
//               contents a shape function needs must be materialized (on the host), which is
//               the point of the per-input masks; so a shape subgraph never fuses into the
//               dyn.reshape whose target it computes, and ops with needs_values() absorb
//               nothing upstream through those inputs;
//            e. neither N nor any member of G has a data-dependent output shape (argwhere):
//               such an op's output is allocated only after it ran, so it stands alone;
//            f. G has fewer than max-group-size members;
//            g. the patterns compose (p = G's pattern, n = N's pattern):
//                 p <= injective and n <= injective     -> max(p, n)
//                 p out-elementwise-fusable, n elementwise or broadcast
//                                                        -> out-elementwise-fusable
//                 p <= injective and n reduction          -> reduction
//                 p reduction and n elementwise           -> reduction
//                 anything with opaque, anything else     -> no fusion
//            h. fusing loses no native kernel: N and every member of G may be fused on G's
//               device (KernelCapabilities::CanFuse: some non-fallback kernel provider
//               compiles the op inside groups, or only the fallback runs it at all; unplaced
//               groups ask the cpu). An op that its device runs natively but only alone (an
//               image resize, a constant pad) thus stays alone instead of taking its
//               neighbours onto the reference interpreter.
//          Deterministic: only program order and operand order decide.
// Phase 1b Rule i (done in Phase 2's sweep, at the group's first member), per group rather
//          than per op: a group of several ops on a device is copied
//          into a scratch primitive function (as Phase 2 would outline it) and the device is
//          asked whether a provider other than its fallback takes it whole
//          (KernelCapabilities::TakesGroupNatively). CanFuse is per op, so a group of
//          individually fusable ops may still be one no native kernel takes (a reduction whose
//          prologue reads a second tensor, `mean(x * sigmoid(x))`; a convolution whose tail
//          broadcasts it against a larger tensor, a squeeze-excite scale): on cuda no kernel
//          would run it, on cpu and sim the reference interpreter would, 10-100x slower than
//          the native pieces. Such a group is cut into consecutive pieces, greedily from the
//          front: the longest piece a native provider takes (`[sigmoid, multiply]` + `[mean]`);
//          ops that no native provider takes even alone stay together. Where no native piece
//          does more than views (`[dyn.tile, dyn.reshape]`: the reshape alone would be a copy),
//          a device with a fallback keeps the group whole and one without (cuda) gets single
//          ops.
// Phase 2  Rewrite each block. Walking it in order, region blocks are rewritten (recursively)
//          when their node is reached, and each group is split by rule i (Phase 1b) and named
//          when its first member is reached (one sweep: a 100k-op block does not fit in cache,
//          and a sweep per step read every group from memory again): `fused_<op names joined by _>_<k>` ('.' becomes '_'; names past 64
//          characters are cut at an op boundary and end in `_etc`; k counts created functions
//          in the module and skips names already taken). At the group's last member:
//            - a new function is appended to the module with attributes {primitive = true},
//              the location of the first member, and:
//                params   the values used by members but defined outside the group, in first-use
//                         order, named and typed as those values, each with its value's device
//                         (constants thus become parameters: functions stay weight-free and
//                         cacheable by structure);
//                body     the members, moved (devices, locations, attributes and names kept),
//                         operands redirected to the params;
//                results  the members' results used outside the group (for a dead group: the
//                         last member's results), result types copied from those values;
//            - an `invoke` of it takes the members' place in the block: same device as the
//              group, the first member's location, the outside values as operands, one result
//              per function result with that value's name and type.
//          Finally every use of a group result in the function (any depth) is redirected to the
//          invoke's result (one ReplaceUses per function).
//          Shared functions (share_functions, the default): a group that outlines to a function
//          structurally equal (GroupsStructurallyEqual: same ops, attributes, devices, types
//          and wiring; names and locations aside) to one an earlier group of the same function
//          got invokes that function, is not named, and its members are dropped. Only a
//          function whose types mention no symbol but the whole dims of its parameters' types
//          is shared: it then means the same at every invoke. The kernels of equal functions
//          were shared by structure already (kernel cache); what sharing saves is the IR, and
//          every later pass's and the VM compiler's work on it (at 100k ops of repeated
//          blocks, 25k functions become one). A shared function's bindings lose their source
//          locations (they were the first group's); a run-time error names the invoke's.
//
// Output: no wrappable call remains outside a primitive function; types are unchanged, so
// infer-types afterwards reports no change; running fuse-ops again reports no change.
// Per-input masks of the new functions are derived on demand (DeriveInputMask), never stored.
//
// Known gaps
//   - Only single-user producers fuse (no post-dominator analysis as in TVM): a diamond
//     (x -> a; a -> b; add(a, b)) fuses b with the add but not a with them.
//   - Result types of a primitive function may mention symbols of the caller that its own
//     parameter types do not bind (a dyn.reshape target from a shape subgraph gives
//     f32[n, 1024] from a parameter i64[2]); such a function is never shared, so its single call
//     site's binding applies. Its run-time shape function is InferPrimitiveTypes.
#include "passes/transforms/fuse_ops.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "passes/compile_engine/kernel_provider.h"
#include "passes/ir/scratch_ids.h"
#include "passes/ir/structural.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "passes/shape_funcs/primitive_function.h"

namespace hetpass {
namespace {

constexpr size_t kMaxNameLength = 64;

bool Wrappable(const Node& n) {
  return n.kind() == NodeKind::kCall && n.op()->role() == OpRole::kCompute;
}

bool AtMostInjective(FusionPattern p) { return p <= FusionPattern::kInjective; }

// Rule g: the pattern of G after N joins, or nullopt if they do not compose.
std::optional<FusionPattern> Compose(FusionPattern group, FusionPattern node) {
  if (group == FusionPattern::kOpaque || node == FusionPattern::kOpaque) return std::nullopt;
  if (AtMostInjective(group) && AtMostInjective(node)) return std::max(group, node);
  if (group == FusionPattern::kOutElementwiseFusable &&
      (node == FusionPattern::kElementwise || node == FusionPattern::kBroadcast)) {
    return group;
  }
  if (AtMostInjective(group) && node == FusionPattern::kReduction) {
    return FusionPattern::kReduction;
  }
  if (group == FusionPattern::kReduction && node == FusionPattern::kElementwise) return group;
  return std::nullopt;
}

struct Group {
  std::vector<Node*> members;  // program order
  FusionPattern pattern = FusionPattern::kOpaque;
  DeviceKind device = DeviceKind::kUnset;
  bool closed = false;           // holds a data-dependent op: nothing joins (rule e)
  bool fusable = true;           // every member can be fused on the device (rule h)
  Function* function = nullptr;  // created (empty) in Phase 2 when the group is named
  bool shared = false;           // `function` is an equal group's (share_functions)
  // GroupOutputs, once rule i asked for them (members are final by then), and with them
  // GroupStructuralHash, which rule i and function sharing both key on.
  std::vector<Value*> outputs;
  std::optional<size_t> hash;
};

class FuseOpsPass : public Pass {
 public:
  explicit FuseOpsPass(const FuseOpsOptions& options) : options_(options) {}
  absl::string_view name() const override { return FuseOpsOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    module_ = &module;
    counter_ = 0;
    answers_ = std::make_unique<GroupAnswerCache>();
    taken_names_.clear();
    std::vector<Function*> todo;
    for (const auto& f : module.functions()) {
      taken_names_.insert(f->name());
      if (!IsPrimitive(*f)) todo.push_back(f.get());
    }
    // Each function is checked for types as it is numbered (NumberBlock), before any change to
    // it: an untyped function fails the pass, though the functions before it are fused.
    bool changed = false;
    for (Function* f : todo) {
      ASSIGN_OR_RETURN(const bool c, FuseFunction(*f));
      changed |= c;
    }
    shareable_.clear();
    return changed;
  }

 private:
  // ---- Phase 0 ------------------------------------------------------------------------------
  // Numbers the nodes and values of a block, regions included (node_ids_, value_ids_), records
  // the users of each value (users_) and checks that what fuse-ops wraps is typed, in one sweep:
  // a 100k-op block does not fit in cache, and an operand is numbered (defined) before its use.
  absl::Status NumberBlock(const Block& block) {
    for (const auto& p : block.params()) value_ids_.Number(p.get());
    for (const auto& node : block.nodes()) {
      const Node& n = *node;
      node_ids_.Number(&n);
      for (const auto& r : n.results()) value_ids_.Number(r.get());
      for (const Value* v : n.operands()) users_.Add(value_ids_.Id(v), &n);
      if (Wrappable(n)) RETURN_IF_ERROR(CheckTyped(n));
      for (int r = 0; r < n.num_regions(); ++r) RETURN_IF_ERROR(NumberBlock(*n.region(r)));
    }
    for (const Value* v : block.results()) users_.Add(value_ids_.Id(v), nullptr);
    return absl::OkStatus();
  }

  absl::Status CheckTyped(const Node& n) const {
    for (int i = 0; i < n.num_operands(); ++i) {
      if (!n.operand(i)->type().is_unset()) continue;
      return absl::FailedPreconditionError(absl::StrFormat(
          "%sfuse-ops needs typed IR (run infer-types first): operand %d (%%%s) has no type",
          NodeContext(module_, n), i, n.operand(i)->name()));
    }
    for (int i = 0; i < n.num_results(); ++i) {
      if (!n.result(i)->type().is_unset()) continue;
      return absl::FailedPreconditionError(absl::StrFormat(
          "%sfuse-ops needs typed IR (run infer-types first): result %d (%%%s) has no type",
          NodeContext(module_, n), i, n.result(i)->name()));
    }
    return absl::OkStatus();
  }

  // The users of `v` (nullptr: a block result), each once per use.
  absl::Span<const Node* const> Users(const Value* v) const { return users_.Of(value_ids_.Id(v)); }

  // The index of `n`'s group among its block's groups, or -1.
  int GroupOf(const Node* n) const {
    const int id = n == nullptr ? -1 : node_ids_.Id(n);
    return id < 0 ? -1 : group_of_[id];
  }
  void SetGroup(const Node* n, int g) { group_of_[node_ids_.Id(n)] = g; }

  // Membership in one group (or one piece of a group), asked for a handful of nodes at a time
  // and for every group: marking the members with a fresh stamp builds no set (one hash set per
  // group and question before) and clears nothing. Marked(n, stamp): whether
  // `n` was among the members of the Mark that returned `stamp`, the latest only.
  uint32_t Mark(absl::Span<Node* const> members) const {
    ++stamp_;
    for (const Node* m : members) mark_[node_ids_.Id(m)] = stamp_;
    return stamp_;
  }
  bool Marked(const Node* n, uint32_t stamp) const {
    const int id = n == nullptr ? -1 : node_ids_.Id(n);
    return id >= 0 && mark_[id] == stamp;
  }

  absl::StatusOr<bool> FuseFunction(Function& f) {
    replace_.clear();
    shareable_.clear();
    value_ids_.Clear();
    node_ids_.Clear();
    users_ = IdBuckets<const Node*>();
    RETURN_IF_ERROR(NumberBlock(f.body()));
    users_.Build(value_ids_.size());
    group_of_.assign(node_ids_.size(), -1);
    mark_.assign(node_ids_.size(), 0);
    stamp_ = 0;
    const bool changed = FuseBlock(f.body());
    if (!replace_.empty()) ReplaceUses(f.body(), replace_);
    // Only now: until the uses are rewritten, a freed value's address could be reused by a new
    // one that replace_ would then redirect.
    shared_members_.clear();
    // A shared function's bindings carry the first group's source locations, which would point
    // a run-time error at the wrong place: the invoke's location names the group that failed.
    for (Function* fn : shared_functions_) {
      for (const auto& n : fn->body().nodes()) n->set_loc(Location());
    }
    shared_functions_.clear();
    return changed;
  }

  // ---- Phase 1 ------------------------------------------------------------------------------
  bool CanFuse(const Node& n) const {
    const KernelCapabilities& caps =
        options_.capabilities != nullptr ? *options_.capabilities : BuiltinKernelCapabilities();
    return caps.CanFuse(*n.op(), n.device() == DeviceKind::kUnset ? DeviceKind::kCpu : n.device());
  }

  // Rules a-h for N joining the group of the producer of operand `i`; the group index or -1.
  // `fusable`: CanFuse(n), asked once per node by the caller.
  int JoinableGroup(const Node& n, bool fusable, int i, const std::vector<Group>& groups) const {
    const Node* p = n.operand(i)->producer();
    if (p == nullptr || p->parent() != n.parent()) return -1;  // a
    const int group = GroupOf(p);
    if (group < 0) return -1;  // a
    const Group& g = groups[group];
    for (const auto& r : p->results()) {  // b
      for (const Node* user : Users(r.get())) {
        if (user != &n) return -1;
      }
    }
    if (n.device() != g.device) return -1;        // c
    for (int j = 0; j < n.num_operands(); ++j) {  // d
      if (!NeedsValue(n.op()->dep(j))) continue;
      const Node* q = n.operand(j)->producer();
      if (q != nullptr && q->parent() == n.parent() && GroupOf(q) == group) return -1;
    }
    if (g.closed || n.op()->data_dependent_output_shape()) return -1;                  // e
    if (static_cast<int64_t>(g.members.size()) >= options_.max_group_size) return -1;  // f
    if (!Compose(g.pattern, n.op()->pattern())) return -1;                             // g
    if (!g.fusable || !fusable) return -1;                                             // h
    return group;
  }

  std::vector<Group> FormGroups(Block& block) {
    std::vector<Group> groups;
    for (const auto& node : block.nodes()) {
      const Node& n = *node;
      if (!Wrappable(n)) continue;
      const bool fusable = CanFuse(n);
      int join = -1;
      for (int i = 0; i < n.num_operands() && join < 0; ++i) {
        join = JoinableGroup(n, fusable, i, groups);
      }
      if (join < 0) {
        Group g;
        g.pattern = n.op()->pattern();
        g.device = n.device();
        groups.push_back(std::move(g));
        join = static_cast<int>(groups.size()) - 1;
      } else {
        groups[join].pattern = *Compose(groups[join].pattern, n.op()->pattern());
      }
      Group& g = groups[join];
      g.members.push_back(node.get());
      g.closed |= n.op()->data_dependent_output_shape();
      g.fusable &= fusable;
      SetGroup(&n, join);
    }
    return groups;
  }

  // ---- Phase 2 ------------------------------------------------------------------------------
  // Names the group and adds its (still empty) function, so that module order follows names.
  Function* NewFunction(const Group& g) {
    std::string base = "fused";
    for (size_t i = 0; i < g.members.size(); ++i) {
      const std::string op = absl::StrReplaceAll(g.members[i]->OpName(), {{".", "_"}});
      if (i > 0 && base.size() + 1 + op.size() > kMaxNameLength) {
        absl::StrAppend(&base, "_etc");
        break;
      }
      absl::StrAppend(&base, "_", op);
    }
    std::string name;
    do {
      name = absl::StrCat(base, "_", counter_++);
    } while (taken_names_.contains(name));
    taken_names_.insert(name);
    Function* fn = module_->AddFunction(name);
    fn->mutable_attrs().Set(kPrimitiveAttr, AttrValue(true));
    fn->set_loc(g.members.front()->loc());
    return fn;
  }

  // The group's function: with share_functions, that of an earlier equal group of this function
  // (then g.shared), else a new one, remembered for later groups where it can be shared.
  Function* FunctionFor(Group& g) {
    if (!options_.share_functions) return NewFunction(g);
    const uint32_t members = Mark(g.members);
    if (g.outputs.empty()) g.outputs = GroupOutputs(g, members);
    const std::vector<const Node*> nodes(g.members.begin(), g.members.end());
    if (!g.hash) g.hash = GroupStructuralHash(nodes, g.outputs);
    std::vector<Shareable>& bucket = shareable_[*g.hash];
    for (const Shareable& s : bucket) {
      if (GroupsStructurallyEqual(nodes, g.outputs, s.members, s.outputs)) {
        g.shared = true;
        shared_functions_.insert(s.function);
        return s.function;
      }
    }
    Function* fn = NewFunction(g);
    if (SymbolsBoundByParams(g, members)) {
      // The members stay valid as a key once outlined: they move into the function, and their
      // operands become its parameters, which number, type and place as the values they replace.
      bucket.push_back(Shareable{nodes, g.outputs, fn});
    }
    return fn;
  }

  static void CollectSymbols(const Type& t, std::set<std::string>* out) {
    for (const DimExpr& d : t.shape()) d.CollectSymbols(out);
    for (const Type& f : t.fields()) CollectSymbols(f, out);
  }

  // Whether every symbol of the group's types is a whole dim of a parameter's: then the
  // function means the same at every invoke (the VM binds those symbols from the arguments),
  // not only where its caller's binding of a symbol it cannot bind itself applies.
  bool SymbolsBoundByParams(const Group& g, uint32_t members) const {
    std::set<std::string> bound, used;
    for (const Node* n : g.members) {
      for (const Value* v : n->operands()) {
        if (Marked(v->producer(), members)) continue;
        for (const DimExpr& d : v->type().shape()) {
          if (d.is_symbol()) bound.insert(d.symbol_name());
        }
        CollectSymbols(v->type(), &used);
      }
      for (const auto& r : n->results()) CollectSymbols(r->type(), &used);
    }
    return std::includes(bound.begin(), bound.end(), used.begin(), used.end());
  }

  // ---- Phase 1b -----------------------------------------------------------------------------
  // The values of group `g` used outside it (for a dead group: the last member's results), as
  // Outline will return them.
  // `members`: the stamp of Mark(g.members).
  std::vector<Value*> GroupOutputs(const Group& g, uint32_t members) const {
    std::vector<Value*> outputs;
    for (const Node* n : g.members) {
      for (const auto& r : n->results()) {
        for (const Node* user : Users(r.get())) {
          if (user == nullptr || !Marked(user, members)) {
            outputs.push_back(r.get());
            break;
          }
        }
      }
    }
    if (outputs.empty()) {
      for (const auto& r : g.members.back()->results()) outputs.push_back(r.get());
    }
    return outputs;
  }

  // Rule i: whether the device runs group `g` whole (the group as Outline would make it).
  bool DeviceTakes(const Group& g) const {
    const KernelCapabilities& caps =
        options_.capabilities != nullptr ? *options_.capabilities : BuiltinKernelCapabilities();
    const std::vector<const Node*> nodes(g.members.begin(), g.members.end());
    const std::vector<Value*> outputs = GroupOutputs(g, Mark(g.members));
    return DeviceRunsGroup(caps, nodes, outputs, g.device, answers_.get());
  }

  // Whether a provider other than the device's fallback takes the members [begin, end) of
  // `members` as one group.
  bool NativelyTaken(const std::vector<Node*>& members, size_t begin, size_t end, DeviceKind device) const {
    const KernelCapabilities& caps =
        options_.capabilities != nullptr ? *options_.capabilities : BuiltinKernelCapabilities();
    Group part;
    part.members.assign(members.begin() + begin, members.begin() + end);
    const std::vector<const Node*> nodes(part.members.begin(), part.members.end());
    return DeviceRunsGroupNatively(caps, nodes, GroupOutputs(part, Mark(part.members)), device,
                                   answers_.get());
  }

  // Rule i: the consecutive pieces a group no native provider takes whole is cut into. Greedy
  // from the front: the longest piece a native provider takes; where not even the first op
  // alone is taken, the run of such ops up to the next one that is (they run on the fallback
  // either way, so they stay together). Each piece is a consecutive part of the chain, so it
  // outlines like any group. Empty when no native piece does more than views (on a device with
  // a fallback the group then stays whole: cutting it would only add launches and copies).
  std::vector<std::pair<size_t, size_t>> NativePieces(const std::vector<Node*>& members, DeviceKind device) const {
    std::vector<std::pair<size_t, size_t>> pieces;
    bool any_native = false;
    for (size_t begin = 0; begin < members.size();) {
      size_t end = begin;
      for (size_t e = members.size(); e > begin; --e) {
        if (NativelyTaken(members, begin, e, device)) {
          end = e;
          break;
        }
      }
      if (end > begin) {
        // A piece of views only (a reshape) is no reason to cut: the fallback runs a view
        // inside its group for free, alone it is a copy.
        for (size_t k = begin; k < end; ++k) any_native = any_native || !members[k]->op()->is_view();
      } else {
        end = begin + 1;
        while (end < members.size() && !NativelyTaken(members, end, end + 1, device)) ++end;
      }
      pieces.push_back({begin, end});
      begin = end;
    }
    if (!any_native) pieces.clear();
    return pieces;
  }

  // Splits group `i`, a multi-op group that no native provider of its device takes whole, into
  // the pieces NativePieces finds (rule i); the first piece keeps index i, the others are
  // appended. On a device without a fallback (cuda) a refused group must be split, into single
  // ops where no piece is native.
  void SplitIfRefused(std::vector<Group>& groups, size_t i) {
    if (groups[i].members.size() < 2 || groups[i].device == DeviceKind::kUnset) return;
    const KernelCapabilities& caps =
        options_.capabilities != nullptr ? *options_.capabilities : BuiltinKernelCapabilities();
    const bool has_fallback = caps.TakesEveryGroup(groups[i].device);
    if (!has_fallback && DeviceTakes(groups[i])) return;
    if (has_fallback) {
      const std::vector<const Node*> nodes(groups[i].members.begin(), groups[i].members.end());
      groups[i].outputs = GroupOutputs(groups[i], Mark(groups[i].members));
      groups[i].hash = GroupStructuralHash(nodes, groups[i].outputs);
      if (DeviceRunsGroupNatively(caps, nodes, groups[i].outputs, groups[i].device, answers_.get(),
                                  groups[i].hash)) {
        return;
      }
      groups[i].outputs.clear();  // it is cut into pieces
      groups[i].hash.reset();
    }
    std::vector<std::pair<size_t, size_t>> pieces = NativePieces(groups[i].members, groups[i].device);
    if (pieces.empty()) {
      if (has_fallback) return;
      for (size_t k = 0; k < groups[i].members.size(); ++k) pieces.push_back({k, k + 1});
    }
    std::vector<Node*> members = std::move(groups[i].members);
    const DeviceKind device = groups[i].device;
    for (size_t p = 0; p < pieces.size(); ++p) {
      Group piece;
      piece.members.assign(members.begin() + pieces[p].first, members.begin() + pieces[p].second);
      piece.pattern = piece.members.front()->op()->pattern();
      piece.device = device;
      for (const Node* m : piece.members) piece.closed |= m->op()->data_dependent_output_shape();
      if (p == 0) {
        groups[i] = std::move(piece);
        continue;
      }
      groups.push_back(std::move(piece));
      for (Node* m : groups.back().members) SetGroup(m, static_cast<int>(groups.size()) - 1);
    }
  }

  // One sweep in program order does, per group, what needs the group whole: at its first
  // member rule i's split (SplitIfRefused) and the choice of its function (FunctionFor, so
  // functions are named in program order), at its last member the outlining. The nodes of a
  // 100k-op block do not fit in cache: a sweep per step read each group from memory again.
  // A piece split off a group starts at a later member, so the sweep reaches it too.
  bool FuseBlock(Block& block) {
    std::vector<Group> groups = FormGroups(block);
    bool changed = !groups.empty();
    if (groups.empty()) {
      for (const auto& n : block.nodes()) {
        for (int r = 0; r < n->num_regions(); ++r) changed |= FuseBlock(*n->region(r));
      }
      return changed;
    }
    const size_t formed = groups.size();  // pieces split off later need no split of their own
    std::vector<std::unique_ptr<Node>> old = std::move(block.mutable_nodes());
    block.mutable_nodes().clear();
    std::vector<std::vector<std::unique_ptr<Node>>> staged(groups.size());
    for (auto& node : old) {
      Node* n = node.get();
      for (int r = 0; r < n->num_regions(); ++r) changed |= FuseBlock(*n->region(r));
      const int g = GroupOf(n);
      if (g < 0) {
        block.Append(std::move(node));
        continue;
      }
      if (groups[g].members.front() == n) {
        if (static_cast<size_t>(g) < formed) SplitIfRefused(groups, g);
        groups[g].function = FunctionFor(groups[g]);
        if (staged.size() < groups.size()) staged.resize(groups.size());
      }
      const bool last = groups[g].members.back() == n;
      staged[g].push_back(std::move(node));
      if (last) block.Append(Outline(groups[g], std::move(staged[g])));
    }
    return changed;
  }

  // Moves the group's nodes into its primitive function; returns the invoke replacing them.
  std::unique_ptr<Node> Outline(const Group& g, std::vector<std::unique_ptr<Node>> nodes) {
    const Node& first = *g.members.front();
    const uint32_t members = Mark(g.members);
    Function* fn = g.function;
    Block& body = fn->body();

    auto invoke = std::make_unique<Node>(NodeKind::kInvoke);
    invoke->set_callee(fn->name());
    invoke->set_device(g.device);
    invoke->set_loc(first.loc());

    // The values the members use from outside, in first-use order: the invoke's operands (a
    // group has a handful, so the list is searched rather than hashed).
    for (const Node* n : g.members) {
      for (Value* v : n->operands()) {
        if (Marked(v->producer(), members)) continue;
        if (absl::c_linear_search(invoke->operands(), v)) continue;
        invoke->AddOperand(v);
      }
    }
    const std::vector<Value*> outputs = g.outputs.empty() ? GroupOutputs(g, members) : g.outputs;
    for (Value* v : outputs) replace_[v] = invoke->AddResult(v->type(), v->name());
    if (g.shared) {
      // The function exists: the members are not needed (kept until the uses are rewritten).
      for (auto& n : nodes) shared_members_.push_back(std::move(n));
      return invoke;
    }

    absl::flat_hash_map<const Value*, Value*> to_param;
    for (Value* v : invoke->operands()) {
      Value* p = body.AddParam(v->type(), v->name());
      p->set_param_device(v->device());
      to_param[v] = p;
    }
    for (auto& n : nodes) body.Append(std::move(n));
    ReplaceUses(body, to_param);
    std::vector<Type> result_types;
    for (Value* v : outputs) result_types.push_back(v->type());
    body.set_results(outputs);
    fn->set_result_types(std::move(result_types));
    return invoke;
  }

  FuseOpsOptions options_;
  Module* module_ = nullptr;
  int counter_ = 0;
  absl::flat_hash_set<std::string> taken_names_;
  // The nodes and values of the function being fused; the users of each value, recorded before
  // any rewriting (nullptr: a block result); each node's group in its block (-1: none).
  ScratchIds<Node> node_ids_;
  ScratchIds<Value> value_ids_;
  IdBuckets<const Node*> users_;
  std::vector<int> group_of_;
  mutable std::vector<uint32_t> mark_;  // Mark's stamps, by node id
  mutable uint32_t stamp_ = 0;
  // The capabilities' answers about candidate groups, per Run (rule i asks about every group;
  // a model repeats a few group shapes many times).
  std::unique_ptr<GroupAnswerCache> answers_;
  // Group results -> invoke results, applied to the whole function at the end.
  absl::flat_hash_map<const Value*, Value*> replace_;
  // share_functions: groups whose function later equal groups of the function invoke, by
  // GroupStructuralHash; and the members of those later groups until the end of the function.
  struct Shareable {
    std::vector<const Node*> members;
    std::vector<Value*> outputs;
    Function* function;
  };
  absl::flat_hash_map<size_t, std::vector<Shareable>> shareable_;
  absl::flat_hash_set<Function*> shared_functions_;  // invoked by more than one group
  std::vector<std::unique_ptr<Node>> shared_members_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Pass>> CreateFuseOpsPass(const FuseOpsOptions& options) {
  if (options.max_group_size < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fuse-ops: max-group-size must be at least 1, got %d", options.max_group_size));
  }
  return std::make_unique<FuseOpsPass>(options);
}

}  // namespace hetpass
