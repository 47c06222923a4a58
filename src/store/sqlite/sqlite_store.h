// The embedded storage engine (STORE.md section 8): one process, one database file, one writer
// thread (so commit order is id order and the boundary is the last committed id) and a small pool
// of query_only reader connections.
//
// Threading: every Store method blocks and is thread-safe (store.h). Reads lease a reader for one
// read transaction; CommitPublish queues a job for the writer thread and waits for it. No call may
// be in flight when the store is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "store/sqlite/checkpointer.h"
#include "store/sqlite/lock_file.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/publish.h"
#include "store/sqlite/push.h"
#include "store/sqlite/reader_pool.h"
#include "store/sqlite/writer.h"
#include "store/store.h"

namespace xb::store::sqlite {

struct SqliteOptions {
  std::string path{};                    // the database file: database.url after `sqlite://`
  uint32_t max_readers = 20;             // database.max_connections: reader connections (>= 1)
  uint32_t statement_timeout_ms = 5000;  // database.max_statement_timeout_ms: busy_timeout, and the
                                         // bound of each read (pool wait plus statements)
  size_t max_writer_queue = 1024;        // publishes waiting for the writer, at most
  int64_t journal_size_limit_bytes = int64_t{64} << 20;  // WAL size kept after a checkpoint
};

class SqliteStore final : public Store {
 public:
  // Takes the process lock `<path>.lock`, opens the writer (WAL, synchronous=FULL,
  // foreign_keys=ON, busy_timeout), applies the embedded migrations, reads the boundary, opens the
  // readers and starts the writer thread. Errors (kUnavailable) name `database.url`, never the
  // path: the directory does not exist, the database is in use by another process, or it cannot
  // be opened. A migration whose checksum differs fails kFailedPrecondition naming its version.
  static Result<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // Store (store.h). ClockNs is the process real-time clock; the push store uses it too.
  StoreResult<int64_t> ClockNs() override;
  PushStore* push() override { return push_.get(); }
  StoreResult<std::vector<std::optional<EnvelopeMeta>>> FindDuplicates(
      const std::vector<std::pair<std::string, Hash>>& keys) override;
  StoreResult<std::vector<StoredEnvelope>> History(const std::string& topic) override;
  StoreResult<CommitPublishResult> CommitPublish(const CommitPublishRequest& request) override;
  // Hands the request to the writer thread when its queue is short (Writer::TryRunGroupedAsync),
  // so no DB pool thread waits for the writer.
  bool StartCommitPublish(std::shared_ptr<const CommitPublishRequest> request,
                          CommitPublishDone done) override;
  using Store::Query;  // the unbounded form, for tests
  StoreResult<QueryPage> Query(const std::vector<TopicCursor>& topics, uint32_t limit,
                               uint64_t max_payload_bytes) override;
  StoreResult<QueryPage> QueryBefore(const std::string& topic, int64_t before, uint32_t limit,
                                     uint64_t max_payload_bytes) override;
  StoreResult<std::vector<StoredEnvelope>> Newest(const std::vector<std::string>& topics,
                                                  bool with_payload) override;
  // The same read as Newest: every reader sees the one database file, there is no replica.
  StoreResult<std::vector<StoredEnvelope>> NewestOnPrimary(const std::vector<std::string>& topics,
                                                           bool with_payload) override;
  StoreResult<std::optional<StoredEnvelope>> Get(int64_t sequence_id) override;
  // Streams (STORE.md 8). AdvanceBoundary reads the persisted boundary in a reader snapshot and
  // never reports lock_timeout; OpenTailReader opens a dedicated query_only connection outside the
  // reader pool; Heads and CatchUp run on a pooled reader, one read transaction each.
  StoreResult<BoundaryAdvance> AdvanceBoundary() override;
  StoreResult<std::unique_ptr<TailReader>> OpenTailReader() override;
  StoreResult<std::vector<int64_t>> Heads(const std::vector<std::string>& topics) override;
  StoreResult<std::vector<std::optional<std::string>>> InboxIds(
      const std::vector<IdentifierKey>& identifiers) override;
  StoreResult<std::vector<std::vector<StoredEnvelope>>> CatchUp(
      const std::vector<CatchUpRange>& ranges, uint32_t per_range, uint64_t byte_budget) override;
  std::optional<StoreError> VisitCatchUp(const std::vector<CatchUpRange>& ranges,
                                         uint32_t per_range, uint64_t byte_budget,
                                         const CatchUpVisitor& visit) override;

  // Pruning (STORE.md 9.2): each batch is a job on the writer thread (Writer::Run, between publish
  // groups) in its own write transaction, bounded by the statement timeout; PrunedThrough reads
  // prune_state on a pooled reader.
  StoreResult<bool> PreparePruning() override;
  StoreResult<PruneBatchResult> PruneBatch(const PruneKey& after, uint32_t limit,
                                           bool hold_at_push_cursor) override;
  StoreResult<int64_t> PrunedThrough() override;

  // The last committed id, which on this engine is also the closed allocation boundary
  // (STORE.md 8): every id at or below it is committed. Never decreases, across restarts too.
  int64_t LastCommittedId() const { return last_committed_.load(std::memory_order_acquire); }

  // Called on the writer thread after each commit that stored rows, with the new last id (the
  // tailer's in-process wake-up, STORE.md 8): before the group's publishers are told when
  // `urgent` (asked once per commit) returns true, once they have been told otherwise (so it
  // may run just after CommitPublish returned). Both must be quick, must not block on the store
  // and must not call SetCommitListener. After SetCommitListener returns, the previous listener
  // is never called again. Pass nullptr to remove.
  void SetCommitListener(std::function<void(int64_t last_id)> listener,
                         std::function<bool()> urgent = nullptr) override;

  // What the startup migration did, for the caller to log (unknown versions are tolerated).
  const MigrationOutcome& migrations() const { return migrations_; }

 private:
  SqliteStore(const SqliteOptions& options, std::unique_ptr<LockFile> lock,
              MigrationOutcome migrations, int64_t last_committed,
              std::unique_ptr<ReaderPool> readers, std::unique_ptr<Checkpointer> checkpointer,
              std::unique_ptr<Writer> writer);
  void NotifyCommit(int64_t last_id);
  // Writer thread: after each group commit attempt.
  void AfterGroupCommit(bool committed);
  void AfterGroupCompletions();
  // Writer thread: one publish, inside the group transaction.
  void RunPublish(Connection& conn, const CommitPublishRequest& request,
                  std::optional<StoreResult<PublishOutcome>>& outcome);

  // Const after construction, in start order; they stop in reverse (the destructor stops the
  // writer thread explicitly first, since it may still call NotifyCommit): the writer, the
  // checkpointer, the readers, the process lock last.
  const SqliteOptions options_;
  const std::unique_ptr<LockFile> lock_;
  const MigrationOutcome migrations_;
  std::unique_ptr<ReaderPool> readers_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<SqlitePushStore> push_;  // uses writer_ and readers_

  std::atomic<int64_t> last_committed_;  // written by the writer thread only
  int64_t group_committed_through_ = 0;  // writer thread only: highest id of the open group
  int64_t notify_through_ = 0;           // writer thread only: committed, the listener not told yet

  std::mutex listener_mu_;
  std::function<void(int64_t)> listener_;  // guarded by listener_mu_
  std::function<bool()> urgent_;           // guarded by listener_mu_
};

}  // namespace xb::store::sqlite
