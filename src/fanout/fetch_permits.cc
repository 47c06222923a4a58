#include "fanout/fetch_permits.h"

namespace xb::fanout {

bool FetchPermits::Ticket::granted() const {
  std::lock_guard lock(owner_->mu_);
  return granted_;
}

std::shared_ptr<FetchPermits::Ticket> FetchPermits::Acquire(std::function<void()> wake) {
  auto ticket = std::make_shared<Ticket>(std::move(wake));
  ticket->owner_ = this;
  std::lock_guard lock(mu_);
  if (available_ > 0 && waiting_.empty()) {
    --available_;
    ticket->granted_ = true;
  } else {
    waiting_.push_back(ticket);
  }
  return ticket;
}

void FetchPermits::Release(const std::shared_ptr<Ticket>& ticket) {
  std::shared_ptr<Ticket> next;
  {
    std::lock_guard lock(mu_);
    if (!ticket->granted_) {
      ticket->cancelled_ = true;  // still queued: skipped when its turn comes
      return;
    }
    ticket->granted_ = false;
    ticket->cancelled_ = true;
    while (!waiting_.empty()) {
      auto candidate = std::move(waiting_.front());
      waiting_.pop_front();
      if (!candidate->cancelled_) {
        candidate->granted_ = true;
        next = std::move(candidate);
        break;
      }
    }
    if (!next) {
      ++available_;
    }
  }
  if (next) {
    next->wake_();
  }
}

}  // namespace xb::fanout
