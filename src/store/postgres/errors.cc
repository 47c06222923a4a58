#include "store/postgres/errors.h"

#include <string>

namespace xb::store::postgres {
namespace {

bool HasClass(std::string_view sqlstate, std::string_view cls) {
  return sqlstate.size() == 5 && sqlstate.substr(0, cls.size()) == cls;
}

// A fixed description per code or class: server message text may quote data, so it is never used.
std::string_view Describe(std::string_view sqlstate) {
  if (sqlstate == "57014") {
    return "statement timeout or cancel";
  }
  if (sqlstate == "25P03") {
    return "idle-in-transaction timeout";
  }
  if (sqlstate == "25P04") {
    return "transaction timeout";
  }
  if (sqlstate == "23505") {
    return "unexpected unique violation";
  }
  if (sqlstate == "23514") {
    return "check violation";
  }
  if (sqlstate == "22003") {
    return "numeric value out of range";
  }
  if (sqlstate == "55P03") {
    return "lock not available";
  }
  if (sqlstate == "40P01") {
    return "deadlock detected";
  }
  if (sqlstate == "40001") {
    return "serialization failure or recovery conflict";
  }
  if (sqlstate == "3D000") {
    return "database does not exist";
  }
  if (HasClass(sqlstate, "23")) {
    return "integrity constraint violation";
  }
  if (HasClass(sqlstate, "08")) {
    return "connection failure";
  }
  if (HasClass(sqlstate, "57P")) {
    return "server shut the connection down";
  }
  if (sqlstate == "53100") {
    return "disk full";
  }
  if (sqlstate == "53200") {
    return "out of memory";
  }
  if (sqlstate == "53300") {
    return "too many connections";
  }
  if (HasClass(sqlstate, "53")) {
    return "insufficient resources";
  }
  if (HasClass(sqlstate, "58")) {
    return "system or I/O error";
  }
  if (sqlstate == "XX001" || sqlstate == "XX002") {
    return "data or index corrupted";
  }
  if (sqlstate == "25006") {
    return "read-only transaction";
  }
  if (sqlstate == "42501") {
    return "insufficient privilege";
  }
  if (HasClass(sqlstate, "42")) {
    return "syntax error or undefined object";
  }
  return "database error";
}

}  // namespace

ErrorKind KindForSqlState(std::string_view sqlstate) {
  if (sqlstate == "57014" || sqlstate == "25P03" || sqlstate == "25P04") {
    return ErrorKind::kTimeout;
  }
  // Every integrity violation is unexpected: the locks make the duplicate re-check final, and the
  // checks restate what the code already guarantees (ARC-050).
  if (HasClass(sqlstate, "23") || sqlstate == "22003") {
    return ErrorKind::kInvariant;
  }
  if (HasClass(sqlstate, "08") || HasClass(sqlstate, "57P")) {
    return ErrorKind::kConnection;
  }
  return ErrorKind::kOther;
}

ErrorCause CauseForSqlState(std::string_view sqlstate) {
  if (sqlstate == "53100") {
    return ErrorCause::kDiskFull;
  }
  if (sqlstate == "53200") {
    return ErrorCause::kOutOfMemory;
  }
  if (HasClass(sqlstate, "53")) {
    return ErrorCause::kResources;
  }
  if (HasClass(sqlstate, "58")) {
    return ErrorCause::kIoError;
  }
  if (sqlstate == "XX001" || sqlstate == "XX002") {
    return ErrorCause::kCorrupt;
  }
  if (sqlstate == "25006" || sqlstate == "42501") {
    return ErrorCause::kReadOnly;
  }
  if (sqlstate == "3D000") {
    return ErrorCause::kCannotOpen;
  }
  if (HasClass(sqlstate, "08") || HasClass(sqlstate, "57P")) {
    return ErrorCause::kConnection;
  }
  if (sqlstate == "57014" || sqlstate == "25P03" || sqlstate == "25P04" || sqlstate == "55P03") {
    return ErrorCause::kTimeout;
  }
  if (HasClass(sqlstate, "23") || sqlstate == "22003") {
    return ErrorCause::kInvariant;
  }
  return ErrorCause::kUnclassified;
}

DbError ServerError(std::string_view what, std::string_view sqlstate, std::string_view constraint) {
  std::string message(what);
  message += ": ";
  message += Describe(sqlstate);
  message += " (SQLSTATE ";
  message += sqlstate;
  message += ")";
  if (!constraint.empty()) {
    message += " on ";
    message += constraint;
  }
  return DbError{.kind = KindForSqlState(sqlstate),
                 .sqlstate = std::string(sqlstate),
                 .message = std::move(message)};
}

DbError ConnectionLost(std::string_view what) {
  return DbError{.kind = ErrorKind::kConnection,
                 .sqlstate = "",
                 .message = std::string(what) + ": connection to the database lost"};
}

DbError DeadlineExceeded(std::string_view what) {
  return DbError{.kind = ErrorKind::kTimeout,
                 .sqlstate = "",
                 .message = std::string(what) + ": deadline exceeded"};
}

DbError PoolTimeout(std::string_view what) {
  return DbError{.kind = ErrorKind::kPoolTimeout,
                 .sqlstate = "",
                 .message = std::string(what) + ": no database connection available in time"};
}

DbError InvariantError(std::string_view what, std::string_view detail) {
  return DbError{.kind = ErrorKind::kInvariant,
                 .sqlstate = "",
                 .message = std::string(what) + ": " + std::string(detail)};
}

Status ToStatus(const DbError& error) {
  switch (error.kind) {
    case ErrorKind::kTimeout:
      return Status(StatusCode::kDeadlineExceeded, error.message);
    case ErrorKind::kInvariant:
    case ErrorKind::kOverflow:
      return Internal(error.message);
    default:
      return Unavailable(error.message);
  }
}

}  // namespace xb::store::postgres
