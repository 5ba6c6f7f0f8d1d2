// PlaceInArena against the quadratic scan it replaced (every placed request checked for each
// new one), on hand-made and random traces; and the placement's own invariant, that requests
// alive together never share a byte.
#include "runtime/arena_placement.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace hetpass::runtime {
namespace {

bool Overlap(const ArenaRequest& a, const ArenaRequest& b) {
  return a.alloc < b.release && b.alloc < a.release;
}

// The quadratic scan (pooling_allocator.cc before arena_placement.h).
size_t PlaceByScan(const std::vector<ArenaRequest>& requests, std::vector<size_t>& offsets) {
  offsets.assign(requests.size(), kNotInArena);
  std::vector<size_t> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].release >= 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  size_t total = 0;
  std::vector<size_t> placed;
  for (size_t i : order) {
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      if (Overlap(requests[i], requests[j])) busy.emplace_back(offsets[j], offsets[j] + requests[j].bytes);
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= offset + requests[i].bytes) break;
      offset = std::max(offset, end);
    }
    offsets[i] = offset;
    total = std::max(total, offset + requests[i].bytes);
    placed.push_back(i);
  }
  return total;
}

// A run's trace: `n` requests allocated in order, each released after `life` further events
// (random), some never released (results).
std::vector<ArenaRequest> RandomTrace(std::mt19937& rng, int n, int max_life, int results_percent) {
  std::vector<ArenaRequest> requests(n);
  std::vector<std::pair<int64_t, int>> events;  // (time, request) with time*2 ordering below
  std::uniform_int_distribution<int> size(1, 64);
  std::uniform_int_distribution<int> life(1, max_life);
  std::uniform_int_distribution<int> percent(0, 99);
  // Allocation k happens at time 2k; a release at an odd time, so every event is distinct.
  for (int k = 0; k < n; ++k) {
    requests[k].bytes = static_cast<size_t>(size(rng)) * 64;
    requests[k].alloc = 2 * k;
    requests[k].release = percent(rng) < results_percent ? -1 : 2 * (k + life(rng)) - 1;
  }
  return requests;
}

TEST(ArenaPlacement, MatchesTheQuadraticScanOnRandomTraces) {
  std::mt19937 rng(33);
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + round % 150;
    const int max_life = 1 + (round * 7) % 60;
    const std::vector<ArenaRequest> requests = RandomTrace(rng, n, max_life, round % 3 == 0 ? 20 : 0);
    std::vector<size_t> expected, got;
    const size_t expected_total = PlaceByScan(requests, expected);
    const size_t total = PlaceInArena(requests, got);
    ASSERT_EQ(total, expected_total) << "round " << round;
    ASSERT_EQ(got, expected) << "round " << round;
  }
}

TEST(ArenaPlacement, RequestsAliveTogetherNeverShareAByte) {
  std::mt19937 rng(7);
  const std::vector<ArenaRequest> requests = RandomTrace(rng, 2000, 300, 5);
  std::vector<size_t> offsets;
  const size_t total = PlaceInArena(requests, offsets);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].release < 0) {
      EXPECT_EQ(offsets[i], kNotInArena);
      continue;
    }
    ASSERT_LE(offsets[i] + requests[i].bytes, total);
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (requests[j].release < 0 || !Overlap(requests[i], requests[j])) continue;
      const bool apart = offsets[i] + requests[i].bytes <= offsets[j] ||
                         offsets[j] + requests[j].bytes <= offsets[i];
      ASSERT_TRUE(apart) << "requests " << i << " and " << j << " overlap in time and bytes";
    }
  }
}

TEST(ArenaPlacement, HandMadeTraces) {
  std::vector<size_t> offsets;
  // Nothing: an empty arena.
  EXPECT_EQ(PlaceInArena({}, offsets), 0u);
  EXPECT_TRUE(offsets.empty());
  // A chain (each released as the next is allocated... after it): a and c never overlap, so c
  // reuses a's bytes; b sits beside both.
  //   a [0, 3)  b [2, 5)  c [4, 7)
  const std::vector<ArenaRequest> chain = {{256, 0, 3}, {128, 2, 5}, {256, 4, 7}};
  EXPECT_EQ(PlaceInArena(chain, offsets), 384u);
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 256, 0}));
  // A result (never released) is not in the arena and takes no bytes of it.
  const std::vector<ArenaRequest> with_result = {{1024, 0, -1}, {64, 1, 2}};
  EXPECT_EQ(PlaceInArena(with_result, offsets), 64u);
  EXPECT_EQ(offsets, (std::vector<size_t>{kNotInArena, 0}));
  // Largest first: the small one alive with it goes above it, even though allocated first.
  const std::vector<ArenaRequest> nested = {{64, 0, 5}, {512, 1, 3}};
  EXPECT_EQ(PlaceInArena(nested, offsets), 576u);
  EXPECT_EQ(offsets, (std::vector<size_t>{512, 0}));
}

}  // namespace
}  // namespace hetpass::runtime
