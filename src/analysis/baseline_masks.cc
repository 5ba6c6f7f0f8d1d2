// Baseline dependence masks (see the header): two tables and the pass that applies one.
//
// single-flag  For every op that reads any input's values (OpDef::needs_values), every input
//              gains `value`. That is how Relay's VM treated an op registered with a single
//              `data_dependent = True`: ManifestAlloc copied every input to the host and the
//              shape function received the tensors.
// relay        One row per op of ours whose Relay counterpart's shape function reads values:
//              Relay's registered flags, per input, with the file and the TVM commit they were
//              read from. An op of ours not in the table either reads no values or has no
//              Relay counterpart that does (its Relay flag is False): its mask stays ours.
//
// Data-dependent ops with an on-device counter (argwhere, non_max_suppression): a baseline
// keeps the counter only where the baseline system also produced the count on the device.
//
// The pass rebinds every op call of the module to the baseline registry's OpDef of the same
// name. It is meant to run after plan-devices and fuse-ops: placement and fusion were decided
// with our masks, and manifest-alloc, the copy ledger, the VM's shape functions and the compile
// engine then see the baseline's masks, so the baseline's copies are those of the same program.
#include "passes/analysis/baseline_masks.h"

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_ids.h"

namespace hetpass {
namespace {

// One row of the Relay table: our op, Relay's op, Relay's flag per input of ours, whether the
// on-device count survives, and where TVM registers it.
struct RelayRow {
  OpId op;
  const char* relay_op;
  std::vector<bool> data_dependent;  // per input of our op, in our order
  bool keep_counter;
  const char* registered;  // "python/tvm/relay/op/dyn/_transform.py: [False, True]"
};

// Read from apache/tvm at commit kTvmCommit (a revision before Relay's removal; the
// dyn/_transform.py rows are unchanged since per-input flags landed). How Relay uses a flag:
// src/relay/backend/te_compiler_cache.cc (`data_dependents_per_input_`: a single bool True is
// widened to every input) and src/relay/transforms/memory_alloc.cc (a True input is copied to the
// host with device_copy, a False one passes `shape_of`). The commit is one on apache/tvm's main
// branch (an earlier citation, 07fd902c, was a pull request's merge ref, which a reader cannot
// reach from main; 7983ef2f has identical content in these files).
constexpr char kTvmCommit[] = "7983ef2f";

const std::vector<RelayRow>& RelayTable() {
  static const std::vector<RelayRow>* rows = new std::vector<RelayRow>{
      // python/tvm/relay/op/dyn/_transform.py: per-input flags.
      {OpId::kDynStridedSlice, "dyn.strided_slice", {false, true, true, true}, true,
       "dyn/_transform.py: register_shape_func(\"dyn.strided_slice\", [False, True, True, True])"},
      {OpId::kDynReshape, "dyn.reshape", {false, true}, true,
       "dyn/_transform.py: register_shape_func(\"dyn.reshape\", [False, True])"},
      {OpId::kDynSqueeze, "dyn.squeeze", {false, true}, true,
       "dyn/_transform.py: register_shape_func(\"dyn.squeeze\", [False, True])"},
      // Relay has no dyn.unsqueeze: ONNX Unsqueeze with run-time axes becomes dyn.expand_dims.
      {OpId::kDynUnsqueeze, "dyn.expand_dims", {true, true}, true,
       "dyn/_transform.py: register_shape_func(\"dyn.expand_dims\", [True, True])"},
      // A single True: every input reaches the shape function as a host tensor.
      {OpId::kDynTile, "dyn.tile", {true, true}, true,
       "dyn/_transform.py: register_shape_func(\"dyn.tile\", True)"},
      {OpId::kDynBroadcastTo, "dyn.broadcast_to", {true, true}, true,
       "dyn/_tensor.py: register_shape_func(\"dyn.broadcast_to\", True, full_shape_func)"},
      {OpId::kDynFull, "dyn.full", {true, true}, true,
       "dyn/_tensor.py: register_shape_func(\"dyn.full\", True, full_shape_func)"},
      {OpId::kDynZeros, "dyn.zeros", {true}, true,
       "dyn/_tensor.py: register_shape_func(\"dyn.zeros\", True, ...)"},
      {OpId::kDynOnes, "dyn.ones", {true}, true,
       "dyn/_tensor.py: register_shape_func(\"dyn.ones\", True, ...)"},
      {OpId::kDynTopk, "dyn.topk", {true, true}, true,
       "dyn/_algorithm.py: register_shape_func(\"dyn.topk\", True)"},
      {OpId::kDynNnPad, "dyn.nn.pad", {true, true, true}, true,
       "dyn/nn/_nn.py: register_shape_func(\"dyn.nn.pad\", True)"},
      {OpId::kDynImageResize2d, "dyn.image.resize2d", {true, true}, true,
       "dyn/image/_image.py: register_shape_func(\"dyn.image.resize2d\", True)"},
      {OpId::kArange, "arange", {true, true, true}, true,
       "_tensor.py: register_shape_func(\"arange\", True)"},
      // Relay computes argwhere's row count in its shape function, on the host, from the
      // condition itself: no on-device count, the whole condition crosses.
      {OpId::kArgwhere, "argwhere", {true}, false,
       "_transform.py: register_shape_func(\"argwhere\", True)"},
      // non_max_suppression has no row: Relay's ONNX frontend emits
      // vision.all_class_non_max_suppression (shape function False: a padded output) and a
      // dyn.strided_slice by its on-device count, so only the count crosses, as ours.
  };
  return *rows;
}

void EditSingleFlag(OpDef& def) {
  if (!def.needs_values()) return;
  // Before per-input flags Relay had no on-device counts either (same rows as relay).
  for (const RelayRow& row : RelayTable()) {
    if (OpIdOf(def) == row.op && !row.keep_counter) OpRegistry::SetShapeCounter(def, "");
  }
  for (size_t i = 0; i < def.inputs().size(); ++i) {
    // A data-dependent input reached the shape function as the tensor: shape and contents.
    OpRegistry::SetDep(def, static_cast<int>(i), JoinDeps(def.inputs()[i].dep, InputDep::kValue));
  }
}

void EditRelay(OpDef& def) {
  for (const RelayRow& row : RelayTable()) {
    if (OpIdOf(def) != row.op) continue;
    for (size_t i = 0; i < def.inputs().size() && i < row.data_dependent.size(); ++i) {
      if (row.data_dependent[i]) {
        OpRegistry::SetDep(def, static_cast<int>(i),
                           JoinDeps(def.inputs()[i].dep, InputDep::kValue));
      } else if (NeedsValue(def.inputs()[i].dep)) {
        // Relay passes only the shape: the input loses its value bit.
        OpRegistry::SetDep(def, static_cast<int>(i),
                           NeedsShape(def.inputs()[i].dep) ? InputDep::kShape : InputDep::kNone);
      }
    }
    if (!row.keep_counter) OpRegistry::SetShapeCounter(def, "");
    return;
  }
}

std::string MaskText(const OpDef& def) {
  std::vector<std::string> parts;
  for (const InputSpec& in : def.inputs()) {
    parts.push_back(absl::StrCat(in.name, ": ", InputDepName(in.dep)));
  }
  return absl::StrJoin(parts, ", ");
}

// Relay types have no data-dependent symbols: a dim a data-dependent op produced is `Any`, and
// every op downstream of it runs a shape function. infer-types names such dims (`dynN`, bound
// at run time); the baselines forget those names again, so their shape functions, and the
// copies those cause, are Relay's. The symbols kept are those of the parameters of the
// functions that are not primitives (what the caller binds).
bool ForgetDataSymbols(Module& module) {
  std::set<std::string> keep;
  for (const auto& f : module.functions()) {
    if (IsPrimitive(*f)) continue;
    for (const auto& p : f->body().params()) {
      if (p->type().is_tensor()) {
        for (const DimExpr& d : p->type().shape()) d.CollectSymbols(&keep);
      }
    }
  }
  bool changed = false;
  auto forget = [&](const Type& t) -> std::optional<Type> {
    if (!t.is_tensor()) return std::nullopt;
    std::set<std::string> syms;
    for (const DimExpr& d : t.shape()) d.CollectSymbols(&syms);
    absl::flat_hash_map<std::string, DimExpr> unknown;
    for (const std::string& s : syms) {
      if (!keep.contains(s)) unknown[s] = DimExpr::Unknown();
    }
    if (unknown.empty()) return std::nullopt;
    std::vector<DimExpr> dims;
    for (const DimExpr& d : t.shape()) dims.push_back(d.Substitute(unknown));
    changed = true;
    return Type::Tensor(t.dtype(), std::move(dims));
  };
  auto value = [&](Value* v) {
    if (auto t = forget(v->type())) v->set_type(*t);
  };
  std::function<void(Block&)> block = [&](Block& b) {
    for (const auto& p : b.params()) value(p.get());
    for (const auto& n : b.nodes()) {
      for (const auto& r : n->results()) value(r.get());
      for (int i = 0; i < n->num_regions(); ++i) block(*n->region(i));
    }
  };
  for (const auto& f : module.functions()) {
    block(f->body());
    std::vector<Type> results = f->result_types();
    for (Type& t : results) {
      if (auto u = forget(t)) t = *u;
    }
    f->set_result_types(std::move(results));
  }
  return changed;
}

class BaselineMasksPass final : public Pass {
 public:
  explicit BaselineMasksPass(BaselineMasksPassOptions o) : options_(o) {}
  absl::string_view name() const override { return BaselineMasksPassOptions::kName; }

  absl::StatusOr<bool> Run(Module& module) override {
    const OpRegistry& baseline = BaselineRegistry(options_.table);
    bool changed = false;
    absl::Status status = absl::OkStatus();
    for (const auto& f : module.functions()) {
      WalkNodes(f->body(), [&](Node& n) {
        if (n.kind() != NodeKind::kCall || n.op() == nullptr || !status.ok()) return;
        const OpDef* op = baseline.Find(n.op()->name());
        if (op == nullptr) {
          status = absl::InvalidArgumentError(absl::StrCat(
              NodeContext(&module, n), "op ", n.op()->name(), " is not in the ",
              BaselineMasksName(options_.table), " baseline registry"));
          return;
        }
        changed |= op != n.op();
        n.set_op(op);
      });
    }
    if (!status.ok()) return status;
    changed |= ForgetDataSymbols(module);
    return changed;
  }

 private:
  BaselineMasksPassOptions options_;
};

}  // namespace

absl::string_view BaselineMasksName(BaselineMasks b) {
  switch (b) {
    case BaselineMasks::kSingleFlag: return "single-flag";
    case BaselineMasks::kRelay: return "relay";
  }
  return "<bad baseline>";
}

std::optional<BaselineMasks> ParseBaselineMasks(absl::string_view name) {
  for (BaselineMasks b : kAllBaselineMasks) {
    if (name == BaselineMasksName(b)) return b;
  }
  return std::nullopt;
}

const OpRegistry& BaselineRegistry(BaselineMasks b) {
  static const OpRegistry* single_flag = OpRegistry::Global().CloneWith(EditSingleFlag).release();
  static const OpRegistry* relay = OpRegistry::Global().CloneWith(EditRelay).release();
  return b == BaselineMasks::kSingleFlag ? *single_flag : *relay;
}

std::string DescribeBaseline(BaselineMasks b) {
  const OpRegistry& ours = OpRegistry::Global();
  const OpRegistry& base = BaselineRegistry(b);
  std::string out = absl::StrFormat("# %s baseline: ops whose masks differ from hetpass's\n",
                                    BaselineMasksName(b));
  for (const auto& def : base.ops()) {
    const OpDef* mine = ours.Find(def->name());
    std::string counter;
    if (mine->shape_counter() != def->shape_counter()) {
      counter = absl::StrCat("; on-device count ", mine->shape_counter(), " dropped");
    }
    if (MaskText(*mine) == MaskText(*def) && counter.empty()) continue;
    absl::StrAppendFormat(&out, "%-22s ours (%s) -> %s (%s)%s", def->name(), MaskText(*mine),
                          BaselineMasksName(b), MaskText(*def), counter);
    if (b == BaselineMasks::kRelay) {
      for (const RelayRow& row : RelayTable()) {
        if (OpIdOf(*def) == row.op) {
          absl::StrAppendFormat(&out, "  [Relay %s: %s @ apache/tvm %s]", row.relay_op,
                                row.registered, kTvmCommit);
        }
      }
    }
    out += "\n";
  }
  return out;
}

std::unique_ptr<Pass> CreateBaselineMasksPass(const BaselineMasksPassOptions& options) {
  return std::make_unique<BaselineMasksPass>(options);
}

std::string PipelineWithBaseline(absl::string_view pipeline, BaselineMasks b) {
  // Split at top-level commas (options in braces may hold commas).
  std::vector<std::string> passes;
  std::string current;
  int depth = 0;
  for (char c : pipeline) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      passes.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) passes.push_back(current);
  const std::string swap = absl::StrCat(BaselineMasksPassOptions::kName, "{table=",
                                        BaselineMasksName(b), "}");
  for (size_t i = 0; i < passes.size(); ++i) {
    const std::string name = passes[i].substr(0, passes[i].find('{'));
    if (name == "manifest-alloc") {
      passes.insert(passes.begin() + static_cast<std::ptrdiff_t>(i), swap);
      return absl::StrJoin(passes, ",");
    }
  }
  passes.push_back(swap);
  return absl::StrJoin(passes, ",");
}

}  // namespace hetpass
