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

}  // namespace

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
