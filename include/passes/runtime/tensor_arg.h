// TensorArg: how the runtime hands a tensor to a kernel (kernel.h's calling convention): a
// dense row-major buffer with its dtype and concrete shape. Not owning. It lives in the
// runtime layer because NDArray makes them and kernels (one layer up) read them.
#ifndef HETPASS_RUNTIME_TENSOR_ARG_H_
#define HETPASS_RUNTIME_TENSOR_ARG_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"
#include "passes/ir/dtype.h"

namespace hetpass {

// A dense row-major tensor handed to a kernel. Not owning.
struct TensorArg {
  void* data = nullptr;
  DType dtype = DType::kF32;
  absl::Span<const int64_t> shape;

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace hetpass

#endif  // HETPASS_RUNTIME_TENSOR_ARG_H_
