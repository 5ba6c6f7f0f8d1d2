// The explicit list of op families. Adding a family means adding a line here; there are no
// static registration constructors (their order is unspecified and they hide dependencies).
// mask_verification_test.cc checks every op listed by these families.
#include "passes/shape_funcs/op_registry.h"

#include "passes/support/status_macros.h"
#include "shape_funcs/algorithm.h"
#include "shape_funcs/dynamic.h"
#include "shape_funcs/elementwise.h"
#include "shape_funcs/memory.h"
#include "shape_funcs/image.h"
#include "shape_funcs/linalg.h"
#include "shape_funcs/nn.h"
#include "shape_funcs/random.h"
#include "shape_funcs/reduce.h"
#include "shape_funcs/scatter.h"
#include "shape_funcs/slice.h"
#include "shape_funcs/transform.h"
#include "shape_funcs/unique.h"
#include "shape_funcs/unpool.h"

namespace hetpass {

void RegisterAllOps(OpRegistry::Builder& builder) {
  RegisterElementwiseOps(builder);
  RegisterMemoryOps(builder);
  RegisterNnOps(builder);
  RegisterUnpoolOps(builder);
  RegisterLinalgOps(builder);
  RegisterTransformOps(builder);
  RegisterSliceOps(builder);
  RegisterScatterOps(builder);
  RegisterDynamicOps(builder);
  RegisterReduceOps(builder);
  RegisterAlgorithmOps(builder);
  RegisterUniqueOps(builder);
  RegisterImageOps(builder);
  RegisterRandomOps(builder);
}

// The registry of every built-in op (declared with the machinery in passes/ir/op_def.h).
const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* global = [] {
    Builder b;
    RegisterAllOps(b);
    auto reg = b.Build();
    HETPASS_CHECK(reg.ok(), "built-in op registry is inconsistent");
    return reg->release();
  }();
  return *global;
}

}  // namespace hetpass
