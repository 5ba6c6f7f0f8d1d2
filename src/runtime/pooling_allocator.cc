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
//   - On device exhaustion (or a device memory limit) the cache is trimmed (cached blocks freed
//     to the device, which coalesces them) and so is the run-time arena when none of its blocks
//     is in use (Shrink), and the raw allocation is retried once, so cached fragments never
//     cause an out-of-memory the device alone would not.
//   - Release of a block the pool does not consider in use (double release, foreign block) is
//     ignored: caching it twice would hand the same memory to two owners.
//   - The destructor frees the cached blocks only. Blocks still in use at destruction belong to
//     owners that may still use them; freeing them would turn a lifetime mistake into a silent
//     use-after-free, so they are left allocated (the device's allocs vs frees counters show the
//     leak in tests).
//   - Run-time plan (BeginRun/EndRun, called by the VM around each top-level call). Freed blocks
//     of mixed sizes fragment a cache (a growing sequence of requests takes a new block each
//     time), so a cache alone holds far more than is ever live. A run records each request
//     (size rounded to 64 bytes, the event numbers of its allocation and release). At the end,
//     the requests released within the run (everything but the results handed out) are placed
//     in one arena, largest first, each at the lowest offset not overlapping a placed request
//     whose lifetime overlaps its own (greedy by size, as TFLite's arena planner); the arena is
//     allocated, the cache trimmed. The next run is served from the arena while its events
//     (allocations with their sizes, and releases) repeat the recorded ones in order (the same
//     shapes and control flow: the steady state, with zero raw allocations); from the first
//     event that differs the rest of the run takes the first gap of the arena between the
//     arena blocks live then, else the cache (blocks handed out before were placed apart from
//     everything live with them), and its end plans again. The arena only grows: a run with
//     smaller shapes fits the old one and allocates nothing. Results (not released within the run) always come from the cache.
//   - Device graphs (docs/runtime.md): every path that gives memory back to the device goes
//     through FreeToDevice, which counts a generation (a graph that captured pointers into this
//     pool's blocks is stale once it moves) and, while the VM holds the pool (Hold), keeps the
//     memory aside until the deferred launches that may still read it have been issued.
// Thread safety: one mutex guards the cache and the in-use map; it is not held across raw
// device calls (the device is thread-safe itself).
#include "passes/runtime/device.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/arena_placement.h"

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

  // The run-time plan.
  // bytes rounded to kAlignment; alloc and release are event numbers within the run, release
  // -1 for a request not released within it (a result).
  using Request = ArenaRequest;
  struct Placed {
    size_t bytes = 0;
    size_t offset = 0;
    bool in_arena = false;   // false: a result, served by the cache
  };
  bool in_run = false;
  bool replaying = false;    // serving this run from the arena (no event has differed yet)
  bool arena_usable = false; // no arena block was held at the start of the run
  // The run's events in order: 2r for request r's allocation, 2r + 1 for its release. A run
  // is replayed while its events repeat the planned run's exactly: sizes alone would not do,
  // a block released later than planned would overlap the next one placed on its bytes.
  std::vector<int64_t> events;
  std::vector<int64_t> plan_events;
  std::vector<Request> trace;
  absl::flat_hash_map<void*, size_t> traced;    // block -> its request in `trace`
  absl::flat_hash_map<void*, size_t> in_arena;  // arena block in use -> its request
  std::vector<Placed> plan;
  void* arena = nullptr;
  size_t arena_bytes = 0;

  // Hold(): memory to give back to the device once the hold ends.
  bool holding = false;
  std::vector<void*> held;
};

namespace {

// Offsets for the requests released within the run (arena_placement.h); returns the arena size.
size_t PlaceRequests(const std::vector<PoolingAllocator::State::Request>& trace,
                     std::vector<PoolingAllocator::State::Placed>& plan) {
  std::vector<size_t> offsets;
  const size_t total = PlaceInArena(trace, offsets);
  plan.assign(trace.size(), {});
  for (size_t i = 0; i < trace.size(); ++i) {
    plan[i].bytes = trace[i].bytes;
    if (offsets[i] != kNotInArena) {
      plan[i].offset = offsets[i];
      plan[i].in_arena = true;
    }
  }
  return total;
}

}  // namespace

PoolingAllocator::PoolingAllocator(Device* device)
    : device_(device), state_(std::make_unique<State>()) {}

PoolingAllocator::~PoolingAllocator() {
  Hold(false);
  Trim();
  // Arena blocks still in use belong to owners that may use them (see the destructor note
  // above): the arena is then left allocated.
  if (state_->arena != nullptr && state_->in_arena.empty()) FreeToDevice(state_->arena);
}

void PoolingAllocator::FreeToDevice(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->holding) {
      state_->held.push_back(ptr);
      return;
    }
  }
  generation_.fetch_add(1, std::memory_order_relaxed);
  device_->Free(ptr);
}

void PoolingAllocator::Hold(bool on) {
  std::vector<void*> held;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->holding = on;
    if (on) return;
    held.swap(state_->held);
  }
  for (void* ptr : held) FreeToDevice(ptr);
}

absl::StatusOr<PoolingAllocator::Block> PoolingAllocator::Allocate(size_t bytes) {
  size_t capacity = SizeClass(bytes);
  size_t request = SIZE_MAX;  // index in the run's trace
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    State& st = *state_;
    if (st.in_run) {
      const size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
      request = st.trace.size();
      st.trace.push_back({rounded, static_cast<int64_t>(st.events.size()), -1});
      st.events.push_back(2 * static_cast<int64_t>(request));
      if (st.replaying) {
        const size_t e = st.events.size() - 1;
        if (request >= st.plan.size() || st.plan[request].bytes != rounded ||
            e >= st.plan_events.size() || st.plan_events[e] != st.events[e]) {
          st.replaying = false;  // the run differs from the plan: the cache serves the rest
        } else if (st.plan[request].in_arena) {
          void* ptr = static_cast<char*>(st.arena) + st.plan[request].offset;
          st.in_arena[ptr] = request;
          ++in_use_;
          return Block{ptr, rounded};
        }
      }
      // Off the plan (other shapes, other control flow): the first gap of the arena between
      // the arena blocks live now, so smaller shapes still need no raw allocation.
      if (!st.replaying && st.arena_usable && st.arena != nullptr) {
        std::vector<std::pair<size_t, size_t>> busy;  // offset, end
        for (const auto& [ptr, r] : st.in_arena) {
          const size_t offset = static_cast<size_t>(static_cast<char*>(ptr) - static_cast<char*>(st.arena));
          busy.emplace_back(offset, offset + st.trace[r].bytes);
        }
        std::sort(busy.begin(), busy.end());
        size_t offset = 0;
        for (const auto& [begin, end] : busy) {
          if (begin >= offset + rounded) break;
          offset = std::max(offset, end);
        }
        if (offset + rounded <= st.arena_bytes) {
          void* ptr = static_cast<char*>(st.arena) + offset;
          st.in_arena[ptr] = request;
          ++in_use_;
          return Block{ptr, rounded};
        }
      }
    }
    auto it = state_->cached.lower_bound(capacity);
    while (it != state_->cached.end() && it->second.empty()) ++it;
    if (it != state_->cached.end()) {
      Block block{it->second.back(), it->first};
      it->second.pop_back();
      state_->cached_bytes -= block.capacity;
      state_->in_use[block.ptr] = block.capacity;
      if (request != SIZE_MAX) state_->traced[block.ptr] = request;
      ++in_use_;
      return block;
    }
  }
  absl::StatusOr<void*> raw = device_->Allocate(capacity);
  if (absl::IsResourceExhausted(raw.status())) {
    // The cache and an idle run-time arena are memory the pool can give back: out of device
    // memory (or over a memory limit), give it back and try once more.
    const size_t arena = arena_bytes();
    const size_t cached = cached_bytes();
    Shrink();
    if (cached > 0 || arena != arena_bytes()) raw = device_->Allocate(capacity);
  }
  if (!raw.ok()) return raw.status();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->in_use[*raw] = capacity;
  if (request != SIZE_MAX && state_->in_run) state_->traced[*raw] = request;
  ++in_use_;
  return Block{*raw, capacity};
}

void PoolingAllocator::Release(Block block) {
  if (block.ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(state_->mu);
  State& st = *state_;
  // A release within the run is an event of the trace; out of order, it ends the replay.
  auto record_release = [&st](size_t request) {
    if (!st.in_run || request >= st.trace.size()) return;
    st.trace[request].release = static_cast<int64_t>(st.events.size());
    st.events.push_back(2 * static_cast<int64_t>(request) + 1);
    const size_t e = st.events.size() - 1;
    if (st.replaying && (e >= st.plan_events.size() || st.plan_events[e] != st.events[e])) {
      st.replaying = false;
    }
  };
  if (auto a = st.in_arena.find(block.ptr); a != st.in_arena.end()) {
    record_release(a->second);
    st.in_arena.erase(a);
    --in_use_;
    return;
  }
  if (auto t = st.traced.find(block.ptr); t != st.traced.end()) {
    record_release(t->second);
    st.traced.erase(t);
  }
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
    for (void* ptr : blocks) FreeToDevice(ptr);
  }
}

void PoolingAllocator::Shrink() {
  void* arena = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    State& st = *state_;
    // An arena none of whose blocks is in use can go, even within a run: the run then stops
    // replaying (the cache serves it) and its end plans afresh.
    if (st.in_arena.empty()) {
      arena = st.arena;
      st.arena = nullptr;
      st.arena_bytes = 0;
      st.plan.clear();
      st.plan_events.clear();
      st.replaying = false;
      st.arena_usable = false;
    }
  }
  if (arena != nullptr) FreeToDevice(arena);
  Trim();
}

void PoolingAllocator::BeginRun() {
  std::lock_guard<std::mutex> lock(state_->mu);
  State& st = *state_;
  st.in_run = true;
  // An arena block still held from an earlier run (a result kept by its caller) would collide
  // with this run's offsets: the arena then sits out the run.
  st.arena_usable = st.in_arena.empty();
  st.replaying = st.arena_usable && st.arena != nullptr && !st.plan.empty();
  st.events.clear();
  st.trace.clear();
  st.traced.clear();
}

void PoolingAllocator::EndRun() {
  void* old_arena = nullptr;
  size_t new_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    State& st = *state_;
    st.in_run = false;
    st.traced.clear();
    if (st.replaying && st.events.size() == st.plan_events.size()) return;  // it was the plan
    if (st.trace.empty() && st.plan.empty()) return;       // nothing allocated, nothing planned
    // An arena block still held past its run (never expected) keeps the old arena alive and
    // planning off, rather than freeing memory in use.
    if (!st.in_arena.empty()) {
      st.plan.clear();
      return;
    }
    new_bytes = PlaceRequests(st.trace, st.plan);
    st.plan_events = st.events;
    if (new_bytes <= st.arena_bytes) return;  // the arena holds the new plan: it only grows
    old_arena = st.arena;
    st.arena = nullptr;
    st.arena_bytes = 0;
  }
  if (old_arena != nullptr) FreeToDevice(old_arena);
  Trim();  // the cache's blocks: the arena replaces them
  if (new_bytes == 0) return;
  absl::StatusOr<void*> raw = device_->Allocate(new_bytes);
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!raw.ok()) {
    state_->plan.clear();  // no arena: the cache serves every run
    return;
  }
  state_->arena = *raw;
  state_->arena_bytes = new_bytes;
}

size_t PoolingAllocator::arena_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->arena_bytes;
}

size_t PoolingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->cached_bytes;
}

}  // namespace hetpass::runtime
