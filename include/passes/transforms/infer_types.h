// infer-types: gives every value its type (dtype + symbolic shape) from the op registry's
// shape rules, keeping symbolic relations (dense of [n, 1024] by [512, 1024] is [n, 512]).
#ifndef HETPASS_TRANSFORMS_INFER_TYPES_H_
#define HETPASS_TRANSFORMS_INFER_TYPES_H_

#include <memory>

#include "passes/pass/pass.h"

namespace hetpass {

struct InferTypesOptions {
  static constexpr absl::string_view kName = "infer-types";
  // Maximum rounds of the loop-carried type fixpoint before carried dims become unknown.
  int max_loop_rounds = 8;
};

std::unique_ptr<Pass> CreateInferTypesPass(const InferTypesOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_INFER_TYPES_H_
