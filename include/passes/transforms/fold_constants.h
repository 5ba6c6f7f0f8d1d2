// fold-constants: evaluates op calls whose inputs are all constants with the registry's
// reference kernels, and integer values known from shapes (shape_of of a static tensor and the
// arithmetic on it) with the ops' symbolic-value rules. Dead producers are left for dce.
#ifndef HETPASS_TRANSFORMS_FOLD_CONSTANTS_H_
#define HETPASS_TRANSFORMS_FOLD_CONSTANTS_H_

#include <cstdint>
#include <memory>

#include "passes/pass/pass.h"

namespace hetpass {

struct FoldConstantsOptions {
  static constexpr absl::string_view kName = "fold-constants";
  // Results larger than this are not folded (keeps huge broadcasts out of the binary).
  int64_t max_bytes = int64_t{64} << 20;
};

std::unique_ptr<Pass> CreateFoldConstantsPass(const FoldConstantsOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_FOLD_CONSTANTS_H_
