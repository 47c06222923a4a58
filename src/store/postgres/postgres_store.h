// The PostgreSQL engine (STORE.md sections 2-7): a primary plus at most one streaming physical
// replica, shared by many stateless instances. Writes, Query, QueryBefore, NewestOnPrimary, Get,
// duplicate lookup, identity history and the boundary task use the primary; Newest, the stream
// reads (tail reader, heads, catch-up) and ReadBoundary(kReadDatabase) use the replica when one is
// configured (OPS-009).
//
// Threading: every method blocks (network round trips, lock waits up to the configured bounds) and
// is thread-safe; run them on the DB pool, never on an I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/postgres/pool.h"
#include "store/postgres/publish.h"
#include "store/postgres/push.h"
#include "store/store.h"

namespace xb::store::postgres {

struct PostgresOptions {
  std::string primary_url;                 // database.url
  std::optional<std::string> replica_url;  // database.replica_url
  int max_connections = 20;                // database.max_connections, per database
  int statement_timeout_ms = 5000;         // database.max_statement_timeout_ms
  int max_publish_duration_ms = 10000;     // publishing.max_publish_duration_ms
  int max_barrier_wait_ms = 1000;          // publishing.max_barrier_wait_ms
  size_t publish_transactions = 2;         // CombinerLimits::max_transactions (no config key)
  // Receives the release hook's warning (STORE.md 2.5); may be empty. Called on store threads.
  std::function<void(std::string_view)> warning_sink;
  // xmtp_db_released_open_transactions_total: called once per connection the release hook rolled
  // back (STORE.md 2.5); may be empty. Called on store threads.
  std::function<void()> on_released_open_transaction{};
};

// Where a read goes: the primary, or the read database (the replica when configured).
enum class Database : uint8_t { kPrimary, kReadDatabase };

class PostgresStore final : public Store {
 public:
  // Connects to the primary, applies the embedded migrations under the advisory lock (0, 4)
  // (STORE.md 2.6) and, with a replica, captures the primary's WAL insert position after
  // migrating: ReadDatabaseCaughtUp answers true once the replica has replayed it (or is not in
  // recovery), and start-up waits for that (store/read_database_wait.h). Every wait ends by
  // `deadline` (DEADLINE_EXCEEDED). Errors name the setting ("database.url",
  // "database.replica_url", or the option key), never a URL or password; a changed migration is
  // FAILED_PRECONDITION naming the version.
  static Result<std::unique_ptr<PostgresStore>> Open(PostgresOptions options,
                                                     Clock::time_point deadline);
  ~PostgresStore() override;

  // Store (store.h). Errors follow STORE.md 3.2; a pool without a free connection in time is
  // kPoolTimeout. Reads without a caller deadline are bounded by the statement timeout.
  StoreResult<int64_t> ClockNs() override;
  // The push side (postgres/push.h): NotificationService on the primary, the dispatcher's reads on
  // the read database, its lock on a connection of its own.
  PushStore* push() override { return push_.get(); }
  Result<bool> ReadDatabaseCaughtUp(Clock::time_point deadline) override;
  StoreResult<std::vector<std::optional<EnvelopeMeta>>> FindDuplicates(
      const std::vector<std::pair<std::string, Hash>>& keys) override;
  StoreResult<std::vector<StoredEnvelope>> History(const std::string& topic) override;
  // The transaction's lifetime ends at the earlier of request.deadline (ignored when it is the
  // epoch, i.e. unset) and max_publish_duration_ms after the call starts.
  StoreResult<CommitPublishResult> CommitPublish(const CommitPublishRequest& request) override;
  // Group messages, welcomes, key packages and commit-log entries go to the combiner's leader
  // threads without holding a DB pool thread (PublishCombiner::Start).
  bool StartCommitPublish(std::shared_ptr<const CommitPublishRequest> request,
                          CommitPublishDone done) override;
  using Store::Query;  // the unbounded form, for tests
  StoreResult<QueryPage> Query(const std::vector<TopicCursor>& topics, uint32_t limit,
                               uint64_t max_payload_bytes) override;
  StoreResult<QueryPage> QueryBefore(const std::string& topic, int64_t before, uint32_t limit,
                                     uint64_t max_payload_bytes) override;
  StoreResult<std::vector<StoredEnvelope>> Newest(const std::vector<std::string>& topics,
                                                  bool with_payload) override;
  // Newest's statement on the primary pool.
  StoreResult<std::vector<StoredEnvelope>> NewestOnPrimary(const std::vector<std::string>& topics,
                                                           bool with_payload) override;
  StoreResult<std::optional<StoredEnvelope>> Get(int64_t sequence_id) override;

  // One attempt of the boundary task on the primary (STORE.md 4.1). lock_timeout when the barrier
  // is not granted within max_barrier_wait_ms (or a statement timeout fires first); any other
  // failure is an error: kInvariant when the guarded update does not report exactly the value read
  // (API-291), otherwise by the SQLSTATE mapping of STORE.md 3.2.
  StoreResult<BoundaryAdvance> AdvanceBoundary() override;

  // Streams (STORE.md 5, 7), all on the read database. OpenTailReader opens a new connection
  // outside the pools, application_name "xmtp-backend tailer", statements bounded by the
  // statement timeout. Heads is one statement on the read pool; CatchUp one REPEATABLE READ, READ
  // ONLY transaction on it (candidate ids with sizes, the byte cutoff, then the admitted rows).
  StoreResult<std::unique_ptr<TailReader>> OpenTailReader() override;
  StoreResult<std::vector<int64_t>> Heads(const std::vector<std::string>& topics) override;
  StoreResult<std::vector<std::optional<std::string>>> InboxIds(
      const std::vector<IdentifierKey>& identifiers) override;
  StoreResult<std::vector<std::vector<StoredEnvelope>>> CatchUp(
      const std::vector<CatchUpRange>& ranges, uint32_t per_range, uint64_t byte_budget) override;

  // Pruning (STORE.md 9.2, postgres/prune.cc): a batch is one statement on the primary under the
  // transaction advisory lock (0, 5), busy when another instance holds it; PrunedThrough reads
  // the read database.
  StoreResult<bool> PreparePruning() override;
  void CancelPreparePruning() override;
  StoreResult<PruneBatchResult> PruneBatch(const PruneKey& after, uint32_t limit,
                                           bool hold_at_push_cursor) override;
  StoreResult<int64_t> PrunedThrough() override;

  // The stored closed allocation boundary as `database` sees it.
  Result<int64_t> ReadBoundary(Database database);

  // xmtp_db_released_open_transactions_total: connections the release hook rolled back, both
  // pools together.
  uint64_t released_open_transactions() const;

  bool has_replica() const { return replica_ != nullptr; }

  // Called after each CommitPublish that stored rows, on the publishing thread: wakes this
  // instance's tailer early (it still polls every streams.poll_interval_ms for other instances).
  // `urgent` is not used: a commit's listener runs after its publish returned.
  void SetCommitListener(std::function<void(int64_t last_id)> listener,
                         std::function<bool()> urgent = nullptr) override;
  // A poll is five statements on the tailer's connection. Woken by every commit, the tailer
  // polled about 270 times a second under 2,300 publishes/s (its backend about 13% of a core);
  // 10 ms keeps the added delivery delay far inside the poll-interval latency goal.
  std::chrono::milliseconds CommitWakeGap() const override { return std::chrono::milliseconds(10); }
  // A catch-up read is a round trip: 1 MiB waves read 90k envelopes/s on 32 streams where 4 MiB
  // waves read 145k (bench/streams.sh's deliver case).
  uint64_t CatchUpWaveBytes() const override { return uint64_t{4} << 20; }

 private:
  explicit PostgresStore(PostgresOptions options);

  // The primary's WAL insert position after migrating, for ReadDatabaseCaughtUp.
  Status CaptureStartupPosition(Clock::time_point deadline);
  // Wakes this instance's tailer when `result` stored rows.
  void NotifyCommitted(const StoreResult<CommitPublishResult>& result);
  ConnectionPool& ReadPool() { return replica_ ? *replica_ : primary_; }
  const std::string& ReadUrl() const {
    return options_.replica_url ? *options_.replica_url : options_.primary_url;
  }
  const char* ReadSetting() const {
    return options_.replica_url ? "database.replica_url" : "database.url";
  }
  // Newest (API-244) on the database of `pool`.
  StoreResult<std::vector<StoredEnvelope>> NewestOn(ConnectionPool& pool,
                                                    const std::vector<std::string>& topics,
                                                    bool with_payload);
  // Bounds a read's pool wait, and (plus a slack) its statement's client-side deadline.
  std::chrono::milliseconds StatementTimeout() const;

  // Const after construction.
  const PostgresOptions options_;
  ConnectionPool primary_;
  std::unique_ptr<ConnectionPool> replica_;  // null without a replica
  PublishCombiner publisher_;                // group commit of publishes on primary_
  std::unique_ptr<PostgresPushStore> push_;  // uses primary_ and the read pool
  // Set once by Open (with a replica): the primary's WAL insert position after migrating.
  std::string startup_position_;

  std::mutex listener_mu_;
  std::function<void(int64_t)> listener_;  // guarded by listener_mu_

  // PreparePruning's running index build, for CancelPreparePruning from another thread.
  std::mutex prepare_mu_;
  bool prepare_cancelled_ = false;               // guarded by prepare_mu_
  std::unique_ptr<CancelToken> prepare_cancel_;  // guarded by prepare_mu_
  // PreparePruning's steps on its own connection `conn` (lock held).
  StoreResult<void> BuildPruneIndex(Connection& conn);
};

}  // namespace xb::store::postgres
