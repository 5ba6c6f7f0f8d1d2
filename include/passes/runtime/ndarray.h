// Run-time tensors: a view (dtype, shape, byte offset) of device storage.
//
// Storage comes from a PoolingAllocator (returned to it when the last reference goes away) or
// wraps memory owned by someone else (a host tensor handed in by the caller: no copy). Shapes
// are inline for rank <= 6 so creating a tensor on the hot path does not touch the heap beyond
// the storage's control block.
#ifndef HETPASS_RUNTIME_NDARRAY_H_
#define HETPASS_RUNTIME_NDARRAY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "passes/ir/dtype.h"
#include "passes/ir/tensor.h"
#include "passes/runtime/device.h"
#include "passes/runtime/tensor_arg.h"

namespace hetpass::runtime {

using Shape = absl::InlinedVector<int64_t, 6>;

class Storage {
 public:
  // Pooled: released to `pool` on destruction.
  Storage(PoolingAllocator* pool, PoolingAllocator::Block block);
  // External: `data` stays valid while `keepalive` lives; never freed by the runtime.
  Storage(Device* device, void* data, size_t capacity, std::shared_ptr<const void> keepalive);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Device* device() const { return device_; }
  void* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  Device* device_;
  void* data_;
  size_t capacity_;
  PoolingAllocator* pool_ = nullptr;
  std::shared_ptr<const void> keepalive_;
};

struct NDArray {
  std::shared_ptr<Storage> storage;
  size_t offset = 0;
  DType dtype = DType::kF32;
  Shape shape;

  bool defined() const { return storage != nullptr; }
  void* data() const { return static_cast<char*>(storage->data()) + offset; }
  Device* device() const { return storage->device(); }
  int64_t num_elements() const;
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype); }
  TensorArg AsArg() const { return TensorArg{data(), dtype, shape}; }
  // "f32[16, 1024] @sim"
  std::string TypeString() const;
};

// A pooled tensor of `shape` on the pool's device (contents undefined).
absl::StatusOr<NDArray> AllocateTensor(PoolingAllocator* pool, DType dtype, Shape shape);
// Places a host tensor on `pool`'s device: cpu wraps the tensor's bytes without a copy; an
// accelerator allocates from the pool and copies (one H2D transfer).
absl::StatusOr<NDArray> FromHost(const Tensor& tensor, PoolingAllocator* pool);
// The contents as a host tensor (one D2H transfer when `array` lives on an accelerator).
absl::StatusOr<Tensor> ToHost(const NDArray& array);

}  // namespace hetpass::runtime

#endif  // HETPASS_RUNTIME_NDARRAY_H_
