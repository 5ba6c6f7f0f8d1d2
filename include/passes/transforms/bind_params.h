// bind-params: turns function parameters that have values (model weights) into constants, so
// that weights passed as parameters and weights written as constants give the same IR and the
// same folding (the seed case: a silently disabled constant folding cost 1.65x).
#ifndef HETPASS_TRANSFORMS_BIND_PARAMS_H_
#define HETPASS_TRANSFORMS_BIND_PARAMS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/ir/tensor.h"
#include "passes/pass/pass.h"

namespace hetpass {

struct BindParamsOptions {
  static constexpr absl::string_view kName = "bind-params";
  // Function whose parameters are bound.
  std::string function = "main";
  // Values to bind, by parameter name. Empty: the function's own param_values() (attached by
  // an importer or by Function::param_values()).
  std::map<std::string, Tensor> params;
  // Bind only these names (empty: every parameter that has a value).
  std::vector<std::string> only;
};

std::unique_ptr<Pass> CreateBindParamsPass(const BindParamsOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_BIND_PARAMS_H_
