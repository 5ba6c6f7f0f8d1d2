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
  // Gives every unknown (`?`) dim of an op's result a fresh symbol (`dyn1`, `dyn2`, ...): the
  // dim depends on data (argwhere's count, a data-dependent reshape target) but, once the value
  // exists at run time, it is one number, and everything computed from that value can be typed
  // with it (TVM Relax's data-dependent shape variables). manifest-alloc binds such a symbol at
  // the allocation that first has it as a plain dim, so consumers need no shape function.
  bool name_data_dims = true;
};

std::unique_ptr<Pass> CreateInferTypesPass(const InferTypesOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_INFER_TYPES_H_
