// The engine-neutral storage interface (spec/STORE.md section 0). The API layer never sees SQL,
// wire messages never reach an engine, and an engine returns typed errors (StoreError), never
// gRPC statuses; api/ maps them (STORE.md 3.2) and counts xmtp_db_errors_total{kind}.
//
// Threading: every method blocks and is thread-safe. Callers run them on the DB pool
// (store/db_pool.h), never on an I/O thread. Implementations: store/sqlite (embedded default),
// store/postgres (primary + optional streaming replica).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/expected.h"
#include "base/status.h"

namespace xb::store {

using Hash = std::array<uint8_t, 32>;
using Clock = std::chrono::steady_clock;

inline constexpr int64_t kMaxSequenceId = INT64_MAX;

// What API-212 reports for one stored envelope. expiry_ns 0 = never expires (NULL in storage).
struct EnvelopeMeta {
  int64_t sequence_id = 0;
  int64_t server_ns = 0;
  Hash message_hash{};
  std::string topic;
  int64_t expiry_ns = 0;
  bool is_commit_or_proposal = false;
};

struct StoredEnvelope {
  EnvelopeMeta meta;
  std::string payload;  // the backend's canonical ClientEnvelope encoding (API-211)
};

// Retention class of a new row (STORE.md 9.1). kExempt stores a NULL expiry.
enum class RetentionClass : uint8_t { kGroupMessage, kWelcome, kKeyPackage, kExempt };

struct RetentionSeconds {
  uint64_t group_message = 7776000;
  uint64_t welcome = 7776000;
  uint64_t key_package = 7776000;
};

// One change to the identifier projection made by an identity update (STORE.md 2.2).
struct IdentifierChange {
  std::string identifier;  // normalized by kind
  int32_t identifier_kind = 0;
  bool added = true;  // false: revoked
};

// A projection lookup key (STORE.md 2.2): normalized identifier and IdentifierKind value.
struct IdentifierKey {
  std::string identifier;
  int32_t identifier_kind = 0;
};

// One distinct (topic, hash) of a publish, in order of first appearance in the request.
struct PublishItem {
  std::string topic;
  Hash message_hash{};
  bool is_commit_or_proposal = false;
  std::string payload;
  RetentionClass retention = RetentionClass::kExempt;
  bool push_eligible = false;
  std::optional<Hash> sender_hmac;
  // Identity updates: the identity topic head the update was validated against (API-232) and
  // the projection changes it makes; nullopt for other kinds.
  std::optional<int64_t> identity_validated_head;
  std::vector<IdentifierChange> identity_changes;
  // A validation failure found before the transaction (steps 1-4 of STORE.md 3.1). It fails the
  // publish unless the item turns out to be a duplicate under the locks (API-222).
  std::optional<Status> pending_failure;
};

struct CommitPublishRequest {
  std::vector<PublishItem> items;
  RetentionSeconds retention;
  // API-234, checked under the locks: a new identity update whose topic already holds this many
  // rows fails kAdmission with INVALID_ARGUMENT "identity update rejected: too many entries".
  uint32_t max_identity_entries = 256;
  Clock::time_point deadline;  // publishing.max_publish_duration_ms from the first lock
};

struct CommitPublishResult {
  std::vector<EnvelopeMeta> metas;  // one per item, same order
  std::vector<bool> duplicate;      // per item: already stored (true) or stored now (false)
  // When the publish's locks were held (the end of the publish.locks span, the start of
  // db.commit_publish); unset for a request with no items.
  Clock::time_point locked_at{};
};

struct TopicCursor {
  std::string topic;
  int64_t after = 0;  // ids strictly greater
};

struct QueryPage {
  std::vector<StoredEnvelope> envelopes;  // ascending id
  bool has_more = false;                  // from the same snapshot (API-240)
  // The page's payloads came to more than the read's max_payload_bytes: `envelopes` stops at the
  // row that passed it (the rest was not read), and the page cannot be answered whole.
  bool over_budget = false;
};

// Typed errors (STORE.md section 0). `item` names the failing PublishItem for kAdmission.
enum class ErrorKind : uint8_t {
  kTimeout,       // -> DEADLINE_EXCEEDED, db error kind "timeout"
  kPoolTimeout,   // no pooled connection in time (STORE.md 3.2 [design]) -> UNAVAILABLE, "timeout"
  kConnection,    // -> UNAVAILABLE, "connection"
  kInvariant,     // -> INTERNAL, "invariant"
  kStaleHistory,  // identity head moved (API-232) -> ABORTED
  kAdmission,     // a pending failure of a non-duplicate item -> that item's status
  kOverflow,      // expiry does not fit int64 ns (OPS-020) -> INTERNAL
  kOther,         // -> UNAVAILABLE, "other"
  kQueueFull,     // the DB pool's admission bound refused the call (store/db_pool.h): nothing ran;
                  // -> UNAVAILABLE, not counted as a database error
};

// What went wrong, as the engine classified it (its error mapping: sqlite/connection.h,
// postgres/errors.h): finer than ErrorKind, which fixes the status. An operator reads it in the
// store failure log line and in xmtp_db_failures_total{cause} (api/store_status.h).
enum class ErrorCause : uint8_t {
  kUnclassified,  // the engine gave no finer class: the kind stands for it (CauseOf)
  kDiskFull,      // SQLITE_FULL; SQLSTATE 53100
  kIoError,       // SQLITE_IOERR; SQLSTATE 58030
  kOutOfMemory,   // SQLITE_NOMEM; SQLSTATE 53200
  kResources,     // another resource limit: too many connections, a configured limit (class 53)
  kCannotOpen,    // the database cannot be opened or does not exist
  kReadOnly,      // read-only database or transaction, or permission denied
  kConnection,    // connection lost, refused or shut down by the server
  kPoolTimeout,   // no pooled connection in time
  kTimeout,       // a deadline, statement timeout or lock wait ran out
  kCorrupt,       // the database reported corruption
  kInvariant,     // a constraint or a stored value broke an expectation
  kOverflow,      // an expiry does not fit a 64-bit timestamp (OPS-020)
};

struct StoreError {
  ErrorKind kind = ErrorKind::kOther;
  ErrorCause cause = ErrorCause::kUnclassified;
  std::string message;  // plain words, never request data (OPS-014)
  size_t item = 0;      // kAdmission: index into CommitPublishRequest::items
  Status admission;     // kAdmission: the item's pending failure
};

// The error's cause class: its own, or when unclassified the one its kind implies (kOther and
// kStaleHistory/kAdmission: kUnclassified).
constexpr ErrorCause CauseOf(const StoreError& error) {
  if (error.cause != ErrorCause::kUnclassified) {
    return error.cause;
  }
  switch (error.kind) {
    case ErrorKind::kTimeout:
      return ErrorCause::kTimeout;
    case ErrorKind::kPoolTimeout:
      return ErrorCause::kPoolTimeout;
    case ErrorKind::kConnection:
      return ErrorCause::kConnection;
    case ErrorKind::kInvariant:
      return ErrorCause::kInvariant;
    case ErrorKind::kOverflow:
      return ErrorCause::kOverflow;
    default:
      return ErrorCause::kUnclassified;
  }
}

template <typename T>
using StoreResult = Expected<T, StoreError>;

// --- Stream reads (STORE.md 5, 7): all on the read database (the replica when configured). ---

// A row as the tailer's scans see it, before payloads are loaded.
struct RowHead {
  int64_t sequence_id = 0;
  std::string topic;
  uint64_t payload_bytes = 0;  // stored payload length
};

// An inclusive id range [low, high].
struct IdRange {
  int64_t low = 0;
  int64_t high = 0;
};

// The tailer's dedicated connection to the read database, outside the pools (STORE.md 2.5, 5.1).
// Used by one thread at a time. Any error means the connection is unusable: the caller drops it
// and starts a new recovery generation.
class TailReader {
 public:
  virtual ~TailReader() = default;
  // Opens one REPEATABLE READ, READ ONLY snapshot (STORE.md 5.3) and returns the closed
  // allocation boundary as that snapshot shows it.
  virtual StoreResult<int64_t> Begin() = 0;
  // In the open snapshot: for each range (same order), its rows ascending, at most `per_range`.
  virtual StoreResult<std::vector<std::vector<RowHead>>> Probe(const std::vector<IdRange>& ranges,
                                                               uint32_t per_range) = 0;
  // In the open snapshot: rows with id > `after`, ascending, at most `limit`.
  virtual StoreResult<std::vector<RowHead>> Forward(int64_t after, uint32_t limit) = 0;
  // In the open snapshot: the full rows of `ids` (ascending, distinct), ascending; an id without a
  // row is simply absent (the caller treats that as an invariant failure).
  virtual StoreResult<std::vector<StoredEnvelope>> Load(const std::vector<int64_t>& ids) = 0;
  // Ends the snapshot (commits the read-only transaction). No-op when none is open.
  virtual StoreResult<bool> End() = 0;
};

// A stored row read in place: every view points into the engine's own buffers and is valid only
// for the call that receives it.
struct StoredEnvelopeView {
  int64_t sequence_id = 0;
  int64_t server_ns = 0;
  std::string_view message_hash;  // 32 bytes
  std::string_view topic;
  int64_t expiry_ns = 0;
  bool is_commit_or_proposal = false;
  std::string_view payload;

  static StoredEnvelopeView Of(const StoredEnvelope& row) {
    return StoredEnvelopeView{.sequence_id = row.meta.sequence_id,
                              .server_ns = row.meta.server_ns,
                              .message_hash = std::string_view(
                                  reinterpret_cast<const char*>(row.meta.message_hash.data()),
                                  row.meta.message_hash.size()),
                              .topic = row.meta.topic,
                              .expiry_ns = row.meta.expiry_ns,
                              .is_commit_or_proposal = row.meta.is_commit_or_proposal,
                              .payload = row.payload};
  }
};

// One registration's catch-up range: rows of `topic` with after < id <= through.
struct CatchUpRange {
  std::string topic;
  int64_t after = 0;
  int64_t through = 0;
};

// One attempt of the boundary task (STORE.md 4.1, 8).
struct BoundaryAdvance {
  bool lock_timeout = false;  // the barrier was not granted in time; nothing changed
  int64_t boundary = 0;       // the stored closed allocation boundary after the attempt
};

// The pruning pass (STORE.md 9.2, issue 35) walks the expired rows in (expiry_ns, sequence_id)
// order through the partial index on the expiry; a batch resumes after the key the last one ended
// at. The start of a pass: {INT64_MIN, 0}.
struct PruneKey {
  int64_t expiry_ns = INT64_MIN;
  int64_t sequence_id = 0;
};

// One batch of the pass: at most `limit` expired rows examined after a key, those the six rules
// allow deleted by primary key in one short transaction.
struct PruneBatchResult {
  uint64_t deleted = 0;
  bool done = false;  // fewer than `limit` expired rows were left: the pass has seen them all
  bool busy = false;  // another instance holds the pass's lock (PostgreSQL): nothing was done
  PruneKey next;      // where the next batch of this pass resumes
};

class PushStore;  // store/push.h

class Store {
 public:
  virtual ~Store() = default;

  // The push side (store/push.h), owned by the store; nullptr where an engine has none.
  virtual PushStore* push() { return nullptr; }

  // The primary store's clock in ns since the Unix epoch (OPS-020).
  virtual StoreResult<int64_t> ClockNs() = 0;

  // Start-up (STORE.md 2.6, 6): whether the read database already shows everything the primary
  // held when the store opened; true at once where reads go to the primary. One check, blocking for
  // at most one bounded round trip; a replica that is still starting, or has not replayed the
  // database's creation yet, answers false rather than an error. Errors name the setting. Polled,
  // without blocking an executor between checks, by WaitForReadDatabase (read_database_wait.h).
  virtual Result<bool> ReadDatabaseCaughtUp(Clock::time_point deadline) {
    (void)deadline;
    return true;
  }

  // Stored metadata per (topic, hash), nullopt where absent. Primary (STORE.md 3.1 step 3).
  virtual StoreResult<std::vector<std::optional<EnvelopeMeta>>> FindDuplicates(
      const std::vector<std::pair<std::string, Hash>>& keys) = 0;

  // Every envelope of one identity topic, ascending, in one snapshot (API-232). Primary.
  virtual StoreResult<std::vector<StoredEnvelope>> History(const std::string& topic) = 0;

  // STORE.md 3.1 steps 5-13: in one transaction, re-check duplicates, check identity heads,
  // resolve admission failures of non-duplicates (lowest item), enforce the identity cap, assign
  // ids in item order, read server_ns once, compute expiries with checked arithmetic, insert,
  // advance watermarks, project identity changes, commit.
  virtual StoreResult<CommitPublishResult> CommitPublish(const CommitPublishRequest& request) = 0;

  // CommitPublish without holding the calling thread, where the engine can hand the request to a
  // thread of its own at once (SQLite's writer, PostgreSQL's publish leaders; each while its queue
  // is short). Returns true when it did: `done` then runs exactly once, on an engine thread, with
  // what CommitPublish would have returned. Returns false and never calls `done` otherwise; the
  // caller then runs CommitPublish on the DB pool. Never blocks.
  using CommitPublishDone = std::function<void(StoreResult<CommitPublishResult>)>;
  virtual bool StartCommitPublish(std::shared_ptr<const CommitPublishRequest> request,
                                  CommitPublishDone done) {
    (void)request;
    (void)done;
    return false;
  }

  // API-240: per topic ids above its cursor; the page is the lowest `limit` candidates overall,
  // each topic a prefix; has_more from the same snapshot. Topics are distinct. Primary.
  // Payloads are read in id order until their total passes `max_payload_bytes` (issue 28: a page
  // of 1,000 envelopes of 1 MiB is never read whole to be refused as too large); the page is
  // then over_budget.
  virtual StoreResult<QueryPage> Query(const std::vector<TopicCursor>& topics, uint32_t limit,
                                       uint64_t max_payload_bytes) = 0;
  // Query with no bound on the payloads read (tests).
  StoreResult<QueryPage> Query(const std::vector<TopicCursor>& topics, uint32_t limit) {
    return Query(topics, limit, UINT64_MAX);
  }

  // Issue 33 (docs/v3-api.md G1): the rows of one topic with id < `before` (0: no bound), newest
  // first, at most `limit`. `envelopes` is in DESCENDING id order here; has_more: an older row of
  // the topic exists below the page, from the same snapshot. Payloads are read in page order until
  // their total passes `max_payload_bytes`, as for Query (over_budget, ending at that row).
  // Primary.
  virtual StoreResult<QueryPage> QueryBefore(const std::string& topic, int64_t before,
                                             uint32_t limit, uint64_t max_payload_bytes) = 0;

  // API-244: the newest envelope per distinct topic that has one, in request order; payload
  // empty unless `with_payload`. The read database (replica when configured).
  virtual StoreResult<std::vector<StoredEnvelope>> Newest(const std::vector<std::string>& topics,
                                                          bool with_payload) = 0;
  // Newest read on the primary (docs/v3-api.md Q3: a key package uploaded a moment ago must be
  // found by the group creator that fetches it next). Engines without a replica read as Newest.
  virtual StoreResult<std::vector<StoredEnvelope>> NewestOnPrimary(
      const std::vector<std::string>& topics, bool with_payload) = 0;

  // API-270 (STORE.md 7, GetInboxIds): per input position the inbox (32 bytes) whose
  // identifier_association row for (identifier, kind) has no revocation and the greatest
  // association id; nullopt when none. Inputs are already normalized by kind; repeats allowed.
  // The read database (replica when configured, OPS-009).
  virtual StoreResult<std::vector<std::optional<std::string>>> InboxIds(
      const std::vector<IdentifierKey>& identifiers) = 0;

  // API 3.7: the envelope with that id, nullopt when none is visible. Primary.
  virtual StoreResult<std::optional<StoredEnvelope>> Get(int64_t sequence_id) = 0;

  // --- Pruning (STORE.md 9.2, issue 35) ---

  // Makes the pass's partial index on the expiry, once per database, before the first batch: only
  // deployments that prune pay for it on every publish. PostgreSQL builds it CONCURRENTLY
  // (publishes go on; an invalid one a failed build left is rebuilt) under the pass's lock (0, 5),
  // on a connection of its own: false when another instance holds the lock (it prepares or prunes;
  // try again at the next pass). SQLite builds it as a writer job (publishes wait, once).
  virtual StoreResult<bool> PreparePruning() { return true; }
  // From any thread: a PreparePruning running or starting later fails promptly (a drain).
  virtual void CancelPreparePruning() {}

  // One batch of the pruning pass on the primary: of the first `limit` rows after `after` in
  // (expiry_ns, sequence_id) order whose expiry is below the store's clock, deletes in one
  // transaction those with a non-NULL expiry strictly below the clock read inside the deleting
  // statement, not commits or proposals, not on topic kinds 2 or 4, not their topic's watermark
  // row, at or below the closed allocation boundary, and, with `hold_at_push_cursor` (push is
  // configured: a dispatcher may still owe them), at or below the push cursor. Records the
  // greatest deleted id in PrunedThrough. Engines without pruning delete nothing (done).
  virtual StoreResult<PruneBatchResult> PruneBatch(const PruneKey& after, uint32_t limit,
                                                   bool hold_at_push_cursor) {
    (void)after;
    (void)limit;
    (void)hold_at_push_cursor;
    return PruneBatchResult{.deleted = 0, .done = true, .busy = false, .next = {}};
  }

  // The greatest id a pruning pass has ever deleted (0: none), as the read database shows it, read
  // after a catch-up read: a catch-up range ending at or below it may have lost its rows to the
  // pass rather than to a fault (fanout/wave_read.h). Never decreases.
  virtual StoreResult<int64_t> PrunedThrough() { return 0; }

  // --- Streams (STORE.md 4-5, 7) ---

  // One attempt of the boundary task on the primary (STORE.md 4.1). A lock timeout is not an
  // error (lock_timeout = true); anything else that fails is. SQLite reads its persisted boundary.
  virtual StoreResult<BoundaryAdvance> AdvanceBoundary() = 0;

  // Opens the tailer's dedicated connection to the read database. On PostgreSQL its
  // application_name is "xmtp-backend tailer" so operators (and tests) can find it.
  virtual StoreResult<std::unique_ptr<TailReader>> OpenTailReader() = 0;

  // Heads (STORE.md 7): per input position the topic's watermark, 0 when absent. Read database.
  virtual StoreResult<std::vector<int64_t>> Heads(const std::vector<std::string>& topics) = 0;

  // Catch-up history (STORE.md 7) in one REPEATABLE READ, READ ONLY snapshot of the read
  // database: per range (same order) its rows ascending, at most `per_range` each. Byte cutoff:
  // rows are admitted in rounds (round k takes the k-th row of every range, in range order), each
  // counted as payload + 256 bytes, until the next row would pass `byte_budget`; the first row is
  // always admitted. So each range's result is a prefix of its rows, and payloads are loaded
  // only for admitted rows.
  virtual StoreResult<std::vector<std::vector<StoredEnvelope>>> CatchUp(
      const std::vector<CatchUpRange>& ranges, uint32_t per_range, uint64_t byte_budget) = 0;

  // The rows CatchUp returns, handed to `visit` one at a time as (range index, row) where the
  // engine can do so without copying them first: each range's rows in ascending order, ranges
  // possibly interleaved (a row two ranges share may be handed over once per range). `visit`
  // returns false to stop early (nothing more is handed over). Runs on the calling thread; the
  // default materializes CatchUp's result and visits it range by range.
  using CatchUpVisitor = std::function<bool(size_t range, const StoredEnvelopeView& row)>;
  virtual std::optional<StoreError> VisitCatchUp(const std::vector<CatchUpRange>& ranges,
                                                 uint32_t per_range, uint64_t byte_budget,
                                                 const CatchUpVisitor& visit) {
    auto fetched = CatchUp(ranges, per_range, byte_budget);
    if (!fetched.ok()) {
      return std::move(fetched).error();
    }
    const auto& per = fetched.value();
    for (size_t r = 0; r < per.size(); ++r) {
      for (const StoredEnvelope& row : per[r]) {
        if (!visit(r, StoredEnvelopeView::Of(row))) {
          return std::nullopt;
        }
      }
    }
    return std::nullopt;
  }

  // Called after each commit that stored rows, with the new last id, on the committing thread
  // (the tailer's in-process wake-up, STORE.md 8; on PostgreSQL for this instance's own
  // publishes), possibly just after the publish returned. It must be quick and must not call into
  // the store. `urgent`, where the engine orders the two (SQLite), is asked at each commit: true
  // means the listener hears of it before the commit's publishers are told (streams are waiting
  // for rows), false after them (nothing is waiting: the responses go first).
  virtual void SetCommitListener(std::function<void(int64_t last_id)> listener,
                                 std::function<bool()> urgent = nullptr) {
    (void)listener;
    (void)urgent;
  }

  // How soon after one tailer poll began a commit may start the next. Zero where a poll is an
  // in-process read (SQLite); an engine whose poll costs a round of statements on a database
  // connection asks for a gap, so that its poll rate stays bounded under a publish load.
  virtual std::chrono::milliseconds CommitWakeGap() const { return std::chrono::milliseconds(0); }

  // How many bytes a catch-up wave reads from the store, at most (what a stream cannot queue yet
  // waits in the history cache, fanout/history_cache.h). An in-process read (SQLite) is cheap, so
  // small waves keep the wave buffers small and in cache; an engine whose read is a round trip
  // asks for larger waves, so that a stream is not held to one small read per round trip.
  virtual uint64_t CatchUpWaveBytes() const { return uint64_t{1} << 20; }
};

}  // namespace xb::store
