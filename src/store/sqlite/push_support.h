// Helpers shared by the embedded engine's push files (push.cc, push_dispatch.cc): running a job
// on the writer or on a leased reader, and reading single-row answers. Internal to store/sqlite.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "store/sqlite/connection.h"
#include "store/sqlite/reader_pool.h"
#include "store/sqlite/writer.h"

namespace xb::store::sqlite::push_support {

inline StoreError Invariant(std::string message) {
  StoreError error;
  error.kind = ErrorKind::kInvariant;
  error.message = std::move(message);
  return error;
}

inline Clock::time_point DeadlineIn(uint32_t timeout_ms) {
  return Clock::now() + std::chrono::milliseconds(timeout_ms);
}

// Runs `job` on the writer thread and returns what it returned (or the writer's refusal).
template <typename T, typename Job>
StoreResult<T> OnWriter(Writer& writer, uint32_t timeout_ms, Job&& job) {
  std::optional<StoreResult<T>> out;
  XB_TRY_VOID(writer.Run(DeadlineIn(timeout_ms), [&](Connection& conn) { out = job(conn); }));
  if (!out) {
    return Invariant("the push write did not run");
  }
  return std::move(*out);
}

// Runs `read` on a leased reader inside one read transaction, one deadline for both.
template <typename T, typename Read>
StoreResult<T> OnReader(ReaderPool& readers, uint32_t timeout_ms, Read&& read) {
  const Clock::time_point deadline = DeadlineIn(timeout_ms);
  XB_TRY(ReaderPool::Lease lease, readers.Acquire(deadline));
  lease->SetDeadline(deadline);
  ReadTransaction txn(&*lease);
  XB_TRY_VOID(txn.Begin());
  return read(*lease);
}

// The single result of a statement that returns at most one row: nullopt when none.
template <typename T, typename Column>
StoreResult<std::optional<T>> OneRow(StatementUse& row, Column&& column) {
  if (row.Step()) {
    return std::optional<T>(column(row));
  }
  if (row.error()) {
    return *row.error();
  }
  return std::optional<T>();
}

// Whether the statement (DML ... RETURNING) produced a row.
inline StoreResult<bool> Returned(StatementUse& row) {
  if (row.Step()) {
    return true;
  }
  if (row.error()) {
    return *row.error();
  }
  return false;
}

inline std::optional<std::string> OptionalBlob(const StatementUse& row, int index) {
  if (row.ColumnIsNull(index)) {
    return std::nullopt;
  }
  return row.ColumnBlob(index);
}

}  // namespace xb::store::sqlite::push_support
