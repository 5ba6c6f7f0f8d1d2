// Host tensors: the data of IR constants, of shape-function inputs and of reference kernels.
// Storage is shared and treated as immutable once a tensor is placed in the IR, so copying a
// Tensor is cheap. Element access converts through int64/double for the generic code paths.
#ifndef HETPASS_IR_TENSOR_H_
#define HETPASS_IR_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/ir/dtype.h"
#include "passes/ir/type.h"

namespace hetpass {

class Tensor {
 public:
  Tensor();  // f32 scalar 0
  static Tensor Zeros(DType dtype, std::vector<int64_t> shape);
  // Bytes in little-endian element order; fails if the size does not match.
  static absl::StatusOr<Tensor> FromBytes(DType dtype, std::vector<int64_t> shape,
                                          absl::string_view bytes);
  // The same, taking the buffer over without a copy (an ONNX initializer's raw_data: a model's
  // weights are then held once, where they were parsed).
  static absl::StatusOr<Tensor> FromOwnedBytes(DType dtype, std::vector<int64_t> shape,
                                               std::string&& bytes);
  static Tensor FromInt64s(DType dtype, std::vector<int64_t> shape,
                           absl::Span<const int64_t> values);
  static Tensor FromDoubles(DType dtype, std::vector<int64_t> shape,
                            absl::Span<const double> values);
  static Tensor Scalar(DType dtype, double value);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }
  Type type() const;

  // Null once released (ReleaseIfUnshared).
  const uint8_t* data() const {
    return data_ ? reinterpret_cast<const uint8_t*>(data_->data()) : nullptr;
  }
  // Writable data; unshares the storage first (copy on write).
  uint8_t* mutable_data();
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data());
  }
  template <typename T>
  T* mutable_data_as() {
    return reinterpret_cast<T*>(mutable_data());
  }

  double GetDouble(int64_t i) const;
  int64_t GetInt64(int64_t i) const;
  void SetDouble(int64_t i, double v);
  void SetInt64(int64_t i, int64_t v);
  std::vector<int64_t> ToInt64s() const;
  std::vector<double> ToDoubles() const;
  // Same elements, new shape (element count must match).
  Tensor Reshaped(std::vector<int64_t> shape) const;

  // Bitwise equality of dtype, shape and data.
  bool operator==(const Tensor& o) const;
  bool operator!=(const Tensor& o) const { return !(*this == o); }
  size_t Hash() const;
  std::string DebugString(int max_elements = 8) const;

  // Frees the bytes when no other Tensor shares them, keeping dtype and shape; data() is null
  // afterwards and the elements must not be read. For a holder that has handed the values on in
  // another form: a VM whose kernels prepacked a weight drops the weight as stored (vm.cc,
  // "released constants"), so a model's weights are resident once. False (nothing changes)
  // when the bytes are shared, e.g. with the IR module the caller still holds.
  bool ReleaseIfUnshared();
  bool released() const { return data_ == nullptr; }

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  int64_t num_elements_ = 1;
  // The bytes, shared between copies (copy on write). A string so that a parsed buffer can be
  // adopted whole (FromOwnedBytes); its heap block is malloc-aligned like a vector's.
  std::shared_ptr<std::string> data_;
};

// Number of elements of a shape, or an error naming the problem (negative dim, overflow).
absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> shape);

}  // namespace hetpass

#endif  // HETPASS_IR_TENSOR_H_
