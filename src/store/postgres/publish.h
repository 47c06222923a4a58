// The publish transaction on the primary (STORE.md 3.1 steps 5-13, 3.2, 3.3).
#pragma once

#include "store/postgres/pool.h"
#include "store/store.h"

namespace xb::store::postgres {

struct PublishBounds {
  int statement_timeout_ms = 5000;      // database.max_statement_timeout_ms
  int max_publish_duration_ms = 10000;  // publishing.max_publish_duration_ms
};

// Runs one publish transaction on a connection of `primary`. See Store::CommitPublish; the
// lifetime ends at the earlier of request.deadline (unless unset) and max_publish_duration_ms from
// now, and holds inside PostgreSQL too (local idle_in_transaction_session_timeout and
// statement_timeout), so an abandoned publish never keeps topic locks or the barrier.
StoreResult<CommitPublishResult> CommitPublishOn(ConnectionPool& primary,
                                                 const PublishBounds& bounds,
                                                 const CommitPublishRequest& request);

}  // namespace xb::store::postgres
