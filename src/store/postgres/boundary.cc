// The closed allocation boundary (STORE.md 4): the boundary task's one attempt, and reading it.
#include <string>

#include "store/postgres/postgres_store.h"

namespace xb::store::postgres {
namespace {

// How long past its own bounds the client waits before it cancels.
constexpr std::chrono::milliseconds kClientSlack{1000};

// Only after the exclusive grant: with CACHE 1, last_value is the greatest id ever handed out, and
// every drawer of an id up to it has ended (STORE.md 4.2).
constexpr const char* kReadSequence =
    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM envelope_sequence";

// Guarded so the stored value can only stay or rise (API-291).
constexpr const char* kStoreBoundary = R"sql(
UPDATE allocation_boundary SET closed_sequence_id = $1::int8
WHERE singleton AND closed_sequence_id <= $1::int8
RETURNING closed_sequence_id)sql";

constexpr const char* kReadBoundary =
    "SELECT closed_sequence_id FROM allocation_boundary WHERE singleton";

// Rolls back an attempt that did not commit; a connection that cannot is closed, which ends the
// server transaction and releases the barrier.
void RollbackAttempt(Connection& conn, int statement_timeout_ms) {
  if (!conn.usable() || conn.transaction_status() == PQTRANS_IDLE) {
    return;
  }
  auto r = conn.ExecScript("advance boundary: rollback", "ROLLBACK",
                           Clock::now() + std::chrono::milliseconds(statement_timeout_ms));
  if (!r.ok() || conn.transaction_status() != PQTRANS_IDLE) {
    conn.CancelAndClose();
  }
}

Status Failure(const DbError& error) { return ToStatus(error); }

}  // namespace

// implements: STORE.md 4.1, API-203, API-291
StoreResult<BoundaryAdvance> PostgresStore::AdvanceBoundary() {
  auto lease_or = primary_.Acquire(Clock::now() + StatementTimeout());
  if (!lease_or.ok()) {
    return lease_or.error().ToStoreError();
  }
  Connection& conn = *lease_or.value();
  // The barrier wait, then short statements, then a slack before the client cancels.
  auto deadline = Clock::now() + std::chrono::milliseconds(options_.max_barrier_wait_ms) +
                  StatementTimeout() + kClientSlack;
  // Every failure after BEGIN rolls the attempt back first. Errors keep the SQLSTATE mapping of
  // STORE.md 3.2; a broken expectation is kInvariant.
  auto fail = [&](const DbError& error) -> StoreError {
    RollbackAttempt(conn, options_.statement_timeout_ms);
    return error.ToStoreError();
  };

  // 1. One short READ COMMITTED transaction with a local lock_timeout.
  auto r = conn.ExecScript("advance boundary: begin",
                           "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = " +
                               std::to_string(options_.max_barrier_wait_ms),
                           deadline);
  if (!r.ok()) {
    return fail(r.error());
  }
  // 2. The barrier, exclusively. 55P03, or a 57014 that fires first, is a lock timeout: retried
  // later, never an error.
  r = conn.Exec("advance boundary: barrier", "SELECT pg_advisory_xact_lock(0, 2)", deadline);
  if (!r.ok()) {
    if (r.error().sqlstate == "55P03" || r.error().sqlstate == "57014") {
      RollbackAttempt(conn, options_.statement_timeout_ms);
      return BoundaryAdvance{.lock_timeout = true, .boundary = 0};
    }
    return fail(r.error());
  }
  // 3. v = last_value if is_called, else 0.
  r = conn.Exec("advance boundary: read sequence", kReadSequence, deadline);
  if (!r.ok()) {
    return fail(r.error());
  }
  if (r.value().rows() != 1) {
    return fail(InvariantError("advance boundary", "the sequence did not answer one row"));
  }
  int64_t v = r.value().Int8(0, 0);
  // 4. The guarded update must report exactly v.
  Params params;
  params.Int8(v);
  r = conn.Exec("advance boundary: store", kStoreBoundary, params, deadline);
  if (!r.ok()) {
    return fail(r.error());
  }
  const PgResult& updated = r.value();
  if (updated.rows() != 1 || updated.Int8(0, 0) != v) {
    return fail(InvariantError("advance boundary",
                               "the boundary row is missing or would go backwards (API-291)"));
  }
  // 5. Commit, which releases the barrier.
  r = conn.ExecScript("advance boundary: commit", "COMMIT", deadline);
  if (!r.ok()) {
    return fail(r.error());
  }
  if (r.value().CommandTag() != "COMMIT") {
    return InvariantError("advance boundary", "the transaction did not commit").ToStoreError();
  }
  return BoundaryAdvance{.lock_timeout = false, .boundary = v};
}

Result<int64_t> PostgresStore::ReadBoundary(Database database) {
  ConnectionPool& pool = database == Database::kPrimary ? primary_ : ReadPool();
  auto lease_or = pool.Acquire(Clock::now() + StatementTimeout());
  if (!lease_or.ok()) {
    return Failure(lease_or.error());
  }
  auto r =
      (*lease_or.value())
          .Exec("read boundary", kReadBoundary, Clock::now() + StatementTimeout() + kClientSlack);
  if (!r.ok()) {
    return Failure(r.error());
  }
  const PgResult& rows = r.value();
  if (rows.rows() != 1) {
    return Internal("read boundary: the boundary row is missing");
  }
  return rows.Int8(0, 0);
}

}  // namespace xb::store::postgres
