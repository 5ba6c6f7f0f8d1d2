// Run-time tensors over pooled or borrowed storage (see ndarray.h). Transfers go through the
// Device API so every byte that crosses is counted.
#include "passes/runtime/ndarray.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"

namespace hetpass::runtime {

Storage::Storage(PoolingAllocator* pool, PoolingAllocator::Block block)
    : device_(pool->device()), data_(block.ptr), capacity_(block.capacity), pool_(pool) {}

Storage::Storage(Device* device, void* data, size_t capacity, std::shared_ptr<const void> keepalive)
    : device_(device), data_(data), capacity_(capacity), keepalive_(std::move(keepalive)) {}

Storage::~Storage() {
  if (pool_ != nullptr) pool_->Release({data_, capacity_});
}

int64_t NDArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NDArray::TypeString() const {
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(shape, ", "), "] @",
                      storage ? device()->name() : std::string("?"));
}

absl::StatusOr<NDArray> AllocateTensor(PoolingAllocator* pool, DType dtype, Shape shape) {
  NDArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  ASSIGN_OR_RETURN(PoolingAllocator::Block block, pool->Allocate(a.nbytes()));
  a.storage = std::make_shared<Storage>(pool, block);
  return a;
}

absl::StatusOr<NDArray> FromHost(const Tensor& tensor, PoolingAllocator* pool) {
  Shape shape(tensor.shape().begin(), tensor.shape().end());
  if (pool->device()->kind() == DeviceKind::kCpu) {
    NDArray a;
    a.dtype = tensor.dtype();
    a.shape = std::move(shape);
    // Borrow the tensor's (immutable, shared) bytes: keep a copy of the Tensor alive.
    auto owner = std::make_shared<Tensor>(tensor);
    a.storage = std::make_shared<Storage>(pool->device(), const_cast<uint8_t*>(owner->data()),
                                          owner->nbytes(), owner);
    return a;
  }
  ASSIGN_OR_RETURN(NDArray a, AllocateTensor(pool, tensor.dtype(), std::move(shape)));
  RETURN_IF_ERROR(a.device()->CopyHostToDevice(a.data(), tensor.data(), tensor.nbytes()));
  return a;
}

absl::StatusOr<Tensor> ToHost(const NDArray& array) {
  std::vector<int64_t> shape(array.shape.begin(), array.shape.end());
  Tensor t = Tensor::Zeros(array.dtype, shape);
  if (array.nbytes() == 0) return t;
  if (array.device()->kind() == DeviceKind::kCpu) {
    std::memcpy(t.mutable_data(), array.data(), array.nbytes());
  } else {
    RETURN_IF_ERROR(array.device()->CopyDeviceToHost(t.mutable_data(), array.data(), array.nbytes()));
    RETURN_IF_ERROR(array.device()->Synchronize());  // the host reads it next
  }
  return t;
}

}  // namespace hetpass::runtime
