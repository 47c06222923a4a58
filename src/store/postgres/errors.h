// Typed errors of the PostgreSQL engine: the mapping of SQLSTATE codes and client-side failures to
// the store's ErrorKind (STORE.md 3.2). Messages name the operation, a fixed description and the
// SQLSTATE, and at most a constraint name: never server message text, request data or a URL
// (OPS-014).
#pragma once

#include <string>
#include <string_view>

#include "base/expected.h"
#include "base/status.h"
#include "store/store.h"

namespace xb::store::postgres {

// The cause class of a SQLSTATE (store::ErrorCause): 53100 disk full, 53200 out of memory, other
// class 53 resources, 58030 and class 58 I/O error, XX001/XX002 corruption, 25006 and 42501
// read-only, 3D000 cannot open, class 08 and 57P connection, the timeout codes and 55P03 timeout,
// class 23 and 22003 invariant; kUnclassified for anything else and for "".
ErrorCause CauseForSqlState(std::string_view sqlstate);

// One failed database operation. `sqlstate` is empty when the server sent none (a lost
// connection, a client-side deadline), or holds the code a connection failure implies.
struct DbError {
  ErrorKind kind = ErrorKind::kOther;
  std::string sqlstate;
  std::string message;

  // The cause class comes from the SQLSTATE (CauseForSqlState); without one, the kind stands for
  // it.
  StoreError ToStoreError() const {
    StoreError error = MakeStoreError(kind, message);
    error.cause = CauseForSqlState(sqlstate);
    return error;
  }

  static StoreError MakeStoreError(ErrorKind kind, std::string message) {
    StoreError error;
    error.kind = kind;
    error.message = std::move(message);
    return error;
  }
};

template <typename T>
using DbResult = Expected<T, DbError>;

// implements: STORE.md 3.2 (failure mapping)
// 57014, 25P03, 25P04 -> kTimeout; class 23 and 22003 -> kInvariant; class 08 and 57P ->
// kConnection; anything else -> kOther.
ErrorKind KindForSqlState(std::string_view sqlstate);

// An error the server reported for `what`.
DbError ServerError(std::string_view what, std::string_view sqlstate, std::string_view constraint);
// The connection broke or closed (kConnection).
DbError ConnectionLost(std::string_view what);
// The client-side deadline passed (kTimeout).
DbError DeadlineExceeded(std::string_view what);
// A connection pool had no connection by the deadline (kPoolTimeout: UNAVAILABLE, "timeout").
DbError PoolTimeout(std::string_view what);
// A broken expectation about the database's answer (kInvariant).
DbError InvariantError(std::string_view what, std::string_view detail);

// Status for callers that use Status rather than StoreError (Open, the boundary task):
// kTimeout -> DEADLINE_EXCEEDED, kInvariant and kOverflow -> INTERNAL, others -> UNAVAILABLE.
Status ToStatus(const DbError& error);

}  // namespace xb::store::postgres
