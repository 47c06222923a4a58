#include "fanout/gap_set.h"

#include <algorithm>

namespace xb::fanout {

void GapSet::Add(int64_t low, int64_t high) {
  if (low > high) {
    return;
  }
  // The first range that could touch [low, high]: the one starting at or before low, if it
  // reaches low - 1.
  auto it = ranges_.upper_bound(low);
  if (it != ranges_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= low - 1) {
      it = prev;
    }
  }
  // Ranges starting at or before high + 1 touch [low, high] (no overflow past INT64_MAX).
  const int64_t reach = high == INT64_MAX ? high : high + 1;
  while (it != ranges_.end() && it->first <= reach) {
    low = std::min(low, it->first);
    high = std::max(high, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(low, high);
}

void GapSet::Subtract(int64_t low, int64_t high) {
  if (low > high) {
    return;
  }
  auto it = ranges_.upper_bound(low);
  if (it != ranges_.begin()) {
    --it;
  }
  while (it != ranges_.end() && it->first <= high) {
    const int64_t r_low = it->first;
    const int64_t r_high = it->second;
    if (r_high < low) {
      ++it;
      continue;
    }
    it = ranges_.erase(it);
    if (r_low < low) {
      ranges_.emplace(r_low, low - 1);
    }
    if (r_high > high) {
      ranges_.emplace(high + 1, r_high);
      break;
    }
  }
}

std::vector<store::IdRange> GapSet::Ranges() const {
  std::vector<store::IdRange> out;
  out.reserve(ranges_.size());
  for (const auto& [low, high] : ranges_) {
    out.push_back(store::IdRange{low, high});
  }
  return out;
}

}  // namespace xb::fanout
