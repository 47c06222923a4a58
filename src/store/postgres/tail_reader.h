// The tailer's dedicated connection on the PostgreSQL engine (store.h TailReader, STORE.md 2.5,
// 5.1 and 5.3): one libpq connection to the read database (the replica when configured), outside
// the pools, named "xmtp-backend tailer" in pg_stat_activity.
//
// Threading: used by one thread at a time (the tailer); every call blocks for its round trip.
// After any error the connection is closed (ending its server transaction) and every later call
// fails kConnection; the caller opens a new one (a new recovery generation).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "store/postgres/connection.h"
#include "store/store.h"

namespace xb::store::postgres {

// What the tailer's connection shows as application_name (STORE.md 2.5).
inline constexpr const char* kTailerApplicationName = "xmtp-backend tailer";

class PostgresTailReader final : public TailReader {
 public:
  // `conn` is open on the read database with its statement_timeout set; each statement is also
  // bounded client-side by `statement_timeout` plus a slack (then cancelled: kTimeout).
  PostgresTailReader(std::unique_ptr<Connection> conn, std::chrono::milliseconds statement_timeout)
      : conn_(std::move(conn)), statement_timeout_(statement_timeout) {}

  // TailReader. Begin is BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY plus the boundary read;
  // Probe (one statement for all ranges), Forward and Load (one statement each) are primary-key
  // range scans in that snapshot; End commits. Begin while a snapshot is open, or a scan without
  // one, is a caller bug (kInvariant).
  StoreResult<int64_t> Begin() override;
  StoreResult<std::vector<std::vector<RowHead>>> Probe(const std::vector<IdRange>& ranges,
                                                       uint32_t per_range) override;
  StoreResult<std::vector<RowHead>> Forward(int64_t after, uint32_t limit) override;
  StoreResult<std::vector<StoredEnvelope>> Load(const std::vector<int64_t>& ids) override;
  StoreResult<bool> End() override;

 private:
  enum class Snapshot : uint8_t { kClosed, kOpen };
  // The error to return when the connection is gone or the snapshot is not in the `expected`
  // state; nullopt when the call may proceed.
  std::optional<DbError> Ready(std::string_view what, Snapshot expected);
  // Closes the connection (the server ends the snapshot) and converts the error.
  StoreError Fail(const DbError& error);
  Clock::time_point Deadline() const;

  const std::unique_ptr<Connection> conn_;
  const std::chrono::milliseconds statement_timeout_;
};

}  // namespace xb::store::postgres
