#pragma once
// The event queue of the engine. Every pipeline rank has at most one pending event at a time
// (its running step ends, its blocking send ends, or the input it waits for arrives), so the
// queue is an indexed binary min-heap over the ranks keyed by (time, rank): pp entries, with the
// key updated in place instead of queuing stale events.
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace parallax::detail {

class RankQueue {
 public:
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  explicit RankQueue(size_t ranks)
      : time_(ranks, kNone), type_(ranks, 0), heap_(ranks), pos_(ranks) {
    for (size_t i = 0; i < ranks; ++i) heap_[i] = pos_[i] = i;
  }

  // Sets rank r's pending event (replacing any).
  void set(size_t r, double t, int8_t type) {
    const double old = time_[r];
    time_[r] = t;
    type_[r] = type;
    if (t < old)
      up(pos_[r]);
    else
      down(pos_[r]);
  }

  bool empty() const { return heap_.empty() || time_[heap_[0]] == kNone; }
  size_t top() const { return heap_[0]; }
  double time(size_t r) const { return time_[r]; }
  int8_t type(size_t r) const { return type_[r]; }
  void clear(size_t r) { set(r, kNone, 0); }

 private:
  bool less(size_t a, size_t b) const {
    return time_[a] < time_[b] || (time_[a] == time_[b] && a < b);
  }
  void swap_at(size_t i, size_t j) {
    std::swap(heap_[i], heap_[j]);
    pos_[heap_[i]] = i;
    pos_[heap_[j]] = j;
  }
  void up(size_t i) {
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!less(heap_[i], heap_[parent])) return;
      swap_at(i, parent);
      i = parent;
    }
  }
  void down(size_t i) {
    const size_t n = heap_.size();
    for (;;) {
      const size_t l = 2 * i + 1, rgt = l + 1;
      size_t best = i;
      if (l < n && less(heap_[l], heap_[best])) best = l;
      if (rgt < n && less(heap_[rgt], heap_[best])) best = rgt;
      if (best == i) return;
      swap_at(i, best);
      i = best;
    }
  }

  std::vector<double> time_;
  std::vector<int8_t> type_;
  std::vector<size_t> heap_;  // rank at each heap slot
  std::vector<size_t> pos_;   // heap slot of each rank
};

}  // namespace parallax::detail
