// Helpers shared by the PostgreSQL engine's push files (push.cc, push_dispatch.cc). Internal to
// store/postgres.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "store/postgres/connection.h"
#include "store/postgres/pool.h"

namespace xb::store::postgres::push_support {

// Past the statement timeout the server answers 57014 itself; the client waits this much longer.
inline constexpr std::chrono::milliseconds kClientSlack{1000};

// The store clock (OPS-020, PUSH.md "the store clock"), as a SQL expression.
#define XB_PG_CLOCK_NS "(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint"

inline Clock::time_point DeadlineIn(int timeout_ms) {
  return Clock::now() + std::chrono::milliseconds(timeout_ms) + kClientSlack;
}

// One statement on a leased connection of `pool`.
inline StoreResult<PgResult> ExecOnce(ConnectionPool& pool, int timeout_ms, std::string_view what,
                                      const char* sql, const Params& params) {
  auto lease = pool.Acquire(Clock::now() + std::chrono::milliseconds(timeout_ms));
  if (!lease.ok()) {
    return lease.error().ToStoreError();
  }
  auto r = lease.value()->Exec(what, sql, params, DeadlineIn(timeout_ms));
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  return std::move(r).value();
}

inline StoreError BadRow(std::string_view what) {
  return InvariantError(what, "the database answered an unexpected shape").ToStoreError();
}

inline std::optional<std::string> OptionalBytes(const PgResult& rows, int row, int col) {
  if (rows.IsNull(row, col)) {
    return std::nullopt;
  }
  return std::string(rows.Bytes(row, col));
}

}  // namespace xb::store::postgres::push_support
