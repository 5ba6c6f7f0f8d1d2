// Greedy-by-size arena placement with a max-tree over release events (arena_placement.h says
// why the tree).
#include "runtime/arena_placement.h"

#include <algorithm>
#include <utility>

namespace hetpass::runtime {
namespace {

// A max-tree over request positions [0, n): a leaf holds its request's release event once the
// request is placed, -1 before.
class ReleaseTree {
 public:
  explicit ReleaseTree(size_t n) {
    while (leaves_ < n) leaves_ <<= 1;
    max_.assign(2 * leaves_, -1);
  }

  void Set(size_t position, int64_t release) {
    size_t node = position + leaves_;
    max_[node] = release;
    for (node >>= 1; node >= 1; node >>= 1) max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }

  // Appends every position below `end` whose value is above `above`, in position order. A
  // subtree whose max is not above it is skipped whole.
  void Collect(size_t end, int64_t above, std::vector<size_t>& out) const {
    Visit(1, 0, leaves_, end, above, out);
  }

 private:
  void Visit(size_t node, size_t lo, size_t hi, size_t end, int64_t above,
             std::vector<size_t>& out) const {
    if (lo >= end || max_[node] <= above) return;
    if (hi - lo == 1) {
      out.push_back(lo);
      return;
    }
    const size_t mid = lo + (hi - lo) / 2;
    Visit(2 * node, lo, mid, end, above, out);
    Visit(2 * node + 1, mid, hi, end, above, out);
  }

  size_t leaves_ = 1;
  std::vector<int64_t> max_;
};

}  // namespace

size_t PlaceInArena(const std::vector<ArenaRequest>& requests, std::vector<size_t>& offsets) {
  offsets.assign(requests.size(), kNotInArena);
  std::vector<size_t> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].release >= 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  ReleaseTree placed(requests.size());
  std::vector<size_t> overlapping;
  std::vector<std::pair<size_t, size_t>> busy;  // offset, end
  size_t total = 0;
  for (size_t i : order) {
    const ArenaRequest& r = requests[i];
    // Placed requests alive at the same time as r: allocated before r's release (a prefix of
    // the allocation order) and released after r's allocation.
    const size_t end = static_cast<size_t>(
        std::partition_point(requests.begin(), requests.end(),
                             [&](const ArenaRequest& q) { return q.alloc < r.release; }) -
        requests.begin());
    overlapping.clear();
    placed.Collect(end, r.alloc, overlapping);
    busy.clear();
    for (size_t j : overlapping) busy.emplace_back(offsets[j], offsets[j] + requests[j].bytes);
    // The lowest offset where r fits between them.
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [begin, stop] : busy) {
      if (begin >= offset + r.bytes) break;
      offset = std::max(offset, stop);
    }
    offsets[i] = offset;
    total = std::max(total, offset + r.bytes);
    placed.Set(i, r.release);
  }
  return total;
}

}  // namespace hetpass::runtime
