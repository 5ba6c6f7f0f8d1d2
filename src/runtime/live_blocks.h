// The live allocations of a device (start -> size) and their counting, shared by the devices
// that hand out memory from an allocator they do not control (cpu: aligned_alloc; cuda:
// cudaMallocAsync). It answers Owns and range checks, and rejects frees of pointers the device
// never handed out (counted as bad_frees instead of corrupting the allocator). Not thread-safe:
// each device guards it, and its counters, with its own mutex.
#ifndef HETPASS_RUNTIME_LIVE_BLOCKS_H_
#define HETPASS_RUNTIME_LIVE_BLOCKS_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "passes/runtime/device.h"

namespace hetpass::runtime {

class LiveBlocks {
 public:
  // Records a raw allocation of `size` bytes at `p` made for a request of `requested` bytes.
  void Allocated(const void* p, size_t size, size_t requested, DeviceCounters& counters) {
    blocks_[Address(p)] = size;
    counters.NoteHeld(static_cast<int64_t>(size));
    ++counters.allocs;
    counters.alloc_bytes += static_cast<int64_t>(requested);
  }
  // Forgets the block starting at `p` and counts the free; false (counted as a bad free) when
  // `p` is not the start of a live block, and the caller must then not release it.
  bool Freed(const void* p, DeviceCounters& counters) {
    auto it = blocks_.find(Address(p));
    if (it == blocks_.end()) {
      ++counters.bad_frees;
      return false;
    }
    counters.NoteHeld(-static_cast<int64_t>(it->second));
    blocks_.erase(it);
    ++counters.frees;
    return true;
  }
  // [p, p + bytes) lies inside one live block (bytes == 0: p itself does).
  bool Contains(const void* p, size_t bytes = 0) const {
    const uintptr_t a = Address(p);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    const uintptr_t end = it->first + it->second;
    return a < end && bytes <= end - a;
  }
  const std::map<uintptr_t, size_t>& blocks() const { return blocks_; }

 private:
  static uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  std::map<uintptr_t, size_t> blocks_;  // start -> size
};

}  // namespace hetpass::runtime

#endif  // HETPASS_RUNTIME_LIVE_BLOCKS_H_
