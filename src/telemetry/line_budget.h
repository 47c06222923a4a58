// LineBudget: how many lines of one kind the log takes per interval, and a count of those it
// refused, so that an event a client can cause at will costs a bounded amount of log (issue 28,
// log amplification). The caller writes the lines Admit accepts; the lines it refuses are
// summarised by the count TakeSuppressed hands back once (a summary line, a metric).
//
// Intervals are fixed windows of the steady clock (floor(now / interval)), so a burst straddling
// two windows may write up to twice the budget within one interval's time.
//
// Thread-safety: every method may be called from any thread concurrently. Admit is lock-free (a
// few relaxed atomics on one cache line) and never allocates. The caller passes the time, which
// it usually has at hand already; a test passes whatever times it likes. Nothing suspends.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace xb::telemetry {

class LineBudget {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    uint64_t lines_per_interval = 0;                      // 0: every line is refused (and counted)
    Clock::duration interval = std::chrono::seconds(10);  // must be positive
  };

  explicit LineBudget(Options options);
  LineBudget(const LineBudget&) = delete;
  LineBudget& operator=(const LineBudget&) = delete;

  // True when the caller may write its line at `now`: fewer than lines_per_interval lines were
  // admitted in now's window. False: the line is refused and counted. A caller whose `now` is
  // older than the window another thread already opened counts against that newer window.
  bool Admit(Clock::time_point now);

  // The lines refused since the previous call (each refusal is handed back exactly once, across
  // all threads); 0 when none were.
  uint64_t TakeSuppressed() { return suppressed_.exchange(0, std::memory_order_relaxed); }

  const Options& options() const { return options_; }

 private:
  const Options options_;  // const after construction

  alignas(64) std::atomic<int64_t> window_;  // the current window's number
  std::atomic<uint64_t> admitted_{0};        // lines admitted in it (may run past the budget)
  std::atomic<uint64_t> suppressed_{0};      // refusals not yet taken
};

}  // namespace xb::telemetry
