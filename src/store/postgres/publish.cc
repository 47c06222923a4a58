#include "store/postgres/publish.h"

#include <sched.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "base/completion_scope.h"
#include "store/postgres/publish_transaction.h"

namespace xb::store::postgres {
namespace {

// The end of one request's lifetime: the earlier of its deadline (unless unset) and
// max_publish_duration_ms from now.
Clock::time_point EndOf(const CommitPublishRequest& request, const PublishBounds& bounds) {
  Clock::time_point end = Clock::now() + std::chrono::milliseconds(bounds.max_publish_duration_ms);
  if (request.deadline != Clock::time_point{} && request.deadline < end) {
    end = request.deadline;
  }
  return end;
}

// One attempt at running `requests` in one transaction ending at `end`.
BatchOutcome RunOnce(ConnectionPool& primary, const PublishBounds& bounds,
                     const std::vector<const CommitPublishRequest*>& requests,
                     Clock::time_point end) {
  auto lease = primary.Acquire(end);
  if (!lease.ok()) {
    return BatchFailure{.error = lease.error().ToStoreError(), .retry_alone = requests.size() > 1};
  }
  PublishTransaction transaction(*lease.value(), bounds.statement_timeout_ms, end);
  return transaction.Run(requests);
}

// Runs `requests` in one transaction ending at `end`. On a failure that is not one request's own,
// runs each request again alone (when nothing was committed), so one request's deadline or a
// transient error on a shared transaction costs no other request more than a retry.
std::vector<StoreResult<CommitPublishResult>> RunTransaction(
    ConnectionPool& primary, const PublishBounds& bounds,
    const std::vector<const CommitPublishRequest*>& requests, Clock::time_point end) {
  BatchOutcome outcome = RunOnce(primary, bounds, requests, end);
  if (outcome.ok()) {
    return std::move(outcome).value();
  }
  BatchFailure& failure = outcome.error();
  std::vector<StoreResult<CommitPublishResult>> results;
  for (const CommitPublishRequest* request : requests) {
    if (requests.size() == 1 || !failure.retry_alone) {
      results.emplace_back(failure.error);
    } else {
      results.push_back(
          std::move(RunTransaction(primary, bounds, {request}, EndOf(*request, bounds)).front()));
    }
  }
  return results;
}

}  // namespace

std::vector<StoreResult<CommitPublishResult>> CommitPublishBatchOn(
    ConnectionPool& primary, const PublishBounds& bounds,
    const std::vector<const CommitPublishRequest*>& requests) {
  Clock::time_point end = Clock::time_point::max();
  for (const CommitPublishRequest* request : requests) {
    end = std::min(end, EndOf(*request, bounds));
  }
  return RunTransaction(primary, bounds, requests, end);
}

PublishCombiner::PublishCombiner(ConnectionPool& primary, PublishBounds bounds,
                                 CombinerLimits limits)
    : primary_(primary), bounds_(bounds), limits_(limits) {
  for (size_t i = 0; i < std::max<size_t>(limits_.max_transactions, 1); ++i) {
    leaders_.emplace_back([this] { Lead(); });
  }
}

PublishCombiner::~PublishCombiner() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& leader : leaders_) {
    leader.join();
  }
}

namespace {

bool HasIdentityItem(const CommitPublishRequest& request) {
  return std::any_of(request.items.begin(), request.items.end(), IsIdentityItem);
}

}  // namespace

StoreResult<CommitPublishResult> PublishCombiner::Commit(const CommitPublishRequest& request) {
  if (request.items.empty()) {
    return CommitPublishResult{};
  }
  if (auto error = CheckRequest(request)) {
    return *error;
  }
  // An identity update runs alone: it takes the identity lock, which would make every group
  // message sharing its transaction wait for every other identity update.
  if (HasIdentityItem(request)) {
    return std::move(
        RunTransaction(primary_, bounds_, {&request}, EndOf(request, bounds_)).front());
  }
  // Bounded: a leader runs the request within its lifetime (every statement and the pool wait
  // are bounded by it, and an expired request is failed when taken) and then calls done.
  std::mutex mu;
  std::condition_variable finished;
  std::optional<StoreResult<CommitPublishResult>> result;
  Enqueue(Pending{.request = &request,
                  .owner = nullptr,
                  .end = EndOf(request, bounds_),
                  .done = [&](StoreResult<CommitPublishResult> r) {
                    std::lock_guard lock(mu);
                    result = std::move(r);
                    finished.notify_one();
                  }});
  std::unique_lock lock(mu);
  finished.wait(lock, [&] { return result.has_value(); });
  return std::move(*result);
}

bool PublishCombiner::Start(std::shared_ptr<const CommitPublishRequest> request, Done done) {
  if (request->items.empty() || CheckRequest(*request) || HasIdentityItem(*request)) {
    return false;
  }
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= limits_.max_queued) {
      return false;  // the caller blocks a DB pool thread instead, which bounds the queue
    }
  }
  const CommitPublishRequest* raw = request.get();
  Enqueue(Pending{.request = raw,
                  .owner = std::move(request),
                  .end = EndOf(*raw, bounds_),
                  .done = std::move(done)});
  return true;
}

void PublishCombiner::Enqueue(Pending pending) {
  {
    std::lock_guard lock(mu_);
    queued_items_ += pending.request->items.size();
    queue_.push_back(std::move(pending));
  }
  work_.notify_one();
}

void PublishCombiner::TakeBatch(std::vector<Pending>* batch, std::vector<std::string>* topics) {
  // Scanned oldest first. A request touching a topic that another leader's transaction holds
  // would only wait for that transaction's locks, so it stays queued; its topics are then closed
  // to every later request of this scan, so requests sharing a topic are taken in queue order.
  std::unordered_set<std::string_view> closed;
  size_t items = 0;
  uint64_t bytes = 0;
  std::vector<bool> taken(queue_.size(), false);
  for (size_t k = 0; k < queue_.size(); ++k) {
    const CommitPublishRequest& next = *queue_[k].request;
    const bool free = std::none_of(next.items.begin(), next.items.end(), [&](const PublishItem& i) {
      return in_flight_.contains(i.topic) || closed.contains(i.topic);
    });
    if (!free) {
      for (const PublishItem& item : next.items) {
        closed.insert(item.topic);
      }
      continue;
    }
    uint64_t next_bytes = 0;
    for (const PublishItem& item : next.items) {
      next_bytes += item.payload.size();
    }
    if (!batch->empty() &&
        (batch->size() >= limits_.max_requests || items + next.items.size() > limits_.max_items ||
         bytes + next_bytes > limits_.max_payload_bytes)) {
      break;
    }
    items += next.items.size();
    bytes += next_bytes;
    queued_items_ -= next.items.size();
    taken[k] = true;
    batch->push_back(std::move(queue_[k]));
  }
  if (batch->empty()) {
    return;
  }
  for (const Pending& pending : *batch) {
    for (const PublishItem& item : pending.request->items) {
      if (!in_flight_.contains(item.topic)) {
        in_flight_.insert(item.topic);
        topics->push_back(item.topic);
      }
    }
  }
  size_t kept = 0;
  for (size_t k = 0; k < queue_.size(); ++k) {
    if (!taken[k]) {
      if (kept != k) {
        queue_[kept] = std::move(queue_[k]);
      }
      ++kept;
    }
  }
  queue_.resize(kept);
}

void PublishCombiner::Lead() {
  std::vector<std::string> held;  // topics of this leader's transaction, in in_flight_
  bool ran = false;               // counted in running_, with `held` in in_flight_
  while (true) {
    std::vector<Pending> batch;
    {
      std::unique_lock lock(mu_);
      if (ran) {
        ran = false;
        --running_;
        for (const std::string& topic : held) {
          in_flight_.erase(topic);
        }
        held.clear();
        work_.notify_all();  // requests waiting on these topics, or on this leader, may go now
      }
      bool yielded = false;
      while (true) {
        // A second concurrent transaction only for a full queue or a request that waited long
        // (CombinerLimits::concurrent_min_items).
        std::optional<Clock::time_point> wake;
        if (running_ == 0 || queued_items_ >= limits_.concurrent_min_items ||
            (!queue_.empty() &&
             Clock::now() - queue_.front().queued_at >= limits_.concurrent_after)) {
          if (!yielded && !queue_.empty() && queued_items_ < limits_.max_items) {
            // As the SQLite writer does (sqlite/writer.cc): woken by a burst's first request, a
            // leader would preempt the thread still queueing the rest and run a batch of one.
            yielded = true;
            lock.unlock();
            sched_yield();
            lock.lock();
            continue;  // look again: the queue grew, or another leader took it
          }
          TakeBatch(&batch, &held);
          if (!batch.empty()) {
            break;
          }
        } else if (!queue_.empty()) {
          wake = queue_.front().queued_at + limits_.concurrent_after;
        }
        if (stopping_ && queue_.empty()) {
          return;  // stopping, and nothing is left to run
        }
        if (wake) {
          work_.wait_until(lock, *wake);
        } else {
          work_.wait(lock);
        }
      }
      ++running_;
      ran = true;
    }
    RunBatch(std::move(batch));
  }
}

void PublishCombiner::RunBatch(std::vector<Pending> batch) {
  // A request whose lifetime ended while it waited would end the shared transaction at once and
  // send every other request to run alone: it fails here instead, having stored nothing.
  const Clock::time_point now = Clock::now();
  std::vector<Pending> live;
  live.reserve(batch.size());
  for (Pending& pending : batch) {
    if (pending.end <= now) {
      pending.done(DeadlineExceeded("commit publish: waiting for a transaction").ToStoreError());
    } else {
      live.push_back(std::move(pending));
    }
  }
  if (live.empty()) {
    return;
  }
  std::vector<const CommitPublishRequest*> requests;
  Clock::time_point end = Clock::time_point::max();
  for (const Pending& pending : live) {
    requests.push_back(pending.request);
    end = std::min(end, pending.end);
  }
  // The lifetimes were fixed when each request arrived, not when the batch formed.
  auto results = RunTransaction(primary_, bounds_, requests, end);
  CompletionScope scope;  // one hand-over per caller thread (base/completion_scope.h)
  for (size_t k = 0; k < live.size(); ++k) {
    live[k].done(std::move(results[k]));
  }
}

}  // namespace xb::store::postgres
