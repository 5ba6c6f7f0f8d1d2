// The liveness lower bound of a run from its memory events (see memory_trace.h).
#include "vm/memory_trace.h"

#include <algorithm>

namespace hetpass::vm {

int64_t MemoryTrace::LowerBound(DeviceKind device) const {
  std::vector<uintptr_t> cuts;
  for (const Event& e : events_) {
    if (e.device != device) continue;
    cuts.push_back(e.begin);
    cuts.push_back(e.end);
  }
  if (cuts.empty()) return 0;
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const size_t segments = cuts.size() - 1;
  const int64_t end_time = time_ + 1;
  // Per segment: the value open now ([start, last]) and the union interval not yet added to
  // the difference array ([pending_start, pending_last]), which absorbs values that touch it.
  struct Segment {
    int64_t start = -1, last = -1;
    int64_t pending_start = -1, pending_last = -1;
  };
  std::vector<Segment> seg(segments);
  std::vector<int64_t> diff(static_cast<size_t>(end_time) + 2, 0);
  auto flush = [&](size_t i) {
    Segment& s = seg[i];
    if (s.pending_start < 0) return;
    const int64_t bytes = static_cast<int64_t>(cuts[i + 1] - cuts[i]);
    diff[s.pending_start] += bytes;
    diff[s.pending_last + 1] -= bytes;
    s.pending_start = s.pending_last = -1;
  };
  auto close = [&](size_t i) {
    Segment& s = seg[i];
    if (s.start < 0) return;
    if (s.pending_start >= 0 && s.start <= s.pending_last) {
      s.pending_last = std::max(s.pending_last, s.last);
    } else {
      flush(i);
      s.pending_start = s.start;
      s.pending_last = s.last;
    }
    s.start = s.last = -1;
  };
  for (const Event& e : events_) {
    if (e.device != device) continue;
    const size_t lo = std::lower_bound(cuts.begin(), cuts.end(), e.begin) - cuts.begin();
    const size_t hi = std::lower_bound(cuts.begin(), cuts.end(), e.end) - cuts.begin();
    for (size_t i = lo; i < hi; ++i) {
      Segment& s = seg[i];
      switch (e.kind) {
        case kWrite:
          close(i);
          s.start = s.last = e.time;
          break;
        case kRead:
          if (s.start < 0) s.start = 0;  // a value from before the run (an argument)
          s.last = std::max(s.last, e.time);
          break;
        case kPersistent:
          close(i);
          s.start = 0;
          s.last = end_time;
          break;
      }
    }
  }
  for (size_t i = 0; i < segments; ++i) {
    close(i);
    flush(i);
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : diff) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace hetpass::vm
