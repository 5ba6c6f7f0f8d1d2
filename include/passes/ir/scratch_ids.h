// Dense ids for a pass's own arrays, kept on the IR objects (Value::scratch, Node::scratch).
//
// Passes over 100k-binding modules spent much of their time in hash maps keyed by Value* or
// Node* (a cache miss per lookup, a node allocation per entry). ScratchIds numbers the objects a
// pass works on, 0..n-1 in the order Number is called, writing each number into the object, so
// per-object facts live in vectors indexed by Id(object).
//
// The numbers survive the pass on the objects; another pass overwrites them. Id checks the
// number against its own table, so an object this numbering did not number (or numbered and
// another numbering renumbered since) answers -1 rather than another object's id. Two
// numberings of the same objects must therefore not be used at once: only a pass's own
// top-level code numbers, never a helper it calls. The verifier numbers the values it checks,
// so it too must not run on a module that another thread numbers (or verifies) at the time.
#ifndef HETPASS_IR_SCRATCH_IDS_H_
#define HETPASS_IR_SCRATCH_IDS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace hetpass {

template <typename T>  // Value or Node
class ScratchIds {
 public:
  // Gives `x` the next id and returns it.
  int Number(const T* x) {
    x->set_scratch(static_cast<uint32_t>(items_.size()));
    items_.push_back(x);
    return static_cast<int>(items_.size()) - 1;
  }
  // `x`'s id, or -1 when this numbering did not give it one.
  int Id(const T* x) const {
    const uint32_t s = x->scratch();
    return s < items_.size() && items_[s] == x ? static_cast<int>(s) : -1;
  }
  bool Contains(const T* x) const { return Id(x) >= 0; }
  int size() const { return static_cast<int>(items_.size()); }
  const T* operator[](int id) const { return items_[id]; }
  void Clear() { items_.clear(); }
  void Reserve(size_t n) { items_.reserve(n); }

 private:
  std::vector<const T*> items_;
};

// Items grouped by id (the uses of each value, say): added in any order while collecting, then
// bucketed once by Build, and read back per id in the order they were added. One allocation
// for all ids instead of a vector per id.
template <typename Item>
class IdBuckets {
 public:
  // An id below 0 (an object the numbering does not know, ScratchIds::Id's -1) is ignored.
  void Add(int id, Item item) {
    if (id >= 0) added_.emplace_back(id, std::move(item));
  }
  // Buckets what was added, for ids 0..ids-1 (every added id must be below `ids`).
  void Build(int ids) {
    begin_.assign(static_cast<size_t>(ids) + 1, 0);
    for (const auto& [id, item] : added_) ++begin_[id + 1];
    for (size_t i = 1; i < begin_.size(); ++i) begin_[i] += begin_[i - 1];
    std::vector<int> next(begin_.begin(), begin_.end() - 1);
    items_.clear();
    items_.resize(added_.size());
    for (auto& [id, item] : added_) items_[next[id]++] = std::move(item);
    added_ = {};
  }
  // The items of `id` (none for an id out of range, -1 included).
  absl::Span<const Item> Of(int id) const {
    if (id < 0 || static_cast<size_t>(id) + 1 >= begin_.size()) return {};
    return absl::MakeConstSpan(items_.data() + begin_[id], begin_[id + 1] - begin_[id]);
  }

 private:
  std::vector<std::pair<int, Item>> added_;
  std::vector<int> begin_;
  std::vector<Item> items_;
};

}  // namespace hetpass

#endif  // HETPASS_IR_SCRATCH_IDS_H_
