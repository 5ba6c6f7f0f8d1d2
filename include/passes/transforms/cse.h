// cse: common subexpression elimination of pure bindings (op calls, constants, tuples,
// get_item), scoped so that a region may reuse a value of an enclosing block but never the
// other way round.
#ifndef HETPASS_TRANSFORMS_CSE_H_
#define HETPASS_TRANSFORMS_CSE_H_

#include <memory>

#include "passes/pass/pass.h"

namespace hetpass {

struct CseOptions {
  static constexpr absl::string_view kName = "cse";
};

std::unique_ptr<Pass> CreateCsePass(const CseOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_CSE_H_
