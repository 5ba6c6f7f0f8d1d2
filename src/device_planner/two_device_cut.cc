// Min-cut by Dinic's max-flow (BFS levels + blocking flow by DFS with current-arc pointers).
// Graph: source (host), sink (accelerator), one vertex per problem node, two per value with
// consumers on a possibly different side (see the header for the construction). The host side
// of the minimum cut is the set of vertices reachable from the source in the residual graph.
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

  void AddEdge(int from, int to, int64_t cap) {
    from_.push_back(from);
    edges_.push_back(Edge{to, cap});
    from_.push_back(to);
    edges_.push_back(Edge{from, 0});
  }

  int64_t Run(int s, int t) {
    Finish();
    int64_t flow = 0;
    while (Bfs(s, t)) {
      for (int v = 0; v < n_; ++v) next_[v] = start_[v];
      while (int64_t f = Dfs(s, t, kInf)) flow += f;
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

  // Iterative DFS would avoid deep recursion; path lengths here are short (bounded by the
  // number of BFS levels, at most 4 hops per value chain), so recursion depth stays small.
  int64_t Dfs(int v, int t, int64_t pushed) {
    if (v == t) return pushed;
    for (int& i = next_[v]; i < start_[v + 1]; ++i) {
      const int id = order_[i];
      Edge& e = edges_[id];
      if (e.cap <= 0 || level_[e.to] != level_[v] + 1) continue;
      const int64_t got = Dfs(e.to, t, std::min(pushed, e.cap));
      if (got > 0) {
        e.cap -= got;
        edges_[id ^ 1].cap += got;
        return got;
      }
    }
    return 0;
  }

  int n_;
  std::vector<int> from_;   // tail vertex of each edge, until Finish
  std::vector<Edge> edges_;  // edge 2k and 2k+1 are each other's reverse
  std::vector<int> start_;   // edges of vertex v: order_[start_[v] .. start_[v+1])
  std::vector<int> order_;
  std::vector<int> level_;
  std::vector<int> next_;
  std::vector<int> queue_;
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
  int next_vertex = n + 2;
  // Two edges per cut value and two per other consumer, one per fixed or penalised node.
  size_t edges = static_cast<size_t>(n);
  for (const CutProblem::Value& v : problem.values) edges += 2 + 2 * v.consumers.size();
  MaxFlow flow(n + 2 + 2 * static_cast<int>(problem.values.size()), edges);
  for (int i = 0; i < n; ++i) {
    if (problem.fixed[i] == CutProblem::kHost) flow.AddEdge(source, i, kInf);
    if (problem.fixed[i] == CutProblem::kAccel) flow.AddEdge(i, sink, kInf);
    if (problem.fixed[i] == CutProblem::kFree && !problem.host_penalty.empty() &&
        problem.host_penalty[i] > 0) {
      flow.AddEdge(i, sink, problem.host_penalty[i]);
    }
  }
  for (const CutProblem::Value& v : problem.values) {
    bool any_other = false;
    for (int u : v.consumers) any_other |= (u != v.producer);
    if (!any_other || v.bytes == 0) continue;
    const int64_t w = v.bytes * scale;
    const int a = next_vertex++, b = next_vertex++;
    flow.AddEdge(v.producer, a, w);
    flow.AddEdge(b, v.producer, w);
    for (int u : v.consumers) {
      if (u == v.producer) continue;
      flow.AddEdge(a, u, kInf);
      flow.AddEdge(u, b, kInf);
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
