// Baseline dependence masks: what other systems copy, for comparisons only.
//
// hetpass's claim is a number of device-to-host copies; a number means something only next to
// the same program compiled the way others do it. Two named baselines, never one nameless one:
//
//   single-flag  every input of an op that reads any input's values is `value` (TVM's Relay VM
//                before per-input flags: one `data_dependent` flag per op)
//   relay        Relay's current per-op, per-input table (`register_shape_func(op, [False, True,
//                ...])`), each row citing the TVM source that registers it (baseline_masks.cc)
//
// Both live outside the op registry's real masks: a baseline is a clone of the registry whose
// masks (and, where the baseline has no on-device count for a data-dependent op, counters) are
// edited. The `baseline-masks{table=...}` pass swaps every op of a module to that clone; it
// runs after plan-devices and fuse-ops and before manifest-alloc, so a baseline's copies are
// computed with the same placement and fusion as ours: only the masks differ, and a figure
// cannot move with our fusion choices. It also forgets the data-dependent symbols infer-types
// named (`dynN` back to `?`): Relay types have none, so every op downstream of a
// data-dependent one runs a shape function there, as in Relay.
#ifndef HETPASS_ANALYSIS_BASELINE_MASKS_H_
#define HETPASS_ANALYSIS_BASELINE_MASKS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "passes/pass/pass.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

enum class BaselineMasks : uint8_t { kSingleFlag, kRelay };
inline constexpr BaselineMasks kAllBaselineMasks[] = {BaselineMasks::kSingleFlag,
                                                      BaselineMasks::kRelay};
absl::string_view BaselineMasksName(BaselineMasks b);  // "single-flag", "relay"
std::optional<BaselineMasks> ParseBaselineMasks(absl::string_view name);

// The registry with the baseline's masks: a clone of OpRegistry::Global(), built once.
const OpRegistry& BaselineRegistry(BaselineMasks b);

// One line per op whose baseline mask differs from ours: "dyn.topk  data: shape -> shape+value,
// k: value  (relay: dyn.topk [True]; python/tvm/relay/op/dyn/_algorithm.py)". For docs and
// `hetpass-opt --list-baseline=...`.
std::string DescribeBaseline(BaselineMasks b);

struct BaselineMasksPassOptions {
  static constexpr absl::string_view kName = "baseline-masks";
  BaselineMasks table = BaselineMasks::kRelay;
};

// Rebinds every op call of the module (primitive functions included) to
// BaselineRegistry(options.table). Fails on an op the baseline registry lacks.
std::unique_ptr<Pass> CreateBaselineMasksPass(const BaselineMasksPassOptions& options);

// `pipeline` with `baseline-masks{table=b}` inserted before its first manifest-alloc (or
// appended when it has none, so the ledger's implied copies use the baseline's masks).
std::string PipelineWithBaseline(absl::string_view pipeline, BaselineMasks b);

}  // namespace hetpass

#endif  // HETPASS_ANALYSIS_BASELINE_MASKS_H_
