#include "store/postgres/tail_reader.h"

#include <string>
#include <utility>

#include "store/postgres/postgres_store.h"
#include "store/postgres/rows.h"

namespace xb::store::postgres {
namespace {

// Past the statement timeout the server answers 57014 itself; the client waits this much longer
// before it cancels (a server or network that stopped answering).
constexpr std::chrono::milliseconds kClientSlack{1000};

constexpr const char* kBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

constexpr const char* kBoundary =
    "SELECT closed_sequence_id FROM allocation_boundary WHERE singleton";

// implements: STORE.md 5.3 step 2 (every range of a batch in one statement, each a primary-key
// range scan of at most $3 rows)
constexpr const char* kProbe = R"sql(
SELECT r.ord, x.sequence_id, x.topic, x.payload_bytes
FROM unnest($1::int8[], $2::int8[]) WITH ORDINALITY AS r(lo, hi, ord)
CROSS JOIN LATERAL (
  SELECT e.sequence_id, e.topic, octet_length(e.payload)::int8 AS payload_bytes
  FROM envelopes AS e
  WHERE e.sequence_id BETWEEN r.lo AND r.hi
  ORDER BY e.sequence_id
  LIMIT $3::int8) AS x
ORDER BY r.ord, x.sequence_id)sql";

// implements: STORE.md 5.3 step 3 (forward scan above the cursor)
constexpr const char* kForward = R"sql(
SELECT e.sequence_id, e.topic, octet_length(e.payload)::int8
FROM envelopes AS e
WHERE e.sequence_id > $1::int8
ORDER BY e.sequence_id
LIMIT $2::int8)sql";

// implements: STORE.md 5.3 step 4 (payloads of the selected ids, same snapshot)
constexpr const char* kLoad = "SELECT " XB_PG_META_COLUMNS R"sql(, e.payload
FROM envelopes AS e
WHERE e.sequence_id = ANY($1::int8[])
ORDER BY e.sequence_id)sql";

// Columns (sequence_id, topic, payload bytes) starting at `col`.
RowHead ReadRowHead(const PgResult& rows, int row, int col) {
  return RowHead{.sequence_id = rows.Int8(row, col),
                 .topic = std::string(rows.Bytes(row, col + 1)),
                 .payload_bytes = static_cast<uint64_t>(rows.Int8(row, col + 2))};
}

}  // namespace

// implements: STORE.md 2.5 and 5.1 (the tailer's dedicated connection to the read database,
// outside the pools)
StoreResult<std::unique_ptr<TailReader>> PostgresStore::OpenTailReader() {
  auto conn =
      Connection::Open(ReadUrl(), ReadSetting(), options_.statement_timeout_ms,
                       Clock::now() + StatementTimeout() + kClientSlack, kTailerApplicationName);
  if (!conn.ok()) {
    return conn.error().ToStoreError();
  }
  return std::unique_ptr<TailReader>(
      std::make_unique<PostgresTailReader>(std::move(conn).value(), StatementTimeout()));
}

Clock::time_point PostgresTailReader::Deadline() const {
  return Clock::now() + statement_timeout_ + kClientSlack;
}

std::optional<DbError> PostgresTailReader::Ready(std::string_view what, Snapshot expected) {
  // CheckIdle also reads what the server sent while we were idle: the FATAL message of a
  // terminated backend shows here as a lost connection.
  const bool alive = expected == Snapshot::kClosed ? conn_->CheckIdle() : conn_->usable();
  if (!alive) {
    return ConnectionLost(what);
  }
  const Snapshot actual =
      conn_->transaction_status() == PQTRANS_IDLE ? Snapshot::kClosed : Snapshot::kOpen;
  if (actual != expected) {
    return InvariantError(
        what, expected == Snapshot::kOpen ? "no snapshot is open" : "a snapshot is already open");
  }
  return std::nullopt;
}

StoreError PostgresTailReader::Fail(const DbError& error) {
  conn_->CancelAndClose();
  return error.ToStoreError();
}

// implements: STORE.md 5.3 step 1 (one REPEATABLE READ, READ ONLY snapshot per poll; the boundary
// as that snapshot shows it)
StoreResult<int64_t> PostgresTailReader::Begin() {
  if (auto e = Ready("tailer: begin", Snapshot::kClosed)) {
    return Fail(*e);
  }
  auto r = conn_->ExecScript("tailer: begin", kBegin, Deadline());
  if (!r.ok()) {
    return Fail(r.error());
  }
  r = conn_->Exec("tailer: boundary", kBoundary, Deadline());
  if (!r.ok()) {
    return Fail(r.error());
  }
  const PgResult& rows = r.value();
  if (rows.rows() != 1) {
    return Fail(InvariantError("tailer: boundary", "the boundary row is missing"));
  }
  return rows.Int8(0, 0);
}

StoreResult<std::vector<std::vector<RowHead>>> PostgresTailReader::Probe(
    const std::vector<IdRange>& ranges, uint32_t per_range) {
  if (auto e = Ready("tailer: gap probe", Snapshot::kOpen)) {
    return Fail(*e);
  }
  std::vector<std::vector<RowHead>> out(ranges.size());
  if (ranges.empty()) {
    return out;
  }
  std::vector<int64_t> lows;
  std::vector<int64_t> highs;
  lows.reserve(ranges.size());
  highs.reserve(ranges.size());
  for (const IdRange& range : ranges) {
    lows.push_back(range.low);
    highs.push_back(range.high);
  }
  Params params;
  params.Int8Array(lows).Int8Array(highs).Int8(per_range);
  auto r = conn_->Exec("tailer: gap probe", kProbe, params, Deadline());
  if (!r.ok()) {
    return Fail(r.error());
  }
  const PgResult& rows = r.value();
  for (int row = 0; row < rows.rows(); ++row) {
    const int64_t ord = rows.Int8(row, 0);
    if (ord < 1 || ord > static_cast<int64_t>(ranges.size())) {
      return Fail(InvariantError("tailer: gap probe", "a row names no requested range"));
    }
    out[static_cast<size_t>(ord - 1)].push_back(ReadRowHead(rows, row, 1));
  }
  return out;
}

StoreResult<std::vector<RowHead>> PostgresTailReader::Forward(int64_t after, uint32_t limit) {
  if (auto e = Ready("tailer: forward scan", Snapshot::kOpen)) {
    return Fail(*e);
  }
  Params params;
  params.Int8(after).Int8(limit);
  auto r = conn_->Exec("tailer: forward scan", kForward, params, Deadline());
  if (!r.ok()) {
    return Fail(r.error());
  }
  const PgResult& rows = r.value();
  std::vector<RowHead> out;
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    out.push_back(ReadRowHead(rows, row, 0));
  }
  return out;
}

StoreResult<std::vector<StoredEnvelope>> PostgresTailReader::Load(const std::vector<int64_t>& ids) {
  if (auto e = Ready("tailer: load", Snapshot::kOpen)) {
    return Fail(*e);
  }
  std::vector<StoredEnvelope> out;
  if (ids.empty()) {
    return out;
  }
  Params params;
  params.Int8Array(ids);
  auto r = conn_->Exec("tailer: load", kLoad, params, Deadline());
  if (!r.ok()) {
    return Fail(r.error());
  }
  const PgResult& rows = r.value();
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    auto meta = ReadMeta(rows, row, 0);
    if (!meta) {
      return Fail(InvariantError("tailer: load", "a stored row breaks the schema"));
    }
    out.push_back(StoredEnvelope{.meta = std::move(*meta),
                                 .payload = std::string(rows.Bytes(row, kMetaColumnCount))});
  }
  return out;
}

StoreResult<bool> PostgresTailReader::End() {
  if (conn_->usable() && conn_->transaction_status() == PQTRANS_IDLE) {
    return true;  // no snapshot open
  }
  if (auto e = Ready("tailer: end", Snapshot::kOpen)) {
    return Fail(*e);
  }
  auto r = conn_->ExecScript("tailer: end", "COMMIT", Deadline());
  if (!r.ok()) {
    return Fail(r.error());
  }
  if (r.value().CommandTag() != "COMMIT") {
    return Fail(InvariantError("tailer: end", "the snapshot did not commit"));
  }
  return true;
}

}  // namespace xb::store::postgres
