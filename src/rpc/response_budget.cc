#include "rpc/response_budget.h"

#include <algorithm>
#include <vector>

namespace xb::rpc {

uint64_t ResponseBudget::held_by(const void* connection) const {
  auto it = by_connection_.find(connection);
  return it == by_connection_.end() ? 0 : it->second;
}

bool ResponseBudget::Fits(const void* connection, uint64_t bytes, uint64_t caller_holds) const {
  const uint64_t mine = held_by(connection);
  // Alone, a reservation always fits: a bound below one response must not refuse every request.
  const bool worker_ok =
      limits_.worker_bytes == 0 || held_ <= caller_holds || held_ + bytes <= limits_.worker_bytes;
  const bool connection_ok = limits_.connection_bytes == 0 || mine <= caller_holds ||
                             mine + bytes <= limits_.connection_bytes;
  return worker_ok && connection_ok;
}

bool ResponseBudget::TryTakeNow(const void* connection, uint64_t bytes, uint64_t caller_holds) {
  const bool alone = held_ <= caller_holds;
  if ((!waiters_.empty() && !alone) || !Fits(connection, bytes, caller_holds)) {
    return false;
  }
  Take(connection, bytes);
  return true;
}

void ResponseBudget::Take(const void* connection, uint64_t bytes) {
  held_ += bytes;
  by_connection_[connection] += bytes;
}

bool ResponseBudget::TryTake(const void* connection, uint64_t bytes, std::weak_ptr<Waiter> waiter) {
  // Waiters go first: a newcomer does not overtake a reservation already waiting.
  if (waiters_.empty() && Fits(connection, bytes)) {
    Take(connection, bytes);
    return true;
  }
  if (!waiter.expired()) {
    waiters_.push_back(Queued{connection, bytes, std::move(waiter)});
  }
  return false;
}

bool ResponseBudget::Withdraw(const Waiter* waiter) {
  auto it = std::find_if(waiters_.begin(), waiters_.end(), [waiter](const Queued& q) {
    auto locked = q.waiter.lock();
    return locked.get() == waiter;
  });
  if (it == waiters_.end()) {
    return false;
  }
  waiters_.erase(it);
  return true;
}

void ResponseBudget::Give(const void* connection, uint64_t bytes) {
  auto it = by_connection_.find(connection);
  if (it != by_connection_.end()) {
    const uint64_t given = std::min(bytes, it->second);
    it->second -= given;
    held_ -= std::min(given, held_);
    if (it->second == 0) {
      by_connection_.erase(it);
    }
  }
  // Grant in order; one that does not fit yet keeps its place, and so does everyone behind it
  // on the same connection (a connection's reservations stay in order).
  std::vector<std::pair<std::shared_ptr<Waiter>, uint64_t>> granted;
  std::vector<const void*> blocked;
  for (auto q = waiters_.begin(); q != waiters_.end();) {
    auto waiter = q->waiter.lock();
    if (!waiter) {
      q = waiters_.erase(q);
      continue;
    }
    const bool behind = std::find(blocked.begin(), blocked.end(), q->connection) != blocked.end();
    if (!behind && Fits(q->connection, q->bytes)) {
      Take(q->connection, q->bytes);
      granted.emplace_back(std::move(waiter), q->bytes);
      q = waiters_.erase(q);
      continue;
    }
    blocked.push_back(q->connection);
    if (limits_.worker_bytes != 0 && held_ >= limits_.worker_bytes) {
      break;  // nothing else fits the worker
    }
    ++q;
  }
  for (auto& [waiter, granted_bytes] : granted) {
    waiter->OnGranted(granted_bytes);
  }
}

}  // namespace xb::rpc
