// Exact placement for two devices (host = side 0, accelerator = side 1) minimising bytes moved.
//
// The cost model is that of device_copy insertion: a value produced on one side and needed by
// at least one consumer on the other side costs its bytes ONCE (one copy per value and
// destination, shared by every consumer there). This is a hyperedge cost, made exact for a
// min-cut with two auxiliary nodes per value (p = producer, U = consumers, w = bytes):
//   p -> a (w),  a -> u (inf) for u in U    pays w iff p is host and some u is accelerator
//   u -> b (inf) for u in U,  b -> p (w)    pays w iff p is accelerator and some u is host
// Fixed nodes hang off the source (host) or sink (accelerator) with infinite capacity. A small
// per-node preference (`host_penalty`, the cost of placing a free node on the host) breaks
// ties; bytes are scaled so that the preferences together never outweigh one byte.
#ifndef HETPASS_DEVICE_PLANNER_TWO_DEVICE_CUT_H_
#define HETPASS_DEVICE_PLANNER_TWO_DEVICE_CUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace hetpass {

struct CutProblem {
  static constexpr int8_t kFree = -1;
  static constexpr int8_t kHost = 0;
  static constexpr int8_t kAccel = 1;

  struct Value {
    int producer = 0;
    int64_t bytes = 0;
    std::vector<int> consumers;  // nodes that need the data on their own side
  };
  std::vector<int8_t> fixed;          // per node: kFree, kHost or kAccel
  std::vector<int64_t> host_penalty;  // per node, tie-breaker (0 if empty)
  std::vector<Value> values;
};

struct CutSolution {
  std::vector<int8_t> side;  // per node: kHost or kAccel
  int64_t bytes_moved = 0;   // the cost of `side` under the shared-copy model
};

// Bytes moved by an assignment (every node assigned).
int64_t CutCost(const CutProblem& problem, const std::vector<int8_t>& side);

// The optimal assignment (fixed nodes keep their side). Errors on malformed problems
// (node ids out of range, negative bytes, overflow of the scaled capacities).
absl::StatusOr<CutSolution> SolveTwoDeviceCut(const CutProblem& problem);

}  // namespace hetpass

#endif  // HETPASS_DEVICE_PLANNER_TWO_DEVICE_CUT_H_
