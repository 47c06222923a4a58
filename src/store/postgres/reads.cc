// Reads (STORE.md 7): each is one statement, so one snapshot, on the database OPS-009 allows;
// catch-up is two statements in one REPEATABLE READ, READ ONLY transaction.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "base/thread_priority.h"
#include "store/catch_up_cutoff.h"
#include "store/postgres/postgres_store.h"
#include "store/postgres/rows.h"

namespace xb::store::postgres {
namespace {

// Past the statement timeout the server answers 57014 itself; the client waits this much longer
// before it cancels (a server or network that stopped answering).
constexpr std::chrono::milliseconds kClientSlack{1000};

constexpr const char* kClock =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint";

constexpr const char* kFindDuplicates = "SELECT u.ord, " XB_PG_META_COLUMNS R"sql(
FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS u(topic, hash, ord)
CROSS JOIN LATERAL (
  SELECT x.* FROM envelopes AS x WHERE x.topic = u.topic AND x.message_hash = u.hash LIMIT 1) AS e
)sql";

constexpr const char* kHistory = "SELECT " XB_PG_META_COLUMNS R"sql(, e.payload
FROM envelopes AS e WHERE e.topic = $1::bytea ORDER BY e.sequence_id)sql";

// implements: API-240 (per topic an index range scan of at most limit + 1 ids above its cursor;
// of all candidates the lowest limit + 1, materialized; the page is the lowest `limit`, loaded by
// primary key; has_more = more than `limit` candidates, all in one snapshot)
constexpr const char* kQuery = R"sql(
WITH c AS MATERIALIZED (
  SELECT x.sequence_id
  FROM unnest($1::bytea[], $2::int8[]) AS q(topic, after)
  CROSS JOIN LATERAL (
    SELECT s.sequence_id FROM envelopes AS s
    WHERE s.topic = q.topic AND s.sequence_id > q.after
    ORDER BY s.sequence_id
    LIMIT $3::int8) AS x
  ORDER BY x.sequence_id
  LIMIT $3::int8)
SELECT n.total, )sql" XB_PG_META_COLUMNS R"sql(, e.payload
FROM (SELECT count(*) AS total FROM c) AS n
LEFT JOIN LATERAL (
  SELECT w.* FROM (
    SELECT p.*,
           sum(octet_length(p.payload)) OVER (ORDER BY p.sequence_id) - octet_length(p.payload)
             AS bytes_before
    FROM envelopes AS p
    WHERE p.sequence_id IN (SELECT c.sequence_id FROM c ORDER BY c.sequence_id LIMIT $4::int8)
  ) AS w
  WHERE w.bytes_before <= $5::int8
) AS e ON true
ORDER BY e.sequence_id)sql";

// implements: issue 33 G1 (one topic below a cursor, newest first: a backward range scan of
// envelopes_topic_sequence for at most limit + 1 ids at or below $2, materialized; the page is the
// highest `limit`, loaded by primary key with the payload budget of kQuery summed newest first;
// has_more = more than `limit` candidates, all in one snapshot)
//
// The topic is bounded by `>= $1 AND <= $1` (bytea compares bytewise: exactly `= $1`), not by
// `= $1`, on purpose. With `=` the planner drops the constant topic from the ORDER BY, so the
// primary key gives the same order, and where a topic is a large share of the rows (few topics, or
// one hot topic) it walks the primary key backwards and filters by topic, reading every newer row
// of every other topic; generic and custom plans alike, and with `= q.topic` in a LATERAL too. The
// range keeps `topic DESC, sequence_id DESC` an order only envelopes_topic_sequence provides, and
// its backward scan starts at ($1, $2).
constexpr const char* kQueryBefore = R"sql(
WITH c AS MATERIALIZED (
  SELECT s.sequence_id FROM envelopes AS s
  WHERE s.topic >= $1::bytea AND s.topic <= $1::bytea AND s.sequence_id <= $2::int8
  ORDER BY s.topic DESC, s.sequence_id DESC
  LIMIT $3::int8)
SELECT n.total, )sql" XB_PG_META_COLUMNS R"sql(, e.payload
FROM (SELECT count(*) AS total FROM c) AS n
LEFT JOIN LATERAL (
  SELECT w.* FROM (
    SELECT p.*,
           sum(octet_length(p.payload)) OVER (ORDER BY p.sequence_id DESC) - octet_length(p.payload)
             AS bytes_before
    FROM envelopes AS p
    WHERE p.sequence_id IN (SELECT c.sequence_id FROM c ORDER BY c.sequence_id DESC LIMIT $4::int8)
  ) AS w
  WHERE w.bytes_before <= $5::int8
) AS e ON true
ORDER BY e.sequence_id DESC)sql";

// implements: API-244 (watermark joined to the row it names; a topic without one is absent)
constexpr const char* kNewestFull = "SELECT u.ord, " XB_PG_META_COLUMNS R"sql(, e.payload
FROM unnest($1::bytea[]) WITH ORDINALITY AS u(topic, ord)
CROSS JOIN LATERAL (
  SELECT w.last_sequence_id FROM topic_watermark AS w WHERE w.topic = u.topic LIMIT 1) AS w
CROSS JOIN LATERAL (
  SELECT x.* FROM envelopes AS x
  WHERE x.sequence_id = w.last_sequence_id AND x.topic = u.topic LIMIT 1) AS e
ORDER BY u.ord)sql";

constexpr const char* kNewestMeta = "SELECT u.ord, " XB_PG_META_COLUMNS R"sql(
FROM unnest($1::bytea[]) WITH ORDINALITY AS u(topic, ord)
CROSS JOIN LATERAL (
  SELECT w.last_sequence_id FROM topic_watermark AS w WHERE w.topic = u.topic LIMIT 1) AS w
CROSS JOIN LATERAL (
  SELECT x.* FROM envelopes AS x
  WHERE x.sequence_id = w.last_sequence_id AND x.topic = u.topic LIMIT 1) AS e
ORDER BY u.ord)sql";

constexpr const char* kGet = "SELECT " XB_PG_META_COLUMNS R"sql(, e.payload
FROM envelopes AS e WHERE e.sequence_id = $1::int8)sql";

// implements: STORE.md 7 (heads: topic_watermark primary key, 0 when absent, per input position)
constexpr const char* kHeads = R"sql(
SELECT coalesce(
  (SELECT w.last_sequence_id FROM topic_watermark AS w WHERE w.topic = u.topic), 0)
FROM unnest($1::bytea[]) WITH ORDINALITY AS u(topic, ord)
ORDER BY u.ord)sql";

// implements: STORE.md 7 (GetInboxIds: per input position the identifier_association_active row
// with the greatest association id, NULL when none), API-270. Identifiers travel as bytea (the
// UTF-8 of the normalized text) because Params has no text arrays.
constexpr const char* kInboxIds = R"sql(
SELECT x.inbox_id
FROM unnest($1::bytea[], $2::int8[]) WITH ORDINALITY AS u(identifier, kind, ord)
LEFT JOIN LATERAL (
  SELECT a.inbox_id FROM identifier_association AS a
  WHERE a.identifier = convert_from(u.identifier, 'UTF8') AND a.identifier_kind = u.kind::smallint
    AND a.revocation_sequence_id IS NULL
  ORDER BY a.association_sequence_id DESC
  LIMIT 1) AS x ON true
ORDER BY u.ord)sql";

// implements: STORE.md 7 (catch-up candidates: per range an envelopes_topic_sequence range scan
// of at most $4 ids, with payload sizes but no payloads)
constexpr const char* kCatchUpCandidates = R"sql(
SELECT r.ord, x.sequence_id, x.payload_bytes
FROM unnest($1::bytea[], $2::int8[], $3::int8[]) WITH ORDINALITY AS r(topic, after, through, ord)
CROSS JOIN LATERAL (
  SELECT e.sequence_id, octet_length(e.payload)::int8 AS payload_bytes
  FROM envelopes AS e
  WHERE e.topic = r.topic AND e.sequence_id > r.after AND e.sequence_id <= r.through
  ORDER BY e.sequence_id
  LIMIT $4::int8) AS x
ORDER BY r.ord, x.sequence_id)sql";

// One range: its rounds are its rows in order, so the cutoff is a running sum, and the whole read
// is one statement (one snapshot, one round trip). The first row is always admitted.
constexpr const char* kCatchUpOneRange = "SELECT " XB_PG_META_COLUMNS R"sql(, e.payload
FROM (
  SELECT s.*, sum(octet_length(s.payload)::int8 + 256) OVER w AS running, row_number() OVER w AS n
  FROM (
    SELECT * FROM envelopes
    WHERE topic = $1::bytea AND sequence_id > $2::int8 AND sequence_id <= $3::int8
    ORDER BY sequence_id
    LIMIT $4::int8) AS s
  WINDOW w AS (ORDER BY s.sequence_id)) AS e
WHERE e.n = 1 OR e.running <= $5::int8
ORDER BY e.sequence_id)sql";

constexpr const char* kCatchUpRows = "SELECT " XB_PG_META_COLUMNS R"sql(, e.payload
FROM envelopes AS e
WHERE e.sequence_id = ANY($1::int8[])
ORDER BY e.sequence_id)sql";

std::string_view HashBytes(const Hash& hash) {
  return {reinterpret_cast<const char*>(hash.data()), hash.size()};
}

StoreError BadRow(std::string_view what) {
  return InvariantError(what, "a stored row breaks the schema").ToStoreError();
}

// One statement on a connection of `pool`: the pool wait is bounded by the statement timeout,
// the statement by the server's statement_timeout and, a little later, the client's deadline.
DbResult<PgResult> ReadOnce(ConnectionPool& pool, std::chrono::milliseconds statement_timeout,
                            std::string_view what, const char* sql, const Params& params) {
  auto lease = pool.Acquire(Clock::now() + statement_timeout);
  if (!lease.ok()) {
    return std::move(lease).error();
  }
  return lease.value()->Exec(what, sql, params, Clock::now() + statement_timeout + kClientSlack);
}

// Ends a read transaction that failed: ROLLBACK, or close a connection that cannot, so the release
// hook never sees (and counts) a transaction this code left open on purpose.
void RollbackRead(Connection& conn, std::chrono::milliseconds statement_timeout) {
  if (!conn.usable() || conn.transaction_status() == PQTRANS_IDLE) {
    return;
  }
  auto r = conn.ExecScript("read: rollback", "ROLLBACK", Clock::now() + statement_timeout);
  if (!r.ok() || conn.transaction_status() != PQTRANS_IDLE) {
    conn.CancelAndClose();
  }
}

// A kQuery or kQueryBefore result as a page: the first column counts the candidates (more than
// `limit`: has_more), the rest are the page's rows in page order, or one all-NULL row for an
// empty page. The statement stops after the row whose payload passes the bound (issue 28), as
// SQLite's read does, so the page is over_budget exactly when its payloads pass it.
StoreResult<QueryPage> PageOf(const PgResult& rows, uint32_t limit, uint64_t max_payload_bytes,
                              std::string_view what) {
  if (rows.rows() < 1) {
    return BadRow(what);
  }
  QueryPage page;
  page.has_more = rows.Int8(0, 0) > static_cast<int64_t>(limit);
  uint64_t payload_bytes = 0;
  for (int row = 0; row < rows.rows(); ++row) {
    if (rows.IsNull(row, 1)) {
      continue;  // the empty page's single row
    }
    auto meta = ReadMeta(rows, row, 1);
    if (!meta) {
      return BadRow(what);
    }
    page.envelopes.push_back(StoredEnvelope{
        .meta = std::move(*meta), .payload = CopyInTurns(rows.Bytes(row, 1 + kMetaColumnCount))});
    payload_bytes += page.envelopes.back().payload.size();
  }
  page.over_budget = payload_bytes > max_payload_bytes;
  return page;
}

using CatchUpRows = std::vector<std::vector<StoredEnvelope>>;

// CatchUp of one range: one statement, the byte cutoff applied in SQL.
StoreResult<CatchUpRows> CatchUpOneRange(ConnectionPool& pool,
                                         std::chrono::milliseconds statement_timeout,
                                         const CatchUpRange& range, uint32_t per_range,
                                         uint64_t byte_budget) {
  Params params;
  params.Bytea(range.topic)
      .Int8(range.after)
      .Int8(range.through)
      .Int8(per_range)
      .Int8(static_cast<int64_t>(std::min<uint64_t>(byte_budget, INT64_MAX)));
  auto r = ReadOnce(pool, statement_timeout, "catch-up", kCatchUpOneRange, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  CatchUpRows out(1);
  out[0].reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    auto meta = ReadMeta(rows, row, 0);
    if (!meta) {
      return BadRow("catch-up");
    }
    out[0].push_back(StoredEnvelope{.meta = std::move(*meta),
                                    .payload = CopyInTurns(rows.Bytes(row, kMetaColumnCount))});
  }
  return out;
}

// Per range, its candidate ids ascending and their payload sizes.
struct Candidates {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<uint64_t>> sizes;
};

// Step 1 of a multi-range catch-up, in the open snapshot on `conn`.
DbResult<Candidates> ReadCandidates(Connection& conn, const std::vector<CatchUpRange>& ranges,
                                    uint32_t per_range, Clock::time_point deadline) {
  std::vector<std::string_view> topics;
  std::vector<int64_t> afters;
  std::vector<int64_t> throughs;
  for (const CatchUpRange& range : ranges) {
    topics.push_back(range.topic);
    afters.push_back(range.after);
    throughs.push_back(range.through);
  }
  Params params;
  params.ByteaArray(topics).Int8Array(afters).Int8Array(throughs).Int8(per_range);
  XB_TRY(const PgResult rows,
         conn.Exec("catch-up: candidates", kCatchUpCandidates, params, deadline));
  Candidates out{.ids = std::vector<std::vector<int64_t>>(ranges.size()),
                 .sizes = std::vector<std::vector<uint64_t>>(ranges.size())};
  for (int row = 0; row < rows.rows(); ++row) {
    const int64_t ord = rows.Int8(row, 0);
    if (ord < 1 || ord > static_cast<int64_t>(ranges.size())) {
      return InvariantError("catch-up: candidates", "a row names no requested range");
    }
    out.ids[static_cast<size_t>(ord - 1)].push_back(rows.Int8(row, 1));
    out.sizes[static_cast<size_t>(ord - 1)].push_back(static_cast<uint64_t>(rows.Int8(row, 2)));
  }
  return out;
}

// Step 2's read, in the open snapshot on `conn`: the rows of `load` (ascending, distinct) by id.
DbResult<std::map<int64_t, StoredEnvelope>> LoadRowsById(Connection& conn,
                                                         const std::vector<int64_t>& load,
                                                         Clock::time_point deadline) {
  std::map<int64_t, StoredEnvelope> by_id;
  if (load.empty()) {
    return by_id;
  }
  Params params;
  params.Int8Array(load);
  XB_TRY(const PgResult rows, conn.Exec("catch-up: rows", kCatchUpRows, params, deadline));
  for (int row = 0; row < rows.rows(); ++row) {
    auto meta = ReadMeta(rows, row, 0);
    if (!meta) {
      return InvariantError("catch-up: rows", "a stored row breaks the schema");
    }
    const int64_t id = meta->sequence_id;
    by_id.emplace(id, StoredEnvelope{.meta = std::move(*meta),
                                     .payload = CopyInTurns(rows.Bytes(row, kMetaColumnCount))});
  }
  return by_id;
}

// Hands each range its admitted rows from `by_id`, in order.
StoreResult<CatchUpRows> DistributeRows(const Candidates& candidates,
                                        const std::vector<size_t>& admitted,
                                        std::map<int64_t, StoredEnvelope>& by_id) {
  const std::vector<std::vector<int64_t>>& ids = candidates.ids;
  std::unordered_map<int64_t, uint32_t> uses;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t k = 0; k < admitted[i]; ++k) {
      ++uses[ids[i][k]];
    }
  }
  CatchUpRows out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    out[i].reserve(admitted[i]);
    for (size_t k = 0; k < admitted[i]; ++k) {
      auto it = by_id.find(ids[i][k]);
      if (it == by_id.end()) {
        return InvariantError("catch-up", "a candidate row vanished inside one snapshot")
            .ToStoreError();
      }
      // Ranges may share a row (the same topic twice): copy unless this is its last use.
      if (--uses[ids[i][k]] > 0) {
        out[i].push_back(it->second);
      } else {
        out[i].push_back(std::move(it->second));
      }
    }
  }
  return out;
}

}  // namespace

std::chrono::milliseconds PostgresStore::StatementTimeout() const {
  return std::chrono::milliseconds(options_.statement_timeout_ms);
}

// implements: OPS-020 (the primary store's clock)
StoreResult<int64_t> PostgresStore::ClockNs() {
  auto r = ReadOnce(primary_, StatementTimeout(), "clock", kClock, Params());
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  if (rows.rows() != 1) {
    return BadRow("clock");
  }
  return rows.Int8(0, 0);
}

// implements: STORE.md 3.1 step 3 (one statement against the unique index, on the primary)
StoreResult<std::vector<std::optional<EnvelopeMeta>>> PostgresStore::FindDuplicates(
    const std::vector<std::pair<std::string, Hash>>& keys) {
  std::vector<std::optional<EnvelopeMeta>> out(keys.size());
  if (keys.empty()) {
    return out;
  }
  std::vector<std::string_view> topics;
  std::vector<std::string_view> hashes;
  for (const auto& [topic, hash] : keys) {
    topics.push_back(topic);
    hashes.push_back(HashBytes(hash));
  }
  Params params;
  params.ByteaArray(topics).ByteaArray(hashes);
  auto r = ReadOnce(primary_, StatementTimeout(), "find duplicates", kFindDuplicates, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  for (int row = 0; row < rows.rows(); ++row) {
    auto meta = ReadMeta(rows, row, 1);
    if (!meta) {
      return BadRow("find duplicates");
    }
    out[static_cast<size_t>(rows.Int8(row, 0) - 1)] = std::move(*meta);
  }
  return out;
}

// implements: API-232 (the whole identity topic in one snapshot, on the primary)
StoreResult<std::vector<StoredEnvelope>> PostgresStore::History(const std::string& topic) {
  Params params;
  params.Bytea(topic);
  auto r = ReadOnce(primary_, StatementTimeout(), "history", kHistory, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  std::vector<StoredEnvelope> out;
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    auto meta = ReadMeta(rows, row, 0);
    if (!meta) {
      return BadRow("history");
    }
    out.push_back(StoredEnvelope{.meta = std::move(*meta),
                                 .payload = CopyInTurns(rows.Bytes(row, kMetaColumnCount))});
  }
  return out;
}

// implements: API-240, API-202 (Query reads the primary)
StoreResult<QueryPage> PostgresStore::Query(const std::vector<TopicCursor>& topics, uint32_t limit,
                                            uint64_t max_payload_bytes) {
  QueryPage page;
  if (topics.empty()) {
    return page;
  }
  // Topics are distinct by contract; a repeat is read from its lowest cursor anyway (API-242).
  std::map<std::string_view, int64_t> cursors;
  for (const TopicCursor& t : topics) {
    auto [it, inserted] = cursors.emplace(t.topic, t.after);
    if (!inserted) {
      it->second = std::min(it->second, t.after);
    }
  }
  std::vector<std::string_view> names;
  std::vector<int64_t> afters;
  for (const auto& [topic, after] : cursors) {
    names.push_back(topic);
    afters.push_back(after);
  }
  Params params;
  params.ByteaArray(names)
      .Int8Array(afters)
      .Int8(static_cast<int64_t>(limit) + 1)
      .Int8(static_cast<int64_t>(limit))
      .Int8(static_cast<int64_t>(std::min<uint64_t>(max_payload_bytes, INT64_MAX)));
  auto r = ReadOnce(primary_, StatementTimeout(), "query", kQuery, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  return PageOf(r.value(), limit, max_payload_bytes, "query");
}

// implements: issue 33 G1 (docs/v3-api.md: one topic below a cursor, newest first, on the primary)
//
// Which rows a primary read may show: the same rule as Query, which needs no boundary filter
// (API.md 3.2: Query may return rows above B). A publish takes its topics' locks before it draws
// ids and keeps them to commit (ARC-030, ARC-031), so on one topic id order is commit order and
// any snapshot shows a prefix of the topic's ids (API-201). One statement is one snapshot: while a
// row of the topic is visible, no lower id of the topic is in flight, and none can be stored
// later. So the highest visible ids below the cursor, walked downwards, never skip a row that
// could still commit, and has_more (an older row below the page) can only stay true.
StoreResult<QueryPage> PostgresStore::QueryBefore(const std::string& topic, int64_t before,
                                                  uint32_t limit, uint64_t max_payload_bytes) {
  if (limit == 0) {
    return InvariantError("query before", "query limit must be at least 1").ToStoreError();
  }
  if (before < 0) {
    return QueryPage{};  // no id is below a negative cursor
  }
  Params params;
  params.Bytea(topic)
      .Int8(before == 0 ? kMaxSequenceId : before - 1)  // `before` is exclusive; 0: no bound
      .Int8(static_cast<int64_t>(limit) + 1)
      .Int8(static_cast<int64_t>(limit))
      .Int8(static_cast<int64_t>(std::min<uint64_t>(max_payload_bytes, INT64_MAX)));
  auto r = ReadOnce(primary_, StatementTimeout(), "query before", kQueryBefore, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  return PageOf(r.value(), limit, max_payload_bytes, "query before");
}

// implements: API-244, OPS-009 (QueryNewest may read the replica), OPS-010 (a replica snapshot is
// the primary's committed state at an earlier WAL position, and each topic's commit order is its
// id order, so what it lacks on a topic is a suffix)
StoreResult<std::vector<StoredEnvelope>> PostgresStore::Newest(
    const std::vector<std::string>& topics, bool with_payload) {
  return NewestOn(ReadPool(), topics, with_payload);
}

// implements: docs/v3-api.md Q3 (FetchKeyPackages reads the primary: a key package uploaded a
// moment ago is found by the group creator that fetches it next)
StoreResult<std::vector<StoredEnvelope>> PostgresStore::NewestOnPrimary(
    const std::vector<std::string>& topics, bool with_payload) {
  return NewestOn(primary_, topics, with_payload);
}

StoreResult<std::vector<StoredEnvelope>> PostgresStore::NewestOn(
    ConnectionPool& pool, const std::vector<std::string>& topics, bool with_payload) {
  std::vector<StoredEnvelope> out;
  // Distinct topics in order of first appearance: results follow that order (STORE.md 7).
  std::vector<std::string_view> distinct;
  std::set<std::string_view> seen;
  for (const std::string& t : topics) {
    if (seen.insert(t).second) {
      distinct.push_back(t);
    }
  }
  if (distinct.empty()) {
    return out;
  }
  Params params;
  params.ByteaArray(distinct);
  auto r = ReadOnce(pool, StatementTimeout(), "newest", with_payload ? kNewestFull : kNewestMeta,
                    params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    auto meta = ReadMeta(rows, row, 1);
    if (!meta) {
      return BadRow("newest");
    }
    StoredEnvelope envelope{.meta = std::move(*meta), .payload = {}};
    if (with_payload) {
      envelope.payload = CopyInTurns(rows.Bytes(row, 1 + kMetaColumnCount));
    }
    out.push_back(std::move(envelope));
  }
  return out;
}

// implements: API 3.7 (Get answers from the current store, never a replica: OPS-009)
StoreResult<std::optional<StoredEnvelope>> PostgresStore::Get(int64_t sequence_id) {
  Params params;
  params.Int8(sequence_id);
  auto r = ReadOnce(primary_, StatementTimeout(), "get", kGet, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  if (rows.rows() == 0) {
    return std::optional<StoredEnvelope>();
  }
  auto meta = ReadMeta(rows, 0, 0);
  if (!meta) {
    return BadRow("get");
  }
  return std::optional<StoredEnvelope>(StoredEnvelope{
      .meta = std::move(*meta), .payload = CopyInTurns(rows.Bytes(0, kMetaColumnCount))});
}

// implements: STORE.md 7 (heads, one statement on the read database)
StoreResult<std::vector<int64_t>> PostgresStore::Heads(const std::vector<std::string>& topics) {
  std::vector<int64_t> out;
  if (topics.empty()) {
    return out;
  }
  std::vector<std::string_view> names(topics.begin(), topics.end());
  Params params;
  params.ByteaArray(names);
  auto r = ReadOnce(ReadPool(), StatementTimeout(), "heads", kHeads, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  if (rows.rows() != static_cast<int>(topics.size())) {
    return BadRow("heads");
  }
  out.reserve(topics.size());
  for (int row = 0; row < rows.rows(); ++row) {
    out.push_back(rows.Int8(row, 0));
  }
  return out;
}

// implements: STORE.md 7 (GetInboxIds, one statement on the read database), OPS-009
StoreResult<std::vector<std::optional<std::string>>> PostgresStore::InboxIds(
    const std::vector<IdentifierKey>& identifiers) {
  std::vector<std::optional<std::string>> out;
  if (identifiers.empty()) {
    return out;
  }
  std::vector<std::string_view> names;
  std::vector<int64_t> kinds;
  names.reserve(identifiers.size());
  kinds.reserve(identifiers.size());
  for (const IdentifierKey& key : identifiers) {
    names.push_back(key.identifier);
    kinds.push_back(key.identifier_kind);
  }
  Params params;
  params.ByteaArray(names).Int8Array(kinds);
  auto r = ReadOnce(ReadPool(), StatementTimeout(), "inbox ids", kInboxIds, params);
  if (!r.ok()) {
    return r.error().ToStoreError();
  }
  const PgResult& rows = r.value();
  if (rows.rows() != static_cast<int>(identifiers.size())) {
    return BadRow("inbox ids");
  }
  out.reserve(identifiers.size());
  for (int row = 0; row < rows.rows(); ++row) {
    if (rows.IsNull(row, 0)) {
      out.push_back(std::nullopt);
    } else {
      out.push_back(CopyInTurns(rows.Bytes(row, 0)));
    }
  }
  return out;
}

// implements: STORE.md 7 (catch-up history: candidate ids with sizes, the byte cutoff keeping each
// range's prefix, payloads for admitted ids only, all in one REPEATABLE READ READ ONLY snapshot of
// the read database), ARC-087
StoreResult<CatchUpRows> PostgresStore::CatchUp(const std::vector<CatchUpRange>& ranges,
                                                uint32_t per_range, uint64_t byte_budget) {
  if (ranges.empty() || per_range == 0) {
    return CatchUpRows(ranges.size());
  }
  if (ranges.size() == 1) {
    return CatchUpOneRange(ReadPool(), StatementTimeout(), ranges[0], per_range, byte_budget);
  }
  auto lease = ReadPool().Acquire(Clock::now() + StatementTimeout());
  if (!lease.ok()) {
    return lease.error().ToStoreError();
  }
  Connection& conn = *lease.value();
  auto deadline = [this] { return Clock::now() + StatementTimeout() + kClientSlack; };
  auto fail = [&](const DbError& error) -> StoreError {
    RollbackRead(conn, StatementTimeout());
    return error.ToStoreError();
  };

  auto r = conn.ExecScript("catch-up: begin", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                           deadline());
  if (!r.ok()) {
    return fail(r.error());
  }
  // 1. Candidate ids and payload sizes per range.
  auto candidates = ReadCandidates(conn, ranges, per_range, deadline());
  if (!candidates.ok()) {
    return fail(candidates.error());
  }
  // 2. The byte cutoff, then the admitted rows (distinct ids: ranges may overlap).
  const std::vector<size_t> admitted = AdmitByRounds(candidates.value().sizes, byte_budget);
  std::vector<int64_t> load;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const std::vector<int64_t>& ids = candidates.value().ids[i];
    load.insert(load.end(), ids.begin(), ids.begin() + static_cast<ptrdiff_t>(admitted[i]));
  }
  std::sort(load.begin(), load.end());
  load.erase(std::unique(load.begin(), load.end()), load.end());
  auto by_id = LoadRowsById(conn, load, deadline());
  if (!by_id.ok()) {
    return fail(by_id.error());
  }
  r = conn.ExecScript("catch-up: commit", "COMMIT", deadline());
  if (!r.ok()) {
    return fail(r.error());
  }
  return DistributeRows(candidates.value(), admitted, by_id.value());
}

}  // namespace xb::store::postgres
