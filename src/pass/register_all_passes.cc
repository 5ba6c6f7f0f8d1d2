// The explicit list of passes available to text pipelines. A pass added to the library is
// added here too; there are no static registration constructors.
#include "passes/analysis/baseline_masks.h"
#include "passes/device_planner/plan_devices.h"
#include "passes/manifest_alloc/manifest_alloc.h"
#include "passes/memory_planner/plan_memory.h"
#include "passes/pass/pass_registry.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/bind_params.h"
#include "passes/transforms/block_conv_layout.h"
#include "passes/transforms/cse.h"
#include "passes/transforms/dce.h"
#include "passes/transforms/fold_constants.h"
#include "passes/transforms/fuse_ops.h"
#include "passes/transforms/infer_types.h"
#include "passes/transforms/loop_append_to_scan.h"

namespace hetpass {

void RegisterAllPasses(PassRegistry& r) {
  r.Register(PassInfo{
      std::string(InferTypesOptions::kName),
      "infer every value's type with symbolic shapes from the op registry's shape rules",
      {"max-loop-rounds: extra rounds allowed for loop-carried types (8)",
       "name-data-dims: give each unknown result dim a fresh symbol bound at run time (true)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"max-loop-rounds", "name-data-dims"}));
        InferTypesOptions opts;
        ASSIGN_OR_RETURN(int64_t rounds, o.GetInt("max-loop-rounds", opts.max_loop_rounds));
        opts.max_loop_rounds = static_cast<int>(rounds);
        ASSIGN_OR_RETURN(opts.name_data_dims, o.GetBool("name-data-dims", opts.name_data_dims));
        return CreateInferTypesPass(opts);
      }});
  r.Register(PassInfo{
      std::string(BindParamsOptions::kName),
      "turn parameters that have values (weights) into constants",
      {"function: the function whose parameters are bound (main)",
       "names: ':'-separated parameter names to bind (all that have values)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"function", "names"}));
        BindParamsOptions opts;
        opts.function = o.GetString("function", opts.function);
        opts.only = o.GetList("names");
        return CreateBindParamsPass(opts);
      }});
  r.Register(PassInfo{
      std::string(FoldConstantsOptions::kName),
      "evaluate bindings whose inputs are constants or whose integer results are known from "
      "shapes",
      {"max-bytes: largest result folded (67108864)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"max-bytes"}));
        FoldConstantsOptions opts;
        ASSIGN_OR_RETURN(opts.max_bytes, o.GetInt("max-bytes", opts.max_bytes));
        return CreateFoldConstantsPass(opts);
      }});
  r.Register(PassInfo{
      std::string(PlanDevicesOptions::kName),
      "place every value on the host or the accelerator, minimising bytes copied; insert "
      "device_copy at every boundary",
      {"target: cpu, sim or cuda (sim)", "inputs: host or target (host)",
       "outputs: host or target (host)", "symbol-value: size every symbol takes for costs (64)",
       "function: the function to plan (main)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"target", "inputs", "outputs", "symbol-value", "function"}));
        PlanDevicesOptions opts;
        const std::string target = o.GetString("target", "sim");
        const std::optional<DeviceKind> d = ParseDevice(target);
        if (!d) {
          return absl::InvalidArgumentError(absl::StrCat(
              "option 'target' of pass 'plan-devices' must be cpu, sim or cuda, got '", target, "'"));
        }
        opts.target = *d;
        for (const char* key : {"inputs", "outputs"}) {
          const std::string where = o.GetString(key, "host");
          if (where != "host" && where != "target") {
            return absl::InvalidArgumentError(absl::StrCat("option '", key,
                                                           "' of pass 'plan-devices' must be host or "
                                                           "target, got '", where, "'"));
          }
          (std::string(key) == "inputs" ? opts.inputs_on_host : opts.outputs_on_host) = where == "host";
        }
        ASSIGN_OR_RETURN(opts.symbol_value, o.GetInt("symbol-value", opts.symbol_value));
        if (opts.symbol_value < 1) {
          return absl::InvalidArgumentError("option 'symbol-value' of pass 'plan-devices' must be >= 1");
        }
        opts.function = o.GetString("function", opts.function);
        return CreatePlanDevicesPass(opts);
      }});
  r.Register(PassInfo{
      std::string(ManifestAllocOptions::kName),
      "make memory explicit: storage and tensor allocation, shape functions fed by their masks, "
      "copies for host-read values, kernels with explicit outputs",
      {"function: the function to rewrite (main)", "alignment: storage alignment in bytes (64)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"function", "alignment"}));
        ManifestAllocOptions opts;
        opts.function = o.GetString("function", opts.function);
        ASSIGN_OR_RETURN(opts.alignment, o.GetInt("alignment", opts.alignment));
        return CreateManifestAllocPass(opts);
      }});
  r.Register(PassInfo{
      std::string(PlanMemoryOptions::kName),
      "after manifest-alloc: share storage between tensors whose lifetimes do not overlap "
      "(sizes compared symbolically), write pointwise kernels' outputs over dying inputs, and "
      "insert memory.kill after each value's last use",
      {"function: the function to plan (main)", "share: share storage (true)",
       "in-place: outputs over dying inputs (true)", "kill: insert kill points (true)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"function", "share", "in-place", "kill"}));
        PlanMemoryOptions opts;
        opts.function = o.GetString("function", opts.function);
        ASSIGN_OR_RETURN(opts.share, o.GetBool("share", opts.share));
        ASSIGN_OR_RETURN(opts.in_place, o.GetBool("in-place", opts.in_place));
        ASSIGN_OR_RETURN(opts.kill, o.GetBool("kill", opts.kill));
        return CreatePlanMemoryPass(opts);
      }});
  r.Register(PassInfo{
      std::string(BaselineMasksPassOptions::kName),
      "for comparisons only: give every op another system's dependence masks (after "
      "plan-devices and fuse-ops, before manifest-alloc: same placement and fusion as ours)",
      {"table: single-flag or relay (relay)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"table"}));
        BaselineMasksPassOptions opts;
        const std::string table = o.GetString("table", BaselineMasksName(opts.table));
        const std::optional<BaselineMasks> b = ParseBaselineMasks(table);
        if (!b) {
          return absl::InvalidArgumentError(absl::StrCat(
              "option 'table' of pass 'baseline-masks' must be single-flag or relay, got '", table,
              "'"));
        }
        opts.table = *b;
        return CreateBaselineMasksPass(opts);
      }});
  r.Register(PassInfo{std::string(LoopAppendToScanOptions::kName),
                      "a loop appending one row per iteration to a carried tensor (concatenate) "
                      "builds a scan output instead, concatenated once after the loop",
                      {},
                      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
                        RETURN_IF_ERROR(o.CheckKnown({}));
                        return CreateLoopAppendToScanPass();
                      }});
  r.Register(
      PassInfo{std::string(BlockConvLayoutOptions::kName),
               "compute convolution chains (with their biases and elementwise ops) in the blocked "
               "channel layout NCHW<b>c, with layout_transform at the chain's edges",
               {"block: channels per block (16)"},
               [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
                 RETURN_IF_ERROR(o.CheckKnown({"block"}));
                 BlockConvLayoutOptions opts;
                 ASSIGN_OR_RETURN(opts.block, o.GetInt("block", opts.block));
                 return CreateBlockConvLayoutPass(opts);
               }});
  r.Register(PassInfo{std::string(DceOptions::kName), "remove bindings whose results are unused",
                      {},
                      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
                        RETURN_IF_ERROR(o.CheckKnown({}));
                        return CreateDcePass();
                      }});
  r.Register(PassInfo{std::string(CseOptions::kName),
                      "merge identical pure bindings (scoped by region)",
                      {},
                      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
                        RETURN_IF_ERROR(o.CheckKnown({}));
                        return CreateCsePass();
                      }});
  r.Register(PassInfo{
      std::string(FuseOpsOptions::kName),
      "group op calls into primitive functions called by invoke (elementwise/broadcast/"
      "injective into producers, dense/conv2d absorb following elementwise ops)",
      {"max-group-size: most op calls in one primitive function (256)",
       "share-functions: structurally equal groups of a function invoke one primitive function "
       "(true)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"max-group-size", "share-functions"}));
        FuseOpsOptions opts;
        ASSIGN_OR_RETURN(opts.max_group_size, o.GetInt("max-group-size", opts.max_group_size));
        ASSIGN_OR_RETURN(opts.share_functions, o.GetBool("share-functions", opts.share_functions));
        return CreateFuseOpsPass(opts);
      }});
}

}  // namespace hetpass
