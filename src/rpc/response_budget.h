// Response memory (issue 28): the bytes a worker's calls hold for responses they are building or
// that their readers have not taken yet, and for request bodies over 64 KiB until their call ends,
// bounded per worker (its share of limits.max_response_memory_bytes) and per connection
// (limits.max_connection_response_bytes). A handler reserves its worst case before it reads the
// store, keeps what the response really holds once encoded, and the call gives the rest back when
// its response completes or is reset. A reservation that does not fit waits, first come first
// served, until it fits, the call ends, or the wait bound passes (then RESOURCE_EXHAUSTED). One
// reservation alone always fits, so a single response larger than a bound is still served.
//
// Threading: one per worker, used only on that worker's thread; no locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

namespace xb::rpc {

class ResponseBudget {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    uint64_t worker_bytes = 0;      // 0: unbounded
    uint64_t connection_bytes = 0;  // 0: unbounded
    Clock::duration max_wait = std::chrono::seconds(10);
  };

  // Told when a waiting reservation was granted: from then on it holds `bytes` and must Give them
  // back.
  class Waiter {
   public:
    virtual ~Waiter() = default;
    virtual void OnGranted(uint64_t bytes) = 0;
  };

  explicit ResponseBudget(Limits limits) : limits_(limits) {}

  const Limits& limits() const { return limits_; }
  uint64_t held() const { return held_; }
  uint64_t held_by(const void* connection) const;
  size_t waiting() const { return waiters_.size(); }

  // Takes `bytes` for `connection` when they fit now (or nothing else is held): true. Otherwise
  // queues `waiter` (unless null) and returns false; OnGranted is called once they are taken.
  bool TryTake(const void* connection, uint64_t bytes, std::weak_ptr<Waiter> waiter);
  // For bytes that cannot wait (a request body as it arrives): takes `bytes` for `connection`
  // when they fit now and no reservation is waiting, never queues. `caller_holds` is what the
  // asking call already holds here: a call that is the only holder of its worker and connection
  // always fits, so a bound below one request refuses only requests beside others.
  bool TryTakeNow(const void* connection, uint64_t bytes, uint64_t caller_holds);
  // Withdraws a queued reservation (its call ended or gave up). False when it was granted
  // meanwhile (the caller then holds the bytes and must Give them back).
  bool Withdraw(const Waiter* waiter);
  // Returns `bytes` taken for `connection`, and grants what now fits to the waiters in order.
  void Give(const void* connection, uint64_t bytes);

 private:
  bool Fits(const void* connection, uint64_t bytes, uint64_t caller_holds = 0) const;
  void Take(const void* connection, uint64_t bytes);

  struct Queued {
    const void* connection;
    uint64_t bytes;
    std::weak_ptr<Waiter> waiter;
  };

  Limits limits_;
  uint64_t held_ = 0;
  std::unordered_map<const void*, uint64_t> by_connection_;
  std::deque<Queued> waiters_;
};

}  // namespace xb::rpc
