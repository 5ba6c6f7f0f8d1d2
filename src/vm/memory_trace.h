// The liveness lower bound of one run: which device bytes hold a value that is still needed, at
// every program point, measured from the run itself.
//
// The VM records, per executed instruction (a program point, "time"), the device byte ranges
// it reads and writes: kernel inputs and outputs, copy sources and destinations, host values
// read by shape functions, conditions and counts, and the function's results (read once more
// at the end, when they are handed back). Constants are live for the whole run.
//
// Definition (docs/memory_planning.md): a *value* occupies a byte range from the write that
// produces it to its last read (a range read before any write in the run, an argument, is
// live from time 0). At time t the live bytes of a device are the bytes of the union of the
// values live at t: two tensors over the same bytes (a view, an output written in place over
// its dying input) count once. The lower bound is the largest live byte count over the run's
// program points: no allocator that keeps each value where it was computed, from its
// definition to its last use, can hold less at that point.
//
// Computation: the event addresses cut the device memory into elementary segments; each
// segment's values become time intervals (merged where they touch, so in-place reuse counts
// once); a difference array over time, weighted by segment size, gives the live bytes at each
// point. Addresses are only compared, never dereferenced.
#ifndef HETPASS_VM_MEMORY_TRACE_H_
#define HETPASS_VM_MEMORY_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "passes/ir/ir.h"

namespace hetpass::vm {

class MemoryTrace {
 public:
  // Forgets every event; time starts again at 0.
  void Clear() {
    events_.clear();
    time_ = 0;
  }
  // The next program point.
  void Tick() { ++time_; }
  void Read(DeviceKind device, const void* data, size_t bytes) { Add(device, data, bytes, kRead); }
  void Write(DeviceKind device, const void* data, size_t bytes) { Add(device, data, bytes, kWrite); }
  // Live from the start of the run to its end (constants).
  void Persistent(DeviceKind device, const void* data, size_t bytes) {
    Add(device, data, bytes, kPersistent);
  }
  // The largest number of live bytes of `device` at any program point (see above).
  int64_t LowerBound(DeviceKind device) const;
  size_t num_events() const { return events_.size(); }

 private:
  enum Kind : uint8_t { kRead, kWrite, kPersistent };
  struct Event {
    int64_t time;
    uintptr_t begin;
    uintptr_t end;
    DeviceKind device;
    Kind kind;
  };
  void Add(DeviceKind device, const void* data, size_t bytes, Kind kind) {
    if (bytes == 0 || data == nullptr) return;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
    events_.push_back(Event{time_, begin, begin + bytes, device, kind});
  }
  std::vector<Event> events_;
  int64_t time_ = 0;
};

}  // namespace hetpass::vm

#endif  // HETPASS_VM_MEMORY_TRACE_H_
