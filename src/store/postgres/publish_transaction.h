// One PostgreSQL publish transaction (STORE.md 3.1 steps 5-13) on one leased connection, for one
// request or a batch of them (the combiner, publish.h, forms the batches). The SQL text is in
// publish_sql.h; the rules shared with SQLite in store/publish_rules.h.
//
// Threading: a PublishTransaction is used by one thread, the one holding the connection's lease.
// Every call blocks; none suspends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "store/postgres/connection.h"
#include "store/postgres/errors.h"
#include "store/store.h"

namespace xb::store::postgres {

// A failure that is not one request's own: it fails the whole transaction. retry_alone says
// whether the requests may still run on their own (nothing was committed) or must all report the
// error (the commit's outcome is unknown, ARC-053).
struct BatchFailure {
  StoreError error;
  bool retry_alone = true;
};

// Per request, in order: its result or its own failure; or a failure of the whole transaction.
using BatchOutcome = Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure>;

// The item is an identity update: it carries a validated head, or its topic has the identity kind.
bool IsIdentityItem(const PublishItem& item);

// Inputs the schema would reject anyway, caught before any lock is taken (kInvariant).
std::optional<StoreError> CheckRequest(const CommitPublishRequest& request);

// The new rows' columns, as the insert statements bind them (publish_transaction.cc).
struct NewRows;

class PublishTransaction {
 public:
  // `conn` outlives this. `end`: the transaction's lifetime (its earliest request's end).
  PublishTransaction(Connection& conn, int statement_timeout_ms, Clock::time_point end)
      : conn_(conn), statement_timeout_ms_(statement_timeout_ms), end_(end) {}
  ~PublishTransaction() { Rollback(); }
  PublishTransaction(const PublishTransaction&) = delete;
  PublishTransaction& operator=(const PublishTransaction&) = delete;

  // Runs `requests` (at least one) as one transaction. Each request keeps its own outcome: its
  // admission failure, identity staleness or duplicates never touch another's. A failure that is
  // not one request's own (a database error, a timeout, an expiry overflow) fails the whole
  // transaction (BatchFailure).
  BatchOutcome Run(const std::vector<const CommitPublishRequest*>& requests);

 private:
  struct Batch;  // the requests' items flattened, with their results so far

  // Run for requests of group-message kinds only (no identity item, no pending validation
  // failure): no outcome then depends on what the duplicate check finds, so the whole transaction
  // is one round trip.
  BatchOutcome RunInOneRound(const std::vector<const CommitPublishRequest*>& requests);

  // Steps 5-7 in one round trip: begin, the locks, the duplicate re-check and the identity heads;
  // marks duplicates and stale identity histories in `batch`.
  std::optional<BatchFailure> LockAndCheck(Batch& batch);
  // Step 8: per request, admission of its items that are not duplicates; fills batch.fresh.
  static void Admit(Batch& batch);
  // Steps 9-13 when no new row projects identity changes: one round trip (kStoreNew).
  BatchOutcome StoreFresh(Batch& batch, const NewRows& rows);
  // Steps 9-13 with identity projection: allocate, insert and project, commit.
  BatchOutcome StoreAndProject(Batch& batch, const NewRows& rows);
  // Step 9: the allocation barrier and one id per new row, ascending; the transaction's server_ns.
  std::optional<BatchFailure> Allocate(size_t count, std::vector<int64_t>* ids, int64_t* server_ns);
  // Steps 10-12: the rows, the watermarks and the identity projection, in one round trip.
  std::optional<BatchFailure> InsertAndProject(const Batch& batch, const NewRows& rows,
                                               const std::vector<int64_t>& ids, int64_t server_ns,
                                               const std::vector<std::optional<int64_t>>& expiries);
  // Step 13: COMMIT alone.
  std::optional<BatchFailure> CommitRound();

  // `before` (statements of this transaction not yet sent), then the barrier, kStoreNew bound to
  // `params` for `inputs` rows and the COMMIT, in one round trip. Returns kStoreNew's rows, one
  // per input.
  Expected<PgResult, BatchFailure> StoreAndCommit(std::vector<Connection::Statement> before,
                                                  const Params& params, size_t inputs);

  // Any failure: roll back (the transaction guard) and report.
  StoreError Fail(const DbError& error) {
    Rollback();
    return error.ToStoreError();
  }
  StoreError Fail(StoreError error) {
    Rollback();
    return error;
  }

  // One round trip of statements (a libpq pipeline) under the lifetime bound. The first round
  // begins the transaction and sets its local idle_in_transaction_session_timeout and
  // statement_timeout to the remaining lifetime when that is the smaller (STORE.md 3.3); a later
  // round lowers statement_timeout again first when the lifetime has shrunk below it. The client
  // gives up shortly after the lifetime if the server has not answered. Returns the results of
  // `statements` only; `*failed_at` as Connection::ExecPipeline, relative to `statements`.
  DbResult<std::vector<PgResult>> Round(std::string_view what,
                                        std::vector<Connection::Statement> statements,
                                        size_t* failed_at);
  void Rollback();

  int64_t RemainingMs() const {
    return std::chrono::floor<std::chrono::milliseconds>(end_ - Clock::now()).count();
  }

  Connection& conn_;
  const int statement_timeout_ms_;
  const Clock::time_point end_;
  int64_t local_statement_timeout_ms_ = 0;  // the value in effect inside the transaction
  bool open_ = false;
};

}  // namespace xb::store::postgres
