// The publish write transaction of the embedded engine: STORE.md 3.1 steps 5-13 as adapted by
// section 8. Runs on the writer thread (writer.h), whose turn replaces every PostgreSQL lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "store/sqlite/connection.h"
#include "store/store.h"

namespace xb::store::sqlite {

// expiry_ns of a new row (STORE.md 9.1): 0 (stored as NULL) for kExempt; otherwise
// server_ns + seconds x 10^9 with checked arithmetic; kOverflow when either step leaves int64
// (OPS-020: SQLite would silently turn an overflowing integer into a float).
StoreResult<int64_t> ComputeExpiryNs(int64_t server_ns, RetentionClass retention,
                                     const RetentionSeconds& seconds);

struct PublishOutcome {
  CommitPublishResult result;
  // The new last committed id when rows were stored; nullopt when every item was a duplicate.
  std::optional<int64_t> committed_through;
};

// In one BEGIN IMMEDIATE transaction on `conn`: reads `now_ns()` once as server_ns, re-checks
// duplicates, checks identity heads (kStaleHistory), resolves admission of non-duplicates in item
// order (kAdmission with the lowest failing item, pending failures and the identity cap alike),
// assigns ids closed_sequence_id + 1.. in item order, computes expiries (kOverflow), inserts,
// advances watermarks (kInvariant if one would not rise), projects identity changes, moves the
// boundary to the last id, checks the deadline once more and commits. On any error nothing is
// stored. Items repeating an earlier item's (topic, hash) are answered as its duplicates.
StoreResult<PublishOutcome> CommitPublishTransaction(Connection& conn,
                                                     const CommitPublishRequest& request,
                                                     const std::function<int64_t()>& now_ns);

}  // namespace xb::store::sqlite
