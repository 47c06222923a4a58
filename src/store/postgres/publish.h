// The publish transaction on the primary (STORE.md 3.1 steps 5-13, 3.2, 3.3).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "store/postgres/pool.h"
#include "store/store.h"

namespace xb::store::postgres {

struct PublishBounds {
  int statement_timeout_ms = 5000;      // database.max_statement_timeout_ms
  int max_publish_duration_ms = 10000;  // publishing.max_publish_duration_ms
};

// Runs `requests` (each non-empty and without identity items, or a single request) as one
// transaction, the unit of work PublishCombiner leads: one result per request, in order, ending
// at the earliest of their lifetimes. A request's lifetime ends at the earlier of its deadline
// (unless unset) and max_publish_duration_ms from the call, and holds inside PostgreSQL too (local
// idle_in_transaction_session_timeout and statement_timeout), so an abandoned publish never keeps
// topic locks or the barrier. Each request keeps its own outcome; see PublishCombiner.
std::vector<StoreResult<CommitPublishResult>> CommitPublishBatchOn(
    ConnectionPool& primary, const PublishBounds& bounds,
    const std::vector<const CommitPublishRequest*>& requests);

// How much one combined transaction may take, and how many may run at once.
struct CombinerLimits {
  size_t max_transactions = 2;  // concurrent publish transactions led by the combiner
  size_t max_requests = 64;
  size_t max_items = 1024;
  uint64_t max_payload_bytes = 8 << 20;
};

// Group commit for PostgreSQL publishes. Concurrent callers queue their requests; at most
// max_transactions callers at a time lead, each taking the oldest queued requests (at least one,
// within the limits) into one transaction, so the statements, the locks and the commit of a
// transaction are shared by every request in it while PostgreSQL's CPU is the limit. Each
// request keeps its own outcome (see PublishTransaction in publish.cc): a request that fails
// admission, or whose items are duplicates, does not affect the others; a shared failure before
// the commit runs each request again alone. A request carrying an identity update always runs
// alone. Under light load a caller finds no queue and leads its own request at once.
//
// Threading: thread-safe; Commit blocks (DB pool threads only) until the caller's request has
// run, which its own lifetime bounds.
class PublishCombiner {
 public:
  PublishCombiner(ConnectionPool& primary, PublishBounds bounds, CombinerLimits limits = {});

  // Store::CommitPublish, with the lifetime of CommitPublishBatchOn.
  StoreResult<CommitPublishResult> Commit(const CommitPublishRequest& request);

 private:
  struct Waiter {
    const CommitPublishRequest* request = nullptr;
    Clock::time_point end;
    std::optional<StoreResult<CommitPublishResult>> result;  // written by the leader before done
    bool done = false;                                       // guarded by mu_
    std::condition_variable wake;  // done, or the lead may be free; waited on with mu_
  };

  // Const after construction.
  ConnectionPool& primary_;
  const PublishBounds bounds_;
  const CombinerLimits limits_;

  std::mutex mu_;
  std::deque<Waiter*> queue_;  // guarded by mu_; requests no leader has taken yet
  size_t leaders_ = 0;         // guarded by mu_
};

}  // namespace xb::store::postgres
