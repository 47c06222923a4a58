#include "store/sqlite/tail_reader.h"

#include <chrono>
#include <utility>

#include "store/sqlite/reads.h"

namespace xb::store::sqlite {
namespace {

StoreError MakeError(ErrorKind kind, std::string message) {
  StoreError error;
  error.kind = kind;
  error.message = std::move(message);
  return error;
}

RowHead ReadRowHead(const StatementUse& row) {
  return RowHead{.sequence_id = row.ColumnInt64(0),
                 .topic = row.ColumnBlob(1),
                 .payload_bytes = static_cast<uint64_t>(row.ColumnInt64(2))};
}

}  // namespace

StoreResult<std::unique_ptr<TailReader>> SqliteTailReader::Open(const std::string& path,
                                                                uint32_t statement_timeout_ms) {
  Result<std::unique_ptr<Connection>> conn =
      Connection::Open(path, Connection::Role::kReader, statement_timeout_ms);
  if (!conn.ok()) {
    return MakeError(ErrorKind::kConnection,
                     "open the tailer connection: " + conn.status().message());
  }
  return std::unique_ptr<TailReader>(
      new SqliteTailReader(std::move(conn).value(), statement_timeout_ms));
}

StoreResult<void> SqliteTailReader::Ready(Snapshot expected) {
  if (conn_ == nullptr) {
    return MakeError(ErrorKind::kConnection, "tailer: the connection was closed after an error");
  }
  const Snapshot actual = conn_->InTransaction() ? Snapshot::kOpen : Snapshot::kClosed;
  if (actual != expected) {
    return Fail(MakeError(ErrorKind::kInvariant, expected == Snapshot::kOpen
                                                     ? "tailer: no snapshot is open"
                                                     : "tailer: a snapshot is already open"));
  }
  conn_->SetDeadline(Clock::now() + std::chrono::milliseconds(statement_timeout_ms_));
  return {};
}

StoreError SqliteTailReader::Fail(StoreError error) {
  if (conn_ != nullptr) {
    conn_->RollbackIfOpen();
    conn_.reset();
  }
  return error;
}

// implements: STORE.md 5.3 step 1 and 8 (one snapshot per poll; the boundary read starts it)
StoreResult<int64_t> SqliteTailReader::Begin() {
  XB_TRY_VOID(Ready(Snapshot::kClosed));
  if (StoreResult<void> e = conn_->Run("BEGIN DEFERRED", "tailer: begin"); !e.ok()) {
    return Fail(e.error());
  }
  StoreResult<int64_t> boundary = ReadBoundary(*conn_);
  if (!boundary.ok()) {
    return Fail(boundary.error());
  }
  return boundary;
}

// implements: STORE.md 5.3 step 2 (gap probes: primary-key range scans, at most per_range rows)
StoreResult<std::vector<std::vector<RowHead>>> SqliteTailReader::Probe(
    const std::vector<IdRange>& ranges, uint32_t per_range) {
  XB_TRY_VOID(Ready(Snapshot::kOpen));
  std::vector<std::vector<RowHead>> out(ranges.size());
  for (size_t r = 0; r < ranges.size(); ++r) {
    StatementUse rows = conn_->Use(
        "SELECT sequence_id, topic, length(payload) FROM envelopes "
        "WHERE sequence_id BETWEEN ?1 AND ?2 ORDER BY sequence_id LIMIT ?3",
        "tailer: gap probe");
    rows.BindInt64(1, ranges[r].low).BindInt64(2, ranges[r].high).BindInt64(3, per_range);
    while (rows.Step()) {
      out[r].push_back(ReadRowHead(rows));
    }
    if (rows.error()) {
      return Fail(*rows.error());
    }
  }
  return out;
}

// implements: STORE.md 5.3 step 3 (forward scan above the cursor)
StoreResult<std::vector<RowHead>> SqliteTailReader::Forward(int64_t after, uint32_t limit) {
  XB_TRY_VOID(Ready(Snapshot::kOpen));
  StatementUse rows = conn_->Use(
      "SELECT sequence_id, topic, length(payload) FROM envelopes WHERE sequence_id > ?1 "
      "ORDER BY sequence_id LIMIT ?2",
      "tailer: forward scan");
  rows.BindInt64(1, after).BindInt64(2, limit);
  std::vector<RowHead> out;
  while (rows.Step()) {
    out.push_back(ReadRowHead(rows));
  }
  if (rows.error()) {
    return Fail(*rows.error());
  }
  return out;
}

// implements: STORE.md 5.3 step 4 (payloads of the selected ids, same snapshot)
StoreResult<std::vector<StoredEnvelope>> SqliteTailReader::Load(const std::vector<int64_t>& ids) {
  XB_TRY_VOID(Ready(Snapshot::kOpen));
  StoreResult<std::vector<StoredEnvelope>> rows = LoadEnvelopes(*conn_, ids);
  if (!rows.ok()) {
    return Fail(rows.error());
  }
  return rows;
}

StoreResult<bool> SqliteTailReader::End() {
  if (conn_ != nullptr && !conn_->InTransaction()) {
    return true;  // no snapshot open
  }
  XB_TRY_VOID(Ready(Snapshot::kOpen));
  if (StoreResult<void> e = conn_->Run("COMMIT", "tailer: end"); !e.ok()) {
    return Fail(e.error());
  }
  conn_->ClearDeadline();
  return true;
}

}  // namespace xb::store::sqlite
