// Symbolic integer contents of small integer tensors (the shape subgraph: shape_of -> take ->
// concatenate -> dyn.reshape target), shared by infer-types and fold-constants (internal).
#ifndef HETPASS_SRC_SHAPE_FUNCS_SYMBOLIC_VALUES_H_
#define HETPASS_SRC_SHAPE_FUNCS_SYMBOLIC_VALUES_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

// Tensors above this many elements never carry symbolic values (they are data, not shapes).
inline constexpr int64_t kMaxSymbolicElements = 64;

// Whether a value of type `t` may carry symbolic contents: 0-d/1-d integer tensors (shape
// values) and booleans (comparisons of shape values, carried as 0/1 for where to read).
inline bool CarriesSymbolicValues(const Type& t) {
  return t.is_tensor() && (IsInteger(t.dtype()) || t.dtype() == DType::kBool) && t.rank() <= 1;
}

// The data of a value defined by a constant binding, else nullptr.
const Tensor* ConstantData(const Value* v);

class SymbolicValues {
 public:
  const std::vector<DimExpr>* Find(const Value* v) const;
  // What a shape rule sees of each operand of `node`: type, constant data, symbolic contents.
  // The inputs of `node` for a rule; with `through_casts`, a float operand cast from integers
  // with symbolic values carries them (FindThroughIntToFloatCast): for shape rules only.
  std::vector<ShapeInput> InputsOf(const Node& node, bool through_casts = false) const;
  const std::vector<DimExpr>* FindThroughIntToFloatCast(const Value* v) const;
  // Runs the op's symbolic-value rule on `node` (typed results required) and records the
  // contents of its small integer results.
  void Propagate(const Node& node);
  void Clear() { map_.clear(); }

 private:
  absl::flat_hash_map<const Value*, std::vector<DimExpr>> map_;
};

}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_SYMBOLIC_VALUES_H_
