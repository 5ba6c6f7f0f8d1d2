// Placement of buffers with known lifetimes in one arena, for the pooling allocator's run-time
// plan (pooling_allocator.cc): greedy by size, as TFLite's arena planner. Requests are taken
// largest first (ties in request order), and each goes at the lowest offset that overlaps no
// placed request whose lifetime overlaps its own.
//
// Finding those placed requests is the cost. Scanning every placed request for each new one
// is quadratic: at bench/scale's 100k ops it was most of the cold run (the growth check flagged
// `run`). Here a max-tree over the requests in allocation order holds each placed request's
// release event (unplaced ones hold -1). Request i overlaps placed j when j was allocated
// before i's release (a prefix of the allocation order, found by binary search) and released
// after i's allocation (a max above a_i), so one pruned descent of the tree finds exactly
// them: O((k + 1) log n) for k overlapping requests, n log n in all for programs whose live
// sets are bounded.
#ifndef HETPASS_SRC_RUNTIME_ARENA_PLACEMENT_H_
#define HETPASS_SRC_RUNTIME_ARENA_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hetpass::runtime {

struct ArenaRequest {
  size_t bytes = 0;        // the block's size (the caller's rounding)
  int64_t alloc = 0;       // event numbers within the run, distinct across all requests
  int64_t release = -1;    // -1: not released within the run, so not placed in the arena
};

// Sets offsets[i] for every request with release >= 0 (the others get kNotInArena) and
// returns the arena's size: the largest offset + bytes. Requests must be in allocation order
// (alloc strictly increasing), as a run records them.
inline constexpr size_t kNotInArena = ~size_t{0};
size_t PlaceInArena(const std::vector<ArenaRequest>& requests, std::vector<size_t>& offsets);

}  // namespace hetpass::runtime

#endif  // HETPASS_SRC_RUNTIME_ARENA_PLACEMENT_H_
