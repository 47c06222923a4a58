#include "store/sqlite/prune.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>

namespace xb::store::sqlite {
namespace {

int64_t RealTimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ClockFunction(sqlite3_context* context, int, sqlite3_value**) {
  sqlite3_result_int64(context, RealTimeNs());
}

// The batch's window: the limit-th expired row after the resume key, through the partial index
// on the expiry. The clock here only sizes the window; the delete reads it again itself.
constexpr const char* kWindowEnd = R"sql(
SELECT expiry_ns, sequence_id FROM envelopes INDEXED BY envelopes_expiry
WHERE expiry_ns IS NOT NULL AND expiry_ns < ?3 AND (expiry_ns, sequence_id) > (?1, ?2)
ORDER BY expiry_ns, sequence_id LIMIT 1 OFFSET ?4)sql";

// implements: STORE.md 9.2 rules 1-5, OPS-001, OPS-002 — the six rules in one predicate: clock
// read inside the statement and strict `<`; NULL expiry never matches, commits, proposals and
// topic kinds 2 and 4 excluded again; the topic's watermark row kept (a topic without one keeps
// everything: `<> NULL` is not true); at or below the closed boundary; with ?5 (push configured)
// at or below the push cursor, so nothing a dispatcher may still owe goes (rule 4 as written:
// the cursor is a low watermark, and which rows are owed can change with a subscription).
constexpr const char* kDelete = R"sql(
DELETE FROM envelopes WHERE sequence_id IN (
  SELECT e.sequence_id FROM envelopes AS e INDEXED BY envelopes_expiry
  WHERE e.expiry_ns IS NOT NULL
    AND (e.expiry_ns, e.sequence_id) > (?1, ?2) AND (e.expiry_ns, e.sequence_id) <= (?3, ?4)
    AND e.expiry_ns < xb_clock_ns()
    AND e.is_commit_or_proposal = 0
    AND substr(e.topic, 1, 1) NOT IN (x'02', x'04')
    AND e.sequence_id <= (SELECT closed_sequence_id FROM allocation_boundary WHERE singleton = 1)
    AND e.sequence_id <> (SELECT w.last_sequence_id FROM topic_watermark AS w
                          WHERE w.topic = e.topic)
    AND (?5 = 0 OR e.sequence_id <= (SELECT sequence_id FROM push_cursor WHERE singleton = 1)))
RETURNING sequence_id)sql";

constexpr const char* kNotePruned =
    "UPDATE prune_state SET pruned_through = max(pruned_through, ?1) WHERE singleton = 1";

// Where the batch's window ends: the limit-th expired row, or nothing (the pass ends with it).
StoreResult<std::optional<PruneKey>> WindowEnd(Connection& conn, const PruneKey& after,
                                               uint32_t limit) {
  StatementUse row = conn.Use(kWindowEnd, "prune window");
  row.BindInt64(1, after.expiry_ns)
      .BindInt64(2, after.sequence_id)
      .BindInt64(3, RealTimeNs())
      .BindInt64(4, int64_t{limit} - 1);
  if (row.Step()) {
    return std::optional<PruneKey>(PruneKey{row.ColumnInt64(0), row.ColumnInt64(1)});
  }
  if (row.error()) {
    return *row.error();
  }
  return std::optional<PruneKey>();
}

}  // namespace

StoreResult<void> RegisterPruneClock(Connection& conn) {
  const int rc = sqlite3_create_function(conn.get(), "xb_clock_ns", 0, SQLITE_UTF8, nullptr,
                                         &ClockFunction, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    StoreError error;
    error.kind = ErrorKind::kOther;
    error.message = "cannot register the pruning clock";
    return error;
  }
  return {};
}

StoreResult<void> BuildPruneIndex(Connection& conn) {
  return conn.Exec(
      "CREATE INDEX IF NOT EXISTS envelopes_expiry ON envelopes (expiry_ns, sequence_id) "
      "WHERE expiry_ns IS NOT NULL",
      "build prune index");
}

StoreResult<PruneBatchResult> RunPruneBatch(Connection& conn, const PruneKey& after, uint32_t limit,
                                            bool hold_at_push_cursor) {
  WriteTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  XB_TRY(const std::optional<PruneKey> end, WindowEnd(conn, after, limit));
  PruneBatchResult result;
  result.done = !end.has_value();
  result.next = end.value_or(PruneKey{INT64_MAX, INT64_MAX});
  int64_t greatest = 0;
  {
    StatementUse gone = conn.Use(kDelete, "prune batch");
    gone.BindInt64(1, after.expiry_ns)
        .BindInt64(2, after.sequence_id)
        .BindInt64(3, result.next.expiry_ns)
        .BindInt64(4, result.next.sequence_id)
        .BindInt64(5, hold_at_push_cursor ? 1 : 0);
    while (gone.Step()) {
      ++result.deleted;
      greatest = std::max(greatest, gone.ColumnInt64(0));
    }
    if (gone.error()) {
      return *gone.error();
    }
  }
  if (result.deleted > 0) {
    XB_TRY_VOID(conn.Use(kNotePruned, "note pruned").BindInt64(1, greatest).Run());
  }
  XB_TRY_VOID(txn.Commit());
  return result;
}

StoreResult<int64_t> ReadPrunedThrough(Connection& conn) {
  StatementUse row =
      conn.Use("SELECT pruned_through FROM prune_state WHERE singleton = 1", "read pruned");
  if (row.Step()) {
    return row.ColumnInt64(0);
  }
  if (row.error()) {
    return *row.error();
  }
  StoreError error;
  error.kind = ErrorKind::kInvariant;
  error.message = "the prune state row is missing";
  return error;
}

}  // namespace xb::store::sqlite
