// Background work runs below the I/O threads. A worker thread answers every call of its
// connections, so a cheap call (GetConfiguration, a small Publish) waits for it; the DB pool and
// CPU pool run the expensive parts (reading and encoding a 24 MB page, checking signatures). When
// the process has less CPU than its load wants, the scheduler then gives the I/O threads their
// turn first, and a client with expensive calls in flight slows its own calls, not everyone's
// (issue 28: a good client's p99 while another reads 24 MB pages).
#pragma once

namespace xb {

// Nice levels a pool thread runs below the thread that started the process: a pool thread then
// has about a third of an I/O thread's weight under Linux's fair scheduler (1024 vs 335), so it
// is never starved, only preempted.
inline constexpr int kPoolThreadNiceSteps = 5;

// The calling thread's nice value (Linux: per thread).
int ThisThreadNice();

// The nice value a pool thread started from `base` runs at (19 is the lowest priority).
constexpr int PoolThreadNice(int base) {
  return base + kPoolThreadNiceSteps < 19 ? base + kPoolThreadNiceSteps : 19;
}

// Lowers the calling thread's priority by kPoolThreadNiceSteps, once per thread; later calls do
// nothing. Linux applies nice per thread. Lowering needs no privilege; a failure (a container
// that forbids setpriority) leaves the thread as it was.
void LowerPoolThreadPriorityOnce();

}  // namespace xb
