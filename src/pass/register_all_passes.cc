// The explicit list of passes available to text pipelines. A pass added to the library is
// added here too; there are no static registration constructors.
#include "passes/pass/pass_registry.h"
#include "passes/support/status_macros.h"
#include "passes/transforms/bind_params.h"
#include "passes/transforms/cse.h"
#include "passes/transforms/dce.h"
#include "passes/transforms/fold_constants.h"
#include "passes/transforms/infer_types.h"

namespace hetpass {

void RegisterAllPasses(PassRegistry& r) {
  r.Register(PassInfo{
      std::string(InferTypesOptions::kName),
      "infer every value's type with symbolic shapes from the op registry's shape rules",
      {"max-loop-rounds: extra rounds allowed for loop-carried types (8)"},
      [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
        RETURN_IF_ERROR(o.CheckKnown({"max-loop-rounds"}));
        InferTypesOptions opts;
        ASSIGN_OR_RETURN(int64_t rounds, o.GetInt("max-loop-rounds", opts.max_loop_rounds));
        opts.max_loop_rounds = static_cast<int>(rounds);
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
}

}  // namespace hetpass
