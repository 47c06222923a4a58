// The pruning pass on PostgreSQL (STORE.md 9.2, issue 35): each batch is one statement in its own
// transaction on the primary, under the transaction advisory lock (0, 5), so one instance deletes
// at a time and a busy lock ends this instance's pass (another one is running it).
#include <climits>
#include <string>

#include "store/postgres/postgres_store.h"

namespace xb::store::postgres {
namespace {

constexpr std::chrono::milliseconds kClientSlack{1000};

// implements: STORE.md 9.2 rules 1-5, OPS-001, OPS-002 — one statement: the lock; the clock read
// once inside it; the window of the first $3 expired rows after ($1, $2) through the partial index
// on the expiry; the delete by primary key of those the rules allow (NULL expiry never matches;
// commits, proposals and topic kinds 2 and 4 excluded again; the topic's watermark row kept, and a
// topic without one keeps everything; at or below the closed boundary; with $4 (push configured)
// at or below the push cursor, the low watermark of what a dispatcher may still owe); the greatest
// deleted id noted in prune_state in the same transaction.
constexpr const char* kPruneBatch = R"sql(
WITH held_lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(0, 5) AS held),
clock AS MATERIALIZED (
  SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint AS ns),
win AS MATERIALIZED (
  SELECT expiry_ns, sequence_id FROM envelopes
  WHERE (SELECT held FROM held_lock) AND expiry_ns IS NOT NULL
    AND expiry_ns < (SELECT ns FROM clock) AND (expiry_ns, sequence_id) > ($1::int8, $2::int8)
  ORDER BY expiry_ns, sequence_id LIMIT $3::int8),
gone AS (
  DELETE FROM envelopes AS e USING win AS w
  WHERE e.sequence_id = w.sequence_id
    AND e.expiry_ns IS NOT NULL AND e.expiry_ns < (SELECT ns FROM clock)
    AND NOT e.is_commit_or_proposal
    AND get_byte(e.topic, 0) NOT IN (2, 4)
    AND e.sequence_id <= (SELECT closed_sequence_id FROM allocation_boundary WHERE singleton)
    AND e.sequence_id <> (SELECT t.last_sequence_id FROM topic_watermark AS t
                          WHERE t.topic = e.topic)
    AND (NOT $4::bool OR e.sequence_id <= (SELECT sequence_id FROM push_cursor WHERE singleton))
  RETURNING e.sequence_id),
noted AS (
  UPDATE prune_state SET pruned_through = greatest(pruned_through,
                                                   (SELECT max(sequence_id) FROM gone))
  WHERE singleton AND EXISTS (SELECT 1 FROM gone)
  RETURNING 1)
SELECT (SELECT held FROM held_lock), (SELECT count(*) FROM win), (SELECT count(*) FROM gone),
       (SELECT count(*) FROM noted), l.expiry_ns, l.sequence_id
FROM (SELECT 1) AS one
LEFT JOIN (SELECT expiry_ns, sequence_id FROM win
           ORDER BY expiry_ns DESC, sequence_id DESC LIMIT 1) AS l ON true)sql";

constexpr const char* kPrunedThrough = "SELECT pruned_through FROM prune_state WHERE singleton";

// The pass's partial index on the expiry (exempt rows, whose expiry is NULL, are not in it):
// CONCURRENTLY, so publishes go on while it is built. A build that failed or was cancelled leaves
// an invalid index behind, dropped and built again.
constexpr const char* kIndexState =
    "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('envelopes_expiry')";
constexpr const char* kDropInvalidIndex = "DROP INDEX CONCURRENTLY IF EXISTS envelopes_expiry";
constexpr const char* kBuildIndex =
    "CREATE INDEX CONCURRENTLY envelopes_expiry ON envelopes (expiry_ns, sequence_id) "
    "WHERE expiry_ns IS NOT NULL";
// The build reads the whole table once: bounded by a day, and by a cancel.
constexpr std::chrono::hours kBuildBound{24};

}  // namespace

// implements: STORE.md 9.2 rule 5 (the partial index on the expiry; one instance: key (0, 5))
StoreResult<bool> PostgresStore::PreparePruning() {
  auto conn = Connection::Open(options_.primary_url, "database.url", /*statement_timeout_ms=*/0,
                               Clock::now() + StatementTimeout(), "xmtp-backend prune index");
  if (!conn.ok()) {
    return conn.error().ToStoreError();
  }
  {
    std::lock_guard lock(prepare_mu_);
    if (prepare_cancelled_) {
      StoreError cancelled;
      cancelled.kind = ErrorKind::kOther;
      cancelled.message = "prepare pruning: cancelled (the server is stopping)";
      return cancelled;
    }
    prepare_cancel_ = conn.value()->MakeCancelToken();
  }
  // The session lock conflicts with the batches' transaction lock of the same key, and ends
  // with the connection.
  auto locked = conn.value()->Exec("prune lock", "SELECT pg_try_advisory_lock(0, 5)",
                                   Clock::now() + StatementTimeout());
  StoreResult<bool> outcome = true;
  if (!locked.ok()) {
    outcome = locked.error().ToStoreError();
  } else if (!locked.value().Bool(0, 0)) {
    outcome = false;
  } else {
    if (StoreResult<void> built = BuildPruneIndex(*conn.value()); !built.ok()) {
      outcome = built.error();
    }
    // Released here, not when the server notices the connection closed: the first batch
    // follows at once and must not find the lock still held.
    if (auto unlocked = conn.value()->Exec("prune unlock", "SELECT pg_advisory_unlock(0, 5)",
                                           Clock::now() + StatementTimeout());
        !unlocked.ok() && outcome.ok()) {
      outcome = unlocked.error().ToStoreError();
    }
  }
  std::lock_guard lock(prepare_mu_);
  prepare_cancel_.reset();
  return outcome;
}

StoreResult<void> PostgresStore::BuildPruneIndex(Connection& conn) {
  auto state = conn.Exec("prune index state", kIndexState, Clock::now() + StatementTimeout());
  if (!state.ok()) {
    return state.error().ToStoreError();
  }
  if (state.value().rows() == 1 && state.value().Bool(0, 0)) {
    return {};
  }
  const Clock::time_point bound = Clock::now() + kBuildBound;
  if (state.value().rows() == 1) {
    if (auto dropped = conn.Exec("drop invalid prune index", kDropInvalidIndex, bound);
        !dropped.ok()) {
      return dropped.error().ToStoreError();
    }
  }
  if (auto built = conn.Exec("build prune index", kBuildIndex, bound); !built.ok()) {
    return built.error().ToStoreError();
  }
  return {};
}

void PostgresStore::CancelPreparePruning() {
  std::lock_guard lock(prepare_mu_);
  prepare_cancelled_ = true;
  if (prepare_cancel_) {
    prepare_cancel_->Send();
  }
}

// implements: STORE.md 9.2 rule 5 (bounded batches, one instance at a time: key (0, 5))
StoreResult<PruneBatchResult> PostgresStore::PruneBatch(const PruneKey& after, uint32_t limit,
                                                        bool hold_at_push_cursor) {
  auto lease = primary_.Acquire(Clock::now() + StatementTimeout());
  if (!lease.ok()) {
    return lease.error().ToStoreError();
  }
  Params params;
  params.Int8(after.expiry_ns).Int8(after.sequence_id).Int8(limit).Bool(hold_at_push_cursor);
  auto r = lease.value()->Exec("prune batch", kPruneBatch, params,
                               Clock::now() + StatementTimeout() + kClientSlack);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& row = r.value();
  if (row.rows() != 1) {
    return InvariantError("prune batch", "the batch did not answer one row").ToStoreError();
  }
  PruneBatchResult result;
  if (!row.Bool(0, 0)) {
    result.busy = true;
    result.done = true;
    return result;
  }
  const int64_t examined = row.Int8(0, 1);
  result.deleted = static_cast<uint64_t>(row.Int8(0, 2));
  if (result.deleted > 0 && row.Int8(0, 3) != 1) {
    return InvariantError("prune batch", "the prune state row is missing").ToStoreError();
  }
  result.done = examined < int64_t{limit};
  result.next = result.done || row.IsNull(0, 4) ? PruneKey{INT64_MAX, INT64_MAX}
                                                : PruneKey{row.Int8(0, 4), row.Int8(0, 5)};
  return result;
}

StoreResult<int64_t> PostgresStore::PrunedThrough() {
  auto lease = ReadPool().Acquire(Clock::now() + StatementTimeout());
  if (!lease.ok()) {
    return lease.error().ToStoreError();
  }
  auto r = lease.value()->Exec("pruned through", kPrunedThrough,
                               Clock::now() + StatementTimeout() + kClientSlack);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  if (r.value().rows() != 1) {
    return InvariantError("pruned through", "the prune state row is missing").ToStoreError();
  }
  return r.value().Int8(0, 0);
}

}  // namespace xb::store::postgres
