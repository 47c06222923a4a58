// The tailer's dedicated reader on the embedded engine (store.h TailReader, STORE.md 5.3 and 8): a
// query_only connection of its own, outside the reader pool, so a poll never waits for a pooled
// reader and never holds one.
//
// Threading: used by one thread at a time (the tailer). After any error the connection is closed
// and every later call fails kConnection; the caller opens a new one (a new recovery generation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/sqlite/connection.h"
#include "store/store.h"

namespace xb::store::sqlite {

class SqliteTailReader final : public TailReader {
 public:
  // Opens a reader connection (query_only, busy_timeout) on `path`; each call is bounded by
  // `statement_timeout_ms` (the progress handler interrupts it: kTimeout).
  static StoreResult<std::unique_ptr<TailReader>> Open(const std::string& path,
                                                       uint32_t statement_timeout_ms);

  // TailReader. Begin is BEGIN DEFERRED plus the boundary read, which starts the WAL snapshot;
  // Probe, Forward and Load are primary-key range scans in it; End commits. Begin while a snapshot
  // is open, or a scan without one, is a caller bug (kInvariant).
  StoreResult<int64_t> Begin() override;
  StoreResult<std::vector<std::vector<RowHead>>> Probe(const std::vector<IdRange>& ranges,
                                                       uint32_t per_range) override;
  StoreResult<std::vector<RowHead>> Forward(int64_t after, uint32_t limit) override;
  StoreResult<std::vector<StoredEnvelope>> Load(const std::vector<int64_t>& ids) override;
  StoreResult<bool> End() override;

 private:
  SqliteTailReader(std::unique_ptr<Connection> conn, uint32_t statement_timeout_ms)
      : conn_(std::move(conn)), statement_timeout_ms_(statement_timeout_ms) {}

  enum class Snapshot : uint8_t { kClosed, kOpen };
  // Checks that the connection is still open and the snapshot is in the `expected` state (the
  // error to return otherwise), and arms this call's deadline.
  StoreResult<void> Ready(Snapshot expected);
  // Any error closes the connection (rolling back its snapshot) and is passed through.
  StoreError Fail(StoreError error);

  std::unique_ptr<Connection> conn_;  // null after an error
  const uint32_t statement_timeout_ms_;
};

}  // namespace xb::store::sqlite
