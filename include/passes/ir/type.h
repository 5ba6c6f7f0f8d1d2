// Value types: tensors (dtype + symbolic shape), tuples, sequences and optionals. A
// default-constructed Type is "unset": the value has not been typed yet (infer-types fills it in).
// A Type is immutable once made: its dims and fields live in one shared block, so copying a type
// (every result that takes its operand's type, every vector of operand types a shape function
// gets) is a reference count, not an allocation and a copy of each dim, and equal copies compare
// by pointer first. At bench/scale's 100k ops this took infer-types from 63 to 48 ms, and a
// Type from 56 bytes to 24 (a Value holds one).
// A sequence (`seq<f32[?, 3]>`) holds a run-time number of values of one element type (ONNX
// sequences); an optional (`opt<T>`) holds one value of type T or none. Both are containers the
// VM manages (builtins.def), never kernel operands; their one type parameter is fields()[0].
#ifndef HETPASS_IR_TYPE_H_
#define HETPASS_IR_TYPE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "passes/ir/dim_expr.h"
#include "passes/ir/dtype.h"

namespace hetpass {

class Type {
 public:
  enum class Kind { kUnset, kTensor, kTuple, kStorage, kSequence, kOptional };

  Type() = default;
  static Type Tensor(DType dtype, std::vector<DimExpr> shape);
  static Type Tuple(std::vector<Type> fields);
  // A block of device memory of `bytes` (an expression of the symbols, or `?` when only a
  // shape function knows it): what memory.alloc_storage returns (manifest-alloc).
  static Type Storage(DimExpr bytes);
  // `seq<elem>` and `opt<inner>`.
  static Type Sequence(Type elem);
  static Type Optional(Type inner);

  Kind kind() const { return kind_; }
  bool is_unset() const { return kind_ == Kind::kUnset; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_storage() const { return kind_ == Kind::kStorage; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_optional() const { return kind_ == Kind::kOptional; }
  // Sequence / optional accessor: the element (contained) type; unset when not known yet
  // (`seq<?>`: an ONNX SequenceEmpty, whose rank nothing says), which joins with any type.
  const Type& element() const { return fields()[0]; }
  // Storage accessor.
  const DimExpr& storage_bytes() const { return shape()[0]; }

  // Tensor accessors.
  DType dtype() const { return dtype_; }
  const std::vector<DimExpr>& shape() const { return rep_ != nullptr ? rep_->shape : kNoDims; }
  int rank() const { return static_cast<int>(shape().size()); }
  bool is_static() const;  // every dim a constant (tuples: every field static)
  // Number of elements as an expression of the symbols (product of dims).
  DimExpr NumElements() const;
  DimExpr NumBytes() const;  // tensors only

  // Tuple accessors.
  const std::vector<Type>& fields() const { return rep_ != nullptr ? rep_->fields : kNoFields; }

  bool operator==(const Type& o) const;
  bool operator!=(const Type& o) const { return !(*this == o); }
  size_t Hash() const;
  template <typename H>
  friend H AbslHashValue(H h, const Type& t) {
    return H::combine(std::move(h), t.Hash());
  }
  // `f32[n, 1024]`, `(f32[2], i64[2])`, `storage[n*4096]`, `<unset>`.
  std::string ToString() const;

 private:
  struct Rep {
    std::vector<DimExpr> shape;
    std::vector<Type> fields;
  };
  static const std::vector<DimExpr> kNoDims;
  static const std::vector<Type> kNoFields;
  static Type Make(Kind kind, DType dtype, std::vector<DimExpr> shape, std::vector<Type> fields);

  Kind kind_ = Kind::kUnset;
  DType dtype_ = DType::kF32;
  // Null when there are neither dims nor fields (unset types, scalars).
  std::shared_ptr<const Rep> rep_;
};

// Merges a declared type with an inferred one: same kind, dtype and rank, and each dim equal or
// one side unknown (the more specific wins). nullopt when they are incompatible.
std::optional<Type> RefineType(const Type& declared, const Type& inferred);

// Joins two types seen on different paths (if branches, loop iterations): dims that differ
// become unknown. nullopt when dtype, rank or kind differ.
std::optional<Type> JoinTypes(const Type& a, const Type& b);

// The structure both share (kind, dtype, rank, fields) with each pair of dims merged by
// `merge` (nullopt from it, or a structural difference: nullopt). RefineType and JoinTypes
// are two such merges; infer-types' declared-type merge is a third.
std::optional<Type> MergeTypes(
    const Type& a, const Type& b,
    const std::function<std::optional<DimExpr>(const DimExpr&, const DimExpr&)>& merge);

}  // namespace hetpass

#endif  // HETPASS_IR_TYPE_H_
