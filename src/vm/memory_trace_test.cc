// The liveness lower bound from memory events (memory_trace.h), on hand-made traces.
#include "vm/memory_trace.h"

#include <gtest/gtest.h>

namespace hetpass::vm {
namespace {

const DeviceKind kSim = DeviceKind::kSim;

// A fake address space: offsets into one array, never dereferenced.
const char* At(size_t offset) {
  static char base[1 << 16];
  return base + offset;
}

// Tests that two values whose lifetimes do not overlap count one at a time.
TEST(MemoryTrace, DisjointLifetimesDoNotAdd) {
  MemoryTrace t;
  t.Tick();
  t.Write(kSim, At(0), 100);     // a
  t.Tick();
  t.Read(kSim, At(0), 100);      // last use of a
  t.Write(kSim, At(1000), 50);   // b, while a is read
  t.Tick();
  t.Write(kSim, At(2000), 70);   // c: a is dead
  t.Read(kSim, At(1000), 50);
  EXPECT_EQ(t.LowerBound(kSim), 150) << "a and b overlap at tick 2; then b + c = 120";
}

// Tests that overlapping lifetimes add up.
TEST(MemoryTrace, OverlappingLifetimesAdd) {
  MemoryTrace t;
  t.Tick();
  t.Write(kSim, At(0), 100);
  t.Tick();
  t.Write(kSim, At(200), 300);
  t.Tick();
  t.Read(kSim, At(0), 100);
  t.Read(kSim, At(200), 300);
  EXPECT_EQ(t.LowerBound(kSim), 400);
}

// Tests that an output written over its dying input (in place) counts its bytes once.
TEST(MemoryTrace, InPlaceCountsOnce) {
  MemoryTrace t;
  t.Tick();
  t.Write(kSim, At(0), 100);
  t.Tick();
  t.Read(kSim, At(0), 100);
  t.Write(kSim, At(0), 100);
  t.Tick();
  t.Read(kSim, At(0), 100);
  EXPECT_EQ(t.LowerBound(kSim), 100);
}

// Tests that an argument (read before any write) is live from the start, and constants for
// the whole run; other devices do not count.
TEST(MemoryTrace, ArgumentsAndConstants) {
  MemoryTrace t;
  t.Persistent(kSim, At(5000), 64);
  t.Tick();
  t.Write(kSim, At(0), 10);
  t.Write(DeviceKind::kCpu, At(0), 1000);
  t.Tick();
  t.Read(kSim, At(100), 20);  // the argument, last read here
  t.Tick();
  t.Read(kSim, At(0), 10);
  EXPECT_EQ(t.LowerBound(kSim), 64 + 10 + 20);
  EXPECT_EQ(t.LowerBound(DeviceKind::kCuda), 0);
}

// Tests that a value written and never read is live at its write only.
TEST(MemoryTrace, DeadOutputLivesAtItsWrite) {
  MemoryTrace t;
  t.Tick();
  t.Write(kSim, At(0), 100);
  t.Tick();
  t.Write(kSim, At(100), 30);
  EXPECT_EQ(t.LowerBound(kSim), 100);
}

}  // namespace
}  // namespace hetpass::vm
