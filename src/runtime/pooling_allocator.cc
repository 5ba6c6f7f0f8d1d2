// PoolingAllocator: a cache of device blocks in front of Device::Allocate/Free.
//
// Why: a dynamic-shape program allocates its intermediate buffers per inference, and raw device
// allocation is expensive on a real accelerator (and fragments the sim arena). The VM releases
// blocks back to the pool instead of freeing them, so an inference whose shapes are the same as
// or smaller than an earlier one is served entirely from the cache: zero raw allocations, which
// the device counters let tests assert.
//
// Choices:
//   - Size classes. A request is rounded up to a multiple of 64 bytes, then to the next size
//     class: below 1 KiB every multiple of 64 is a class; from 1 KiB up, each power-of-two range
//     [2^k, 2^(k+1)) is split into 8 equal steps (2^k / 8). A block is allocated from the device
//     with its class capacity, so a slightly smaller request later (a shorter sequence, a smaller
//     batch) lands in the same class and fits a cached block. The waste is bounded: under 12.5%
//     of the request beyond the 64-byte rounding.
//   - Best fit. Allocate hands out the cached block with the smallest capacity >= the class
//     capacity: a small request takes the smallest block that fits and leaves the larger ones
//     to the larger requests of the same sequence. The cache is a map from capacity to a stack
//     of blocks; stacks stay in the map when empty, so in steady state an allocate/release pair
//     touches no heap (a multimap node per release cost ~40% of the VM's dispatch time).
//   - On device exhaustion the cache is trimmed (cached blocks freed to the device, which
//     coalesces them) and the raw allocation is retried once, so cached fragments never cause an
//     out-of-memory the device alone would not.
//   - Release of a block the pool does not consider in use (double release, foreign block) is
//     ignored: caching it twice would hand the same memory to two owners.
//   - The destructor frees the cached blocks only. Blocks still in use at destruction belong to
//     owners that may still use them; freeing them would turn a lifetime mistake into a silent
//     use-after-free, so they are left allocated (the device's allocs vs frees counters show the
//     leak in tests).
// Thread safety: one mutex guards the cache and the in-use map; it is not held across raw
// device calls (the device is thread-safe itself).
#include "passes/runtime/device.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace hetpass::runtime {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kSmallLimit = 1024;  // below: every multiple of 64 is a class
constexpr int kStepsPerPowerOfTwo = 8;

// The capacity a request of `bytes` is served with. Requests too large to round are passed
// through unchanged, so the device reports its own exhaustion error.
size_t SizeClass(size_t bytes) {
  if (bytes > (SIZE_MAX >> 2)) return bytes;
  size_t r = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (r < kSmallLimit) return r;
  size_t power = size_t{1} << (63 - __builtin_clzll(static_cast<unsigned long long>(r)));
  size_t step = power / kStepsPerPowerOfTwo;
  return (r + step - 1) / step * step;
}

}  // namespace

struct PoolingAllocator::State {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> cached;  // capacity -> blocks, best fit by lower_bound
  absl::flat_hash_map<void*, size_t> in_use;  // block -> capacity
  size_t cached_bytes = 0;
};

PoolingAllocator::PoolingAllocator(Device* device)
    : device_(device), state_(std::make_unique<State>()) {}

PoolingAllocator::~PoolingAllocator() { Trim(); }

absl::StatusOr<PoolingAllocator::Block> PoolingAllocator::Allocate(size_t bytes) {
  size_t capacity = SizeClass(bytes);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->cached.lower_bound(capacity);
    while (it != state_->cached.end() && it->second.empty()) ++it;
    if (it != state_->cached.end()) {
      Block block{it->second.back(), it->first};
      it->second.pop_back();
      state_->cached_bytes -= block.capacity;
      state_->in_use[block.ptr] = block.capacity;
      ++in_use_;
      return block;
    }
  }
  absl::StatusOr<void*> raw = device_->Allocate(capacity);
  if (absl::IsResourceExhausted(raw.status()) && cached_bytes() > 0) {
    Trim();
    raw = device_->Allocate(capacity);
  }
  if (!raw.ok()) return raw.status();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->in_use[*raw] = capacity;
  ++in_use_;
  return Block{*raw, capacity};
}

void PoolingAllocator::Release(Block block) {
  if (block.ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->in_use.find(block.ptr);
  if (it == state_->in_use.end()) return;  // double release or foreign block: see above
  size_t capacity = it->second;            // the pool's record, not the caller's copy
  state_->in_use.erase(it);
  state_->cached[capacity].push_back(block.ptr);
  state_->cached_bytes += capacity;
  --in_use_;
}

void PoolingAllocator::Trim() {
  std::map<size_t, std::vector<void*>> to_free;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    to_free.swap(state_->cached);
    state_->cached_bytes = 0;
  }
  for (const auto& [capacity, blocks] : to_free) {
    for (void* ptr : blocks) device_->Free(ptr);
  }
}

size_t PoolingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->cached_bytes;
}

}  // namespace hetpass::runtime
