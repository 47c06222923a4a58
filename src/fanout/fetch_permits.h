// Fetch permits (ARCHITECTURE.md 6): bound how many catch-up reads all sessions run at once, so
// streams catching up cannot take every pooled connection from unary requests. First come, first
// served; a released permit goes straight to the oldest waiter.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace xb::fanout {

class FetchPermits {
 public:
  // A session's place in the queue. `wake` must be thread-safe (posts to the session's executor).
  class Ticket {
   public:
    explicit Ticket(std::function<void()> wake) : wake_(std::move(wake)) {}
    bool granted() const;

   private:
    friend class FetchPermits;
    std::function<void()> wake_;
    bool granted_ = false;    // guarded by FetchPermits::mu_
    bool cancelled_ = false;  // guarded by FetchPermits::mu_
    FetchPermits* owner_ = nullptr;
  };

  explicit FetchPermits(size_t permits) : available_(permits) {}

  // Takes a permit now (the returned ticket is granted) or queues a ticket that is granted later,
  // calling its wake function then.
  std::shared_ptr<Ticket> Acquire(std::function<void()> wake);
  // Gives back a granted ticket's permit, or withdraws a waiting one.
  void Release(const std::shared_ptr<Ticket>& ticket);

 private:
  mutable std::mutex mu_;
  size_t available_;
  std::deque<std::shared_ptr<Ticket>> waiting_;
};

}  // namespace xb::fanout
