// The tailer's unresolved sequence id ranges (STORE.md 5.3, ARC-042): inclusive [low, high]
// ranges in an ordered map, never one entry per missing id. Single-threaded (the tailer's).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "store/store.h"

namespace xb::fanout {

class GapSet {
 public:
  // Adds [low, high] (low <= high), merging with touching or overlapping ranges.
  void Add(int64_t low, int64_t high);
  // Subtracts [low, high]; ranges split where needed.
  void Subtract(int64_t low, int64_t high);
  void Clear() { ranges_.clear(); }

  size_t size() const { return ranges_.size(); }
  bool empty() const { return ranges_.empty(); }
  // Every range, ascending.
  std::vector<store::IdRange> Ranges() const;
  // The greatest id in any range; 0 when empty.
  int64_t highest() const { return ranges_.empty() ? 0 : ranges_.rbegin()->second; }

 private:
  std::map<int64_t, int64_t> ranges_;  // low -> high, disjoint, not touching
};

}  // namespace xb::fanout
