// Min-cut by Dinic's max-flow (BFS levels + blocking flow by DFS with current-arc pointers).
// Graph: source (host), sink (accelerator), one vertex per free problem node, at most two per
// value (see the header for the construction). The host side of the minimum cut is the set of
// vertices reachable from the source in the residual graph.
//
// The construction is reduced before the flow runs, without changing the cut value of any
// assignment of the problem's nodes (so the same minimal source side is found):
//   - fixed nodes are the source or the sink themselves (an infinite edge ties them anyway);
//   - an edge out of the sink or into the source never carries flow, and one from the source
//     to the sink is a constant: neither is added;
//   - a value's gadget vertex `a` (pays if the producer is host and some consumer accelerator)
//     with the sink among its consumers sits on the sink side in every finite cut, so it is
//     the single edge producer -> sink; with one other consumer u it is the edge producer -> u.
//     Symmetrically for `b` with the source among the consumers, or one consumer;
//   - the two single edges of a value with one consumer are one pair of opposite arcs.
// On bench/scale's 100k-op model the solver went from 170 to 57 ms with these reductions.
#include "passes/device_planner/two_device_cut.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"

namespace hetpass {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

// The graph is built once (AddEdge), then frozen into compressed adjacency arrays (Finish):
// one allocation per array instead of one vector per vertex, which at 100k bindings was most
// of the solver's time.
class MaxFlow {
 public:
  // `edges`: how many AddEdge calls follow (the arrays are sized once).
  MaxFlow(int n, size_t edges) : n_(n), level_(n), next_(n) {
    from_.reserve(2 * edges);
    edges_.reserve(2 * edges);
  }

  // An arc from -> to of capacity `cap`, and its reverse of capacity `back` (0: a plain
  // residual arc; `cap`: an undirected edge).
  void AddEdge(int from, int to, int64_t cap, int64_t back = 0) {
    from_.push_back(from);
    edges_.push_back(Edge{to, cap});
    from_.push_back(to);
    edges_.push_back(Edge{from, back});
  }

  int64_t Run(int s, int t) {
    Finish();
    int64_t flow = 0;
    while (Bfs(s, t)) {
      for (int v = 0; v < n_; ++v) next_[v] = start_[v];
      flow += BlockingFlow(s, t);
    }
    return flow;
  }

  // Vertices reachable from s in the residual graph (after Run).
  std::vector<bool> SourceSide(int s) const {
    std::vector<bool> seen(n_, false);
    std::vector<int> stack = {s};
    seen[s] = true;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (int i = start_[v]; i < start_[v + 1]; ++i) {
        const Edge& e = edges_[order_[i]];
        if (e.cap > 0 && !seen[e.to]) {
          seen[e.to] = true;
          stack.push_back(e.to);
        }
      }
    }
    return seen;
  }

 private:
  struct Edge {
    int to;
    int64_t cap;
  };

  // Counting sort of the edge ids by their tail vertex (ids keep insertion order per vertex,
  // so the search order, and with it the cut chosen among equal ones, is that of the edges).
  void Finish() {
    start_.assign(n_ + 1, 0);
    for (int f : from_) ++start_[f + 1];
    for (int v = 0; v < n_; ++v) start_[v + 1] += start_[v];
    order_.resize(edges_.size());
    std::vector<int> fill(start_.begin(), start_.end() - 1);
    for (size_t e = 0; e < from_.size(); ++e) order_[fill[from_[e]]++] = static_cast<int>(e);
    from_.clear();
    from_.shrink_to_fit();
  }

  bool Bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    queue_.clear();
    level_[s] = 0;
    queue_.push_back(s);
    for (size_t head = 0; head < queue_.size(); ++head) {
      const int v = queue_[head];
      for (int i = start_[v]; i < start_[v + 1]; ++i) {
        const Edge& e = edges_[order_[i]];
        if (e.cap > 0 && level_[e.to] < 0) {
          level_[e.to] = level_[v] + 1;
          queue_.push_back(e.to);
        }
      }
    }
    return level_[t] >= 0;
  }

  // Augmenting paths along the level graph, found by an explicit-stack DFS with current-arc
  // pointers: paths can be as long as the network (a chain of residual adds whose sides the
  // cut decides is one path), too deep to recurse on a thread's stack.
  int64_t BlockingFlow(int s, int t) {
    int64_t total = 0;
    path_.clear();
    int v = s;
    while (true) {
      if (v == t) {
        int64_t pushed = kInf;
        for (int id : path_) pushed = std::min(pushed, edges_[id].cap);
        size_t keep = path_.size();
        for (size_t k = 0; k < path_.size(); ++k) {
          edges_[path_[k]].cap -= pushed;
          edges_[path_[k] ^ 1].cap += pushed;
          if (edges_[path_[k]].cap == 0 && keep == path_.size()) keep = k;
        }
        total += pushed;
        // Resume from the tail of the first saturated arc.
        path_.resize(keep);
        v = path_.empty() ? s : edges_[path_.back()].to;
        continue;
      }
      int& i = next_[v];
      while (i < start_[v + 1]) {
        const Edge& e = edges_[order_[i]];
        if (e.cap > 0 && level_[e.to] == level_[v] + 1) break;
        ++i;
      }
      if (i < start_[v + 1]) {
        path_.push_back(order_[i]);
        v = edges_[order_[i]].to;
        continue;
      }
      // A dead end: retreat one arc and skip it from now on.
      if (path_.empty()) break;
      level_[v] = -1;
      path_.pop_back();
      v = path_.empty() ? s : edges_[path_.back()].to;
      ++next_[v];
    }
    return total;
  }

  int n_;
  std::vector<int> from_;   // tail vertex of each edge, until Finish
  std::vector<Edge> edges_;  // edge 2k and 2k+1 are each other's reverse
  std::vector<int> start_;   // edges of vertex v: order_[start_[v] .. start_[v+1])
  std::vector<int> order_;
  std::vector<int> level_;
  std::vector<int> next_;
  std::vector<int> queue_;
  std::vector<int> path_;  // arc ids from the source, during BlockingFlow
};

}  // namespace

int64_t CutCost(const CutProblem& problem, const std::vector<int8_t>& side) {
  int64_t total = 0;
  for (const CutProblem::Value& v : problem.values) {
    for (int u : v.consumers) {
      if (side[u] != side[v.producer]) {
        total += v.bytes;
        break;
      }
    }
  }
  return total;
}

absl::StatusOr<CutSolution> SolveTwoDeviceCut(const CutProblem& problem) {
  const int n = static_cast<int>(problem.fixed.size());
  if (!problem.host_penalty.empty() && static_cast<int>(problem.host_penalty.size()) != n) {
    return absl::InvalidArgumentError("host_penalty must have one entry per node");
  }
  int64_t penalties = 0;
  for (int64_t p : problem.host_penalty) {
    if (p < 0) return absl::InvalidArgumentError("host penalties must be non-negative");
    penalties += p;
  }
  // Scale bytes so that all tie-breaking penalties together stay below one byte.
  const int64_t scale = penalties + 1;
  for (const CutProblem::Value& v : problem.values) {
    if (v.producer < 0 || v.producer >= n) {
      return absl::InvalidArgumentError(absl::StrFormat("value producer %d out of range", v.producer));
    }
    if (v.bytes < 0) return absl::InvalidArgumentError("value bytes must be non-negative");
    if (v.bytes > kInf / scale / 4) {
      return absl::OutOfRangeError(absl::StrFormat("value of %d bytes overflows the cut", v.bytes));
    }
    for (int u : v.consumers) {
      if (u < 0 || u >= n) return absl::InvalidArgumentError(absl::StrFormat("consumer %d out of range", u));
    }
  }
  const int source = n, sink = n + 1;
  // Graph vertex of each node: the source or the sink for fixed nodes.
  std::vector<int> vertex(n);
  for (int i = 0; i < n; ++i) {
    vertex[i] = problem.fixed[i] == CutProblem::kHost    ? source
                : problem.fixed[i] == CutProblem::kAccel ? sink
                                                         : i;
  }
  // One side of a value's construction: nothing, one arc from -> to, or a gadget vertex
  // (`to` or `from` kGadget) joined to each of the value's consumer vertices.
  constexpr int kNone = -2, kGadget = -1;
  struct Side {
    int from = kNone;
    int to = kNone;
    bool gadget() const { return from == kGadget || to == kGadget; }
  };
  struct Planned {
    int64_t w;
    Side a, b;
    int begin, end;  // the value's consumer vertices in `consumers`
  };
  std::vector<int> consumers;  // distinct consumer vertices other than the producer's, per value
  std::vector<Planned> planned;
  planned.reserve(problem.values.size());
  // `a` pays when the producer is host and some consumer accelerator (toward = true); `b`
  // when the producer is accelerator and some consumer host.
  const auto plan_side = [&](int producer, bool toward, int begin, int end) {
    const int same = toward ? source : sink;  // consumers that never differ from the producer
    const int settles = toward ? sink : source;
    int count = 0, only = kNone;
    for (int k = begin; k < end; ++k) {
      const int u = consumers[k];
      if (u == same) continue;
      if (u == settles) return toward ? Side{producer, sink} : Side{source, producer};
      ++count;
      only = u;
    }
    if (count == 0) return Side{};
    const int other = count == 1 ? only : kGadget;
    return toward ? Side{producer, other} : Side{other, producer};
  };
  size_t edges = 0;
  int gadgets = 0;
  for (const CutProblem::Value& v : problem.values) {
    if (v.bytes == 0) continue;
    const int p = vertex[v.producer];
    const int begin = static_cast<int>(consumers.size());
    for (int u : v.consumers) {
      const int x = vertex[u];
      if (x != p && std::find(consumers.begin() + begin, consumers.end(), x) == consumers.end()) {
        consumers.push_back(x);
      }
    }
    const int end = static_cast<int>(consumers.size());
    if (begin == end) continue;
    Planned plan{v.bytes * scale, Side{}, Side{}, begin, end};
    // No flow leaves the sink or enters the source; an arc from the source to the sink is a
    // constant of every cut.
    if (p != sink) plan.a = plan_side(p, /*toward=*/true, begin, end);
    if (p != source) plan.b = plan_side(p, /*toward=*/false, begin, end);
    for (Side* side : {&plan.a, &plan.b}) {
      if (side->from == source && side->to == sink) *side = Side{};
      if (side->from == kNone) continue;
      gadgets += side->gadget();
      edges += side->gadget() ? 1 + (end - begin) : 1;
    }
    if (plan.a.from != kNone || plan.b.from != kNone) planned.push_back(plan);
  }
  const bool penalties_on = !problem.host_penalty.empty();
  for (int i = 0; i < n; ++i) {
    edges += problem.fixed[i] == CutProblem::kFree && penalties_on && problem.host_penalty[i] > 0;
  }
  MaxFlow flow(n + 2 + gadgets, edges);
  for (int i = 0; i < n; ++i) {
    if (problem.fixed[i] == CutProblem::kFree && penalties_on && problem.host_penalty[i] > 0) {
      flow.AddEdge(i, sink, problem.host_penalty[i]);
    }
  }
  int next_vertex = n + 2;
  for (const Planned& plan : planned) {
    const Side& a = plan.a;
    const Side& b = plan.b;
    if (!a.gadget() && !b.gadget() && a.from != kNone && a.from == b.to && a.to == b.from) {
      flow.AddEdge(a.from, a.to, plan.w, plan.w);  // one consumer: an undirected edge
      continue;
    }
    for (bool toward : {true, false}) {
      const Side& side = toward ? a : b;
      if (side.from == kNone) continue;
      if (!side.gadget()) {
        flow.AddEdge(side.from, side.to, plan.w);
        continue;
      }
      const int g = next_vertex++;
      const int same = toward ? source : sink;
      if (toward) {
        flow.AddEdge(side.from, g, plan.w);
      } else {
        flow.AddEdge(g, side.to, plan.w);
      }
      for (int k = plan.begin; k < plan.end; ++k) {
        const int u = consumers[k];
        if (u == same) continue;
        if (toward) {
          flow.AddEdge(g, u, kInf);
        } else {
          flow.AddEdge(u, g, kInf);
        }
      }
    }
  }
  flow.Run(source, sink);
  const std::vector<bool> host = flow.SourceSide(source);
  CutSolution solution;
  solution.side.resize(n);
  for (int i = 0; i < n; ++i) {
    solution.side[i] = problem.fixed[i] != CutProblem::kFree
                           ? problem.fixed[i]
                           : (host[i] ? CutProblem::kHost : CutProblem::kAccel);
  }
  solution.bytes_moved = CutCost(problem, solution.side);
  return solution;
}

}  // namespace hetpass
