// Symbolic integer contents of small integer tensors (the shape subgraph: shape_of -> take ->
// concatenate -> dyn.reshape target), shared by infer-types and fold-constants (internal).
#ifndef HETPASS_SRC_SHAPE_FUNCS_SYMBOLIC_VALUES_H_
#define HETPASS_SRC_SHAPE_FUNCS_SYMBOLIC_VALUES_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "passes/ir/ir.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass {

// Tensors above this many elements never carry symbolic values (they are data, not shapes).
inline constexpr int64_t kMaxSymbolicElements = 64;

// Whether a value of type `t` may carry symbolic contents (row-major): 0-d/1-d integer tensors
// (shape values), booleans (comparisons of shape values, carried as 0/1 for where to read), and
// small integer tables with a static shape (torch's [n, 2] pads table, reshaped, flipped and
// transposed before Pad reads it). Rules that combine elements positionally (binary ops,
// concatenate, take, reduce) still require rank <= 1 themselves.
inline bool CarriesSymbolicValues(const Type& t) {
  return t.is_tensor() && (IsInteger(t.dtype()) || t.dtype() == DType::kBool) &&
         (t.rank() <= 1 || t.is_static());
}

// The contents of input `i` of a symbolic-value rule when it is a small integer table with a
// static shape (at most kMaxSymbolicElements elements): its shape and row-major values. For
// rules that move elements around (transpose, slices of rank > 1).
struct IntTable {
  std::vector<int64_t> shape;
  std::vector<DimExpr> values;
};
std::optional<IntTable> StaticIntTable(ShapeContext& ctx, int i);

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
  // contents of its small integer results. With `assumptions` (infer-types), small float
  // tensors that hold exact fractions of shape values are followed too (PropagateFraction), and
  // the exactness conditions that the integers they end in rely on are appended there.
  // Only integers over `checkable` symbols enter a fraction: the exactness condition is then
  // over symbols the VM binds before anything runs (the parameters'), never one it cannot check.
  void Propagate(const Node& node, std::vector<Assumption>* assumptions = nullptr,
                 const std::set<std::string>* checkable = nullptr);
  void Clear() {
    map_.clear();
    fractions_.clear();
  }

 private:
  // A float tensor holding num[i] / den exactly: torchvision's `ceil(float(h) / stride) *
  // stride` is Cast(int -> f32), Div, Ceil, Mul, Cast(f32 -> int), and followed through that
  // the padded size is `((h + 31)//32)*32` instead of a fresh symbol. `exact` lists the integers
  // that entered through a cast; the float holds them (and their quotients, for a correctly
  // rounded division) exactly while they are below 2^bits, which the cast back to an integer
  // assumes (the VM checks it).
  struct Fraction {
    std::vector<DimExpr> num;
    int64_t den = 1;
    int bits = 24;
    std::vector<DimExpr> exact;
  };
  void PropagateFraction(const Node& node, std::vector<Assumption>* assumptions,
                         const std::set<std::string>* checkable);

  absl::flat_hash_map<const Value*, std::vector<DimExpr>> map_;
  absl::flat_hash_map<const Value*, Fraction> fractions_;
};

}  // namespace hetpass

#endif  // HETPASS_SRC_SHAPE_FUNCS_SYMBOLIC_VALUES_H_
