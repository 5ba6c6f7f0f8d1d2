// OpId: a typed name for every built-in op, generated from the op lists (elementwise_ops.def
// and ops.def). Code outside the op families (kernels, their providers, the baseline tables)
// identifies ops with OpIdOf(op) == OpId::kNnDense instead of comparing strings, so the op
// names appear only where ops are registered and imported; test/lint/op_names.py keeps it so.
// Passes should not need even this: they ask an op's role, pattern, masks and flags (OpDef).
#ifndef HETPASS_SHAPE_FUNCS_OP_IDS_H_
#define HETPASS_SHAPE_FUNCS_OP_IDS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "passes/ir/op_def.h"

namespace hetpass {

enum class OpId : uint16_t {
#define HETPASS_UNARY(id, name, cls, expr, doc) id,
#define HETPASS_BINARY(id, name, cls, expr, doc) id,
#define HETPASS_COMPARE(id, name, expr, doc) id,
#include "passes/shape_funcs/elementwise_ops.def"
#define HETPASS_OP(id, name) id,
#include "passes/shape_funcs/ops.def"
#undef HETPASS_OP
  kUnknown,  // an op outside the built-in lists (a test registry's)
};

// The op's id, by its registered name (kUnknown for ops of other registries).
OpId OpIdOf(const OpDef& op);
// The registry name of a built-in op ("" for kUnknown).
absl::string_view OpIdName(OpId id);
// All built-in ids, in list order (kUnknown excluded).
absl::Span<const OpId> AllOpIds();

// What the elementwise list says about an op: its arity and dtype class.
enum class ElementwiseKind : uint8_t { kUnary, kBinary, kCompare };
enum class ElementwiseDTypes : uint8_t { kNumeric, kFloat, kInteger };
struct ElementwiseInfo {
  OpId id;
  ElementwiseKind kind;
  ElementwiseDTypes dtypes;  // compare ops: kNumeric
  int arity() const { return kind == ElementwiseKind::kUnary ? 1 : 2; }
};
// nullptr for ops not in elementwise_ops.def.
const ElementwiseInfo* ElementwiseInfoOf(OpId id);

}  // namespace hetpass

#endif  // HETPASS_SHAPE_FUNCS_OP_IDS_H_
