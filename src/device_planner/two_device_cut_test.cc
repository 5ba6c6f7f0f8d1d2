#include "passes/device_planner/two_device_cut.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

CutProblem RandomProblem(std::mt19937_64& rng, int n) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CutProblem p;
  p.fixed.resize(n);
  p.host_penalty.resize(n);
  for (int i = 0; i < n; ++i) {
    const int r = uniform(0, 9);
    p.fixed[i] = r < 2 ? CutProblem::kHost : r < 4 ? CutProblem::kAccel : CutProblem::kFree;
    p.host_penalty[i] = p.fixed[i] == CutProblem::kFree ? uniform(0, 1) : 0;
  }
  for (int i = 0; i < n; ++i) {
    for (int k = uniform(0, 2); k > 0; --k) {
      CutProblem::Value v;
      v.producer = i;
      v.bytes = uniform(0, 4) == 0 ? 0 : uniform(1, 1000);
      for (int u = 0; u < n; ++u) {
        if (u != i && uniform(0, 3) == 0) v.consumers.push_back(u);
      }
      p.values.push_back(std::move(v));
    }
  }
  return p;
}

int64_t Penalty(const CutProblem& p, const std::vector<int8_t>& side) {
  int64_t total = 0;
  for (size_t i = 0; i < side.size(); ++i) total += side[i] == CutProblem::kHost ? p.host_penalty[i] : 0;
  return total;
}

// Tests that the min-cut finds the optimum on every one of 600 random graphs of 2 to 12 nodes,
// compared with brute force over every assignment of the free nodes; fixed nodes keep their
// side, and among optimal assignments the tie-break preference is minimal too.
TEST(TwoDeviceCut, MatchesBruteForce) {
  std::mt19937_64 rng(20261122);
  int graphs = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int n = 2 + trial % 11;
    const CutProblem p = RandomProblem(rng, n);
    auto solved = SolveTwoDeviceCut(p);
    ASSERT_TRUE(solved.ok()) << solved.status();
    for (int i = 0; i < n; ++i) {
      if (p.fixed[i] != CutProblem::kFree) {
        ASSERT_EQ(solved->side[i], p.fixed[i]);
      }
    }
    std::vector<int> free;
    for (int i = 0; i < n; ++i) {
      if (p.fixed[i] == CutProblem::kFree) free.push_back(i);
    }
    int64_t best = INT64_MAX, best_penalty = INT64_MAX;
    std::vector<int8_t> side(p.fixed.begin(), p.fixed.end());
    for (uint32_t mask = 0; mask < (1u << free.size()); ++mask) {
      for (size_t k = 0; k < free.size(); ++k) side[free[k]] = (mask >> k) & 1;
      const int64_t cost = CutCost(p, side);
      const int64_t pen = Penalty(p, side);
      if (cost < best || (cost == best && pen < best_penalty)) {
        best = cost;
        best_penalty = pen;
      }
    }
    ASSERT_EQ(solved->bytes_moved, best) << "trial " << trial;
    ASSERT_EQ(Penalty(p, solved->side), best_penalty) << "trial " << trial;
    ++graphs;
  }
  EXPECT_EQ(graphs, 600);
}

// Tests the shared-copy model: three consumers on the other side cost one copy, not three.
TEST(TwoDeviceCut, OneCopyPerValueAndDestination) {
  CutProblem p;
  p.fixed = {CutProblem::kHost, CutProblem::kAccel, CutProblem::kAccel, CutProblem::kAccel};
  p.values = {{0, 100, {1, 2, 3}}};
  auto s = SolveTwoDeviceCut(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->bytes_moved, 100);
}

// Tests that a free node between a big host value and a small device need moves the copy to
// the small side: cast f32 -> f16 before the upload, not after.
TEST(TwoDeviceCut, PrefersCopyingTheSmallerValue) {
  CutProblem p;
  p.fixed = {CutProblem::kHost, CutProblem::kFree, CutProblem::kAccel};
  p.host_penalty = {0, 1, 0};  // prefers the accelerator when it costs nothing
  p.values = {{0, 4000, {1}}, {1, 2000, {2}}};
  auto s = SolveTwoDeviceCut(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->side[1], CutProblem::kHost);
  EXPECT_EQ(s->bytes_moved, 2000);
}

// Tests a network that is one long path: 200k free nodes between a host input and an
// accelerator output, every value of 1000 bytes but one of 3 in the middle (and dear ends). The augmenting
// path runs through every node (a recursive search would need a frame per node, more than a
// thread's stack), and the cut falls at the cheap value.
TEST(TwoDeviceCut, SolvesAPathAsLongAsTheNetwork) {
  constexpr int kFree = 200000;
  CutProblem p;
  p.fixed.assign(kFree + 2, CutProblem::kFree);
  p.fixed.front() = CutProblem::kHost;
  p.fixed.back() = CutProblem::kAccel;
  p.host_penalty.assign(kFree + 2, 0);
  for (int i = 0; i + 1 < kFree + 2; ++i) {
    // Node i's value feeds node i + 1, and (the residual add) node i + 2.
    const int64_t bytes = i == kFree / 2 ? 3 : i == 0 || i == kFree ? 5000 : 1000;  // dear ends
    CutProblem::Value v{i, bytes, {i + 1}};
    if (i + 2 < kFree + 2) v.consumers.push_back(i + 2);
    p.values.push_back(v);
  }
  // With skip edges every cut crosses two values; the cheapest pairs hold the cheap one, and
  // of those two cuts the one with fewer host nodes wins (the source side found is minimal).
  auto s = SolveTwoDeviceCut(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->bytes_moved, CutCost(p, s->side));
  int host = 0;
  while (host < kFree + 2 && s->side[host] == CutProblem::kHost) ++host;
  for (int i = host; i < kFree + 2; ++i) ASSERT_EQ(s->side[i], CutProblem::kAccel) << i;
  // Cut between `host - 1` and `host`: values host - 2 (into host) and host - 1 cross.
  EXPECT_EQ(s->bytes_moved, 3 + 1000);
  EXPECT_EQ(host, kFree / 2 + 1);
}

// Tests that malformed problems are errors, not crashes.
TEST(TwoDeviceCut, RejectsMalformedProblems) {
  CutProblem p;
  p.fixed = {CutProblem::kHost};
  p.values = {{3, 1, {0}}};
  EXPECT_THAT(SolveTwoDeviceCut(p).status().message(), HasSubstr("producer 3 out of range"));
  p.values = {{0, 1, {7}}};
  EXPECT_THAT(SolveTwoDeviceCut(p).status().message(), HasSubstr("consumer 7 out of range"));
  p.values = {{0, -1, {0}}};
  EXPECT_THAT(SolveTwoDeviceCut(p).status().message(), HasSubstr("non-negative"));
}

}  // namespace
}  // namespace hetpass
