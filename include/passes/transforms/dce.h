// dce: removes bindings whose results are never used (all registered ops are pure).
#ifndef HETPASS_TRANSFORMS_DCE_H_
#define HETPASS_TRANSFORMS_DCE_H_

#include <memory>

#include "passes/pass/pass.h"

namespace hetpass {

struct DceOptions {
  static constexpr absl::string_view kName = "dce";
};

std::unique_ptr<Pass> CreateDcePass(const DceOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_DCE_H_
