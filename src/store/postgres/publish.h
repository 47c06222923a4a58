// The publish transaction on the primary (STORE.md 3.1 steps 5-13, 3.2, 3.3).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
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
  // Leader threads, so concurrent publish transactions.
  size_t max_transactions = 2;
  // While one transaction runs, another leader starts a second only when the queue holds at least
  // concurrent_min_items items, or its oldest request has waited concurrent_after. A transaction
  // has a fixed cost (statements, WAL flush, replica shipping; and commits out of id order make
  // the tailer ask for boundary advances) that only a batch of some size pays back. Measured on
  // the 2-core benchmark machine: one leader halved 32 clients of ten envelopes (9,700 to 5,040
  // envelopes/s), where each batch is hundreds of rows that two backends insert in parallel. At
  // 32 clients of one envelope a second transaction from 8 queued items on (its WAL flush overlaps
  // the first's) gave a median 3,075 publishes/s against 2,818 from 64 on (seven alternating
  // runs each; the same at 8 clients), once a batch's completions stopped costing a context
  // switch each (store/batched_post.h); before that, splitting the queue had cost about 10%.
  size_t concurrent_min_items = 8;
  std::chrono::milliseconds concurrent_after{20};
  size_t max_requests = 64;
  size_t max_items = 1024;
  uint64_t max_payload_bytes = 8 << 20;
  size_t max_queued = 256;  // Start refuses beyond this many waiting requests
};

// Group commit for PostgreSQL publishes. Requests queue up; max_transactions leader threads each
// take the oldest queued requests (at least one, within the limits) into one transaction, so the
// statements, the locks and the commit of a transaction are shared by every request in it while
// PostgreSQL's CPU is the limit. Concurrent transactions never share a topic (a request on a
// topic another transaction holds stays queued, in order), and a second one starts only under
// the CombinerLimits::concurrent_min_items rule. A transaction of group-message requests is one
// round trip (PublishTransaction::RunInOneRound). Each request keeps its own outcome (see
// PublishTransaction in publish.cc): a request that fails admission, or whose items are duplicates,
// does not affect the others; a shared failure before the commit runs each request again alone. A
// request whose lifetime ended while it waited fails DEADLINE_EXCEEDED without joining a
// transaction. A request carrying an identity update always runs alone, on its caller's thread.
// Under light load a request finds an idle leader and runs at once.
//
// Threading: thread-safe. Commit blocks (DB pool threads only) until the request has run, which
// its own lifetime bounds; Start never blocks. The destructor runs what is queued, then joins the
// leaders; the pool must outlive the combiner.
class PublishCombiner {
 public:
  using Done = std::function<void(StoreResult<CommitPublishResult>)>;

  PublishCombiner(ConnectionPool& primary, PublishBounds bounds, CombinerLimits limits = {});
  ~PublishCombiner();
  PublishCombiner(const PublishCombiner&) = delete;
  PublishCombiner& operator=(const PublishCombiner&) = delete;

  // Store::CommitPublish, with the lifetime of CommitPublishBatchOn.
  StoreResult<CommitPublishResult> Commit(const CommitPublishRequest& request);

  // Store::StartCommitPublish: queues `request` for a leader, which calls `done` with the result
  // on its own thread. Returns false, and never calls `done`, for a request Commit must take (an
  // empty or refused one, one with an identity item) or while max_queued requests wait.
  bool Start(std::shared_ptr<const CommitPublishRequest> request, Done done);

 private:
  struct Pending {
    const CommitPublishRequest* request = nullptr;
    std::shared_ptr<const CommitPublishRequest> owner;  // keeps `request` alive for Start
    Clock::time_point end;
    Done done;
    Clock::time_point queued_at = Clock::now();
  };

  void Enqueue(Pending pending);
  // Under mu_: moves into `batch` the oldest queued requests that touch no topic in in_flight_
  // (within the limits), and records their topics there and in `topics`.
  void TakeBatch(std::vector<Pending>* batch, std::vector<std::string>* topics);
  void Lead();  // a leader thread's loop
  // Outside mu_: fails the requests whose lifetime ended while they waited, runs the others as one
  // transaction and calls each one's `done`.
  void RunBatch(std::vector<Pending> batch);

  // Const after construction.
  ConnectionPool& primary_;
  const PublishBounds bounds_;
  const CombinerLimits limits_;

  std::mutex mu_;
  std::condition_variable work_;  // a request was queued, or stopping_
  std::deque<Pending> queue_;     // guarded by mu_; requests no leader has taken yet
  size_t queued_items_ = 0;       // guarded by mu_; items of the requests in queue_
  size_t running_ = 0;            // guarded by mu_; transactions leaders are running
  // Guarded by mu_: the topics of the transactions leaders are running. Concurrent transactions
  // of this instance never share a topic, so none waits for another's topic locks.
  // Owned strings: a request (and its topics) may be gone once its `done` has run.
  struct TopicHash {
    using is_transparent = void;
    size_t operator()(std::string_view topic) const { return std::hash<std::string_view>{}(topic); }
  };
  std::unordered_set<std::string, TopicHash, std::equal_to<>> in_flight_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> leaders_;
};

}  // namespace xb::store::postgres
