// Background work runs below the I/O threads. A worker thread answers every call of its
// connections, so a cheap call (GetConfiguration, a small Publish) waits for it; the DB pool and
// CPU pool run the expensive parts (reading and encoding a 24 MB page, checking signatures). When
// the process has less CPU than its load wants, the scheduler then gives the I/O threads their
// turn first, and a client with expensive calls in flight slows its own calls, not everyone's
// (issue 28: a good client's p99 while another reads 24 MB pages).
//
// A lower priority alone is not enough: a kernel with lazy preemption (PREEMPT_LAZY, the default
// of recent kernels) lets a running fair-class thread finish its slice or reach the next tick
// before a woken one of higher weight runs, so an I/O thread woken by a request waited up to a
// tick (4 ms at HZ=250) behind a pool thread copying a page. Pool threads therefore also offer
// the CPU themselves every kPoolThreadTurn (OfferPoolThreadTurn, AppendInTurns) at the points
// where they copy payloads: a row read, a row encoded, every piece of a large copy.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

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

// How long a pool thread runs before it offers the CPU to a waiting thread: what a woken I/O
// thread waits at most behind one pool thread (a yield with nothing waiting costs a system call,
// at most one per turn).
inline constexpr std::chrono::microseconds kPoolThreadTurn{100};

// On a pool thread (one that called LowerPoolThreadPriorityOnce): yields the CPU (sched_yield)
// when the thread has run kPoolThreadTurn since it last did, and returns whether it did.
// Elsewhere: nothing, false.
bool OfferPoolThreadTurn();

// out.append(bytes), in pieces with OfferPoolThreadTurn between them: copying a 1 MB payload into
// fresh pages takes a pool thread about a millisecond.
void AppendInTurns(std::string& out, std::string_view bytes);

// std::string(bytes), copied as AppendInTurns copies.
std::string CopyInTurns(std::string_view bytes);

}  // namespace xb
