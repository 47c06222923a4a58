#include "telemetry/line_budget.h"

#include <limits>

#include "base/check.h"

namespace xb::telemetry {

LineBudget::LineBudget(Options options)
    : options_(options), window_(std::numeric_limits<int64_t>::min()) {
  XB_CHECK(options_.interval > Clock::duration::zero());
}

bool LineBudget::Admit(Clock::time_point now) {
  const int64_t window = now.time_since_epoch() / options_.interval;
  int64_t seen = window_.load(std::memory_order_relaxed);
  while (window > seen) {
    // One thread opens the window and restarts its count. A thread that already counted against
    // the old window in between is at worst refused once too often: a count, never a lost line.
    if (window_.compare_exchange_weak(seen, window, std::memory_order_relaxed)) {
      admitted_.store(0, std::memory_order_relaxed);
      break;
    }
  }
  // Past the budget the count is only read, so a flood makes the workers share the line rather
  // than bounce it between them on every refusal.
  if (admitted_.load(std::memory_order_relaxed) < options_.lines_per_interval &&
      admitted_.fetch_add(1, std::memory_order_relaxed) < options_.lines_per_interval) {
    return true;
  }
  suppressed_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace xb::telemetry
