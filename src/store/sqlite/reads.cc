#include "store/sqlite/reads.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "store/catch_up_cutoff.h"

namespace xb::store::sqlite {
namespace {

// One whole row by id (the columns ReadEnvelope and ViewOf read), for every by-id load.
constexpr const char* kRowById =
    "SELECT sequence_id, topic, server_ns, expiry_ns, message_hash, is_commit_or_proposal, "
    "payload FROM envelopes WHERE sequence_id = ?1";

// Column order shared by every row read: sequence_id, topic, server_ns, expiry_ns, message_hash,
// is_commit_or_proposal[, payload].
EnvelopeMeta ReadMeta(const StatementUse& row) {
  EnvelopeMeta meta;
  meta.sequence_id = row.ColumnInt64(0);
  meta.topic = row.ColumnBlob(1);
  meta.server_ns = row.ColumnInt64(2);
  meta.expiry_ns = row.ColumnIsNull(3) ? 0 : row.ColumnInt64(3);  // NULL = exempt = 0 (ARC-025)
  std::string hash = row.ColumnBlob(4);
  std::memcpy(meta.message_hash.data(), hash.data(),
              std::min(hash.size(), meta.message_hash.size()));
  meta.is_commit_or_proposal = row.ColumnInt64(5) != 0;
  return meta;
}

StoredEnvelope ReadEnvelope(const StatementUse& row, bool with_payload) {
  StoredEnvelope envelope;
  envelope.meta = ReadMeta(row);
  if (with_payload) {
    envelope.payload = row.ColumnBlob(6);
  }
  return envelope;
}

StoreError InvariantError(std::string message) {
  StoreError error;
  error.kind = ErrorKind::kInvariant;
  error.message = std::move(message);
  return error;
}

// The page's rows by primary key, in the order of `ids`, inside the caller's transaction: payloads
// are read until their total passes `max_payload_bytes`; the row that passes it is the last one
// read and the page is then over_budget (issue 28).
StoreResult<void> LoadPage(Connection& conn, const std::vector<int64_t>& ids,
                           uint64_t max_payload_bytes, QueryPage& page) {
  page.envelopes.reserve(ids.size());
  uint64_t payload_bytes = 0;
  for (int64_t id : ids) {
    if (payload_bytes > max_payload_bytes) {
      page.over_budget = true;  // the page cannot be answered whole: read no further
      break;
    }
    StatementUse row = conn.Use(kRowById, "query page");
    row.BindInt64(1, id);
    if (!row.Step()) {
      if (row.error()) {
        return *row.error();
      }
      return InvariantError("query: a candidate row vanished inside one snapshot");
    }
    page.envelopes.push_back(ReadEnvelope(row, /*with_payload=*/true));
    payload_bytes += page.envelopes.back().payload.size();
  }
  page.over_budget = page.over_budget || payload_bytes > max_payload_bytes;
  return {};
}

}  // namespace

StoreResult<std::optional<EnvelopeMeta>> LookupStoredMeta(Connection& conn,
                                                          const std::string& topic,
                                                          const Hash& hash) {
  StatementUse row = conn.Use(
      "SELECT sequence_id, topic, server_ns, expiry_ns, message_hash, is_commit_or_proposal "
      "FROM envelopes WHERE topic = ?1 AND message_hash = ?2",
      "duplicate lookup");
  row.BindBlob(1, topic).BindBlob(
      2, std::string_view(reinterpret_cast<const char*>(hash.data()), hash.size()));
  if (row.Step()) {
    return std::optional<EnvelopeMeta>(ReadMeta(row));
  }
  if (row.error()) {
    return *row.error();
  }
  return std::optional<EnvelopeMeta>();
}

// implements: STORE.md 7 (duplicate lookup, one snapshot)
StoreResult<std::vector<std::optional<EnvelopeMeta>>> ReadDuplicates(
    Connection& conn, const std::vector<std::pair<std::string, Hash>>& keys) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  std::vector<std::optional<EnvelopeMeta>> out;
  out.reserve(keys.size());
  for (const auto& [topic, hash] : keys) {
    StoreResult<std::optional<EnvelopeMeta>> meta = LookupStoredMeta(conn, topic, hash);
    if (!meta.ok()) {
      return meta.error();
    }
    out.push_back(std::move(meta).value());
  }
  return out;
}

// implements: STORE.md 7 (identity history, ARC-064)
StoreResult<std::vector<StoredEnvelope>> ReadHistory(Connection& conn, const std::string& topic) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  StatementUse rows = conn.Use(
      "SELECT sequence_id, topic, server_ns, expiry_ns, message_hash, is_commit_or_proposal, "
      "payload FROM envelopes WHERE topic = ?1 ORDER BY sequence_id",
      "history");
  rows.BindBlob(1, topic);
  std::vector<StoredEnvelope> out;
  while (rows.Step()) {
    out.push_back(ReadEnvelope(rows, /*with_payload=*/true));
  }
  if (rows.error()) {
    return *rows.error();
  }
  return out;
}

// implements: API-240, STORE.md 7 (Query)
StoreResult<QueryPage> ReadQuery(Connection& conn, const std::vector<TopicCursor>& topics,
                                 uint32_t limit, uint64_t max_payload_bytes) {
  if (limit == 0) {
    return InvariantError("query limit must be at least 1");
  }
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  // Candidates: per topic its lowest limit + 1 ids above the cursor. If id x of topic T is among
  // the lowest limit + 1 overall, so is every eligible lower id of T: each topic stays a prefix.
  const int64_t per_topic = static_cast<int64_t>(limit) + 1;
  std::vector<int64_t> candidates;
  for (const TopicCursor& cursor : topics) {
    StatementUse ids = conn.Use(
        "SELECT sequence_id FROM envelopes WHERE topic = ?1 AND sequence_id > ?2 "
        "ORDER BY sequence_id LIMIT ?3",
        "query candidates");
    ids.BindBlob(1, cursor.topic).BindInt64(2, cursor.after).BindInt64(3, per_topic);
    while (ids.Step()) {
      candidates.push_back(ids.ColumnInt64(0));
    }
    if (ids.error()) {
      return *ids.error();
    }
  }
  std::sort(candidates.begin(), candidates.end());
  QueryPage page;
  page.has_more = candidates.size() > limit;  // same snapshot as the page
  candidates.resize(std::min<size_t>(candidates.size(), limit));

  XB_TRY_VOID(LoadPage(conn, candidates, max_payload_bytes, page));
  return page;
}

// implements: issue 33 G1 (docs/v3-api.md: one topic below a cursor, newest first, on the
// primary). One read transaction, so the candidates, has_more and the rows share a snapshot; the
// single writer commits each publish whole, so that snapshot shows a prefix of the topic's ids
// and nothing can later appear below a row the page shows.
StoreResult<QueryPage> ReadQueryBefore(Connection& conn, const std::string& topic, int64_t before,
                                       uint32_t limit, uint64_t max_payload_bytes) {
  if (limit == 0) {
    return InvariantError("query limit must be at least 1");
  }
  QueryPage page;
  if (before < 0) {
    return page;  // no id is below a negative cursor
  }
  const int64_t highest = before == 0 ? kMaxSequenceId : before - 1;  // `before` is exclusive
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  std::vector<int64_t> candidates;
  StatementUse ids = conn.Use(kQueryBeforeCandidates, "query before candidates");
  ids.BindBlob(1, topic).BindInt64(2, highest).BindInt64(3, static_cast<int64_t>(limit) + 1);
  while (ids.Step()) {
    candidates.push_back(ids.ColumnInt64(0));
  }
  if (ids.error()) {
    return *ids.error();
  }
  page.has_more = candidates.size() > limit;  // an older row below the page, same snapshot
  candidates.resize(std::min<size_t>(candidates.size(), limit));
  XB_TRY_VOID(LoadPage(conn, candidates, max_payload_bytes, page));
  return page;
}

// implements: API-244, STORE.md 7 (QueryNewest)
StoreResult<std::vector<StoredEnvelope>> ReadNewest(Connection& conn,
                                                    const std::vector<std::string>& topics,
                                                    bool with_payload) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  std::vector<StoredEnvelope> out;
  std::set<std::string> seen;
  for (const std::string& topic : topics) {
    if (!seen.insert(topic).second) {
      continue;  // repeated topics give one result, at their first appearance
    }
    // Metadata-only reads do not select the payload.
    StatementUse row =
        with_payload
            ? conn.Use(
                  "SELECT e.sequence_id, e.topic, e.server_ns, e.expiry_ns, e.message_hash, "
                  "e.is_commit_or_proposal, e.payload FROM topic_watermark w "
                  "JOIN envelopes e ON e.sequence_id = w.last_sequence_id AND e.topic = w.topic "
                  "WHERE w.topic = ?1",
                  "newest envelopes")
            : conn.Use(
                  "SELECT e.sequence_id, e.topic, e.server_ns, e.expiry_ns, e.message_hash, "
                  "e.is_commit_or_proposal FROM topic_watermark w "
                  "JOIN envelopes e ON e.sequence_id = w.last_sequence_id AND e.topic = w.topic "
                  "WHERE w.topic = ?1",
                  "newest metadata");
    row.BindBlob(1, topic);
    if (row.Step()) {
      out.push_back(ReadEnvelope(row, with_payload));
    } else if (row.error()) {
      return *row.error();
    }
  }
  return out;
}

// implements: API 3.7 (Get, current store)
StoreResult<std::optional<StoredEnvelope>> ReadGet(Connection& conn, int64_t sequence_id) {
  if (sequence_id <= 0) {
    return std::optional<StoredEnvelope>();
  }
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  StatementUse row = conn.Use(kRowById, "get");
  row.BindInt64(1, sequence_id);
  if (row.Step()) {
    return std::optional<StoredEnvelope>(ReadEnvelope(row, /*with_payload=*/true));
  }
  if (row.error()) {
    return *row.error();
  }
  return std::optional<StoredEnvelope>();
}

StoreResult<int64_t> ReadBoundary(Connection& conn) {
  StatementUse row = conn.Use(
      "SELECT closed_sequence_id FROM allocation_boundary WHERE singleton = 1", "read boundary");
  if (row.Step()) {
    return row.ColumnInt64(0);
  }
  if (row.error()) {
    return *row.error();
  }
  return InvariantError("the allocation boundary row is missing");
}

StoreResult<std::vector<StoredEnvelope>> LoadEnvelopes(Connection& conn,
                                                       const std::vector<int64_t>& ids) {
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<StoredEnvelope> out;
  out.reserve(sorted.size());
  for (int64_t id : sorted) {
    StatementUse row = conn.Use(kRowById, "load rows");
    row.BindInt64(1, id);
    if (row.Step()) {
      out.push_back(ReadEnvelope(row, /*with_payload=*/true));
    } else if (row.error()) {
      return *row.error();
    }
  }
  return out;
}

// implements: STORE.md 7 (heads, one snapshot)
StoreResult<std::vector<int64_t>> ReadHeads(Connection& conn,
                                            const std::vector<std::string>& topics) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  std::vector<int64_t> out;
  out.reserve(topics.size());
  for (const std::string& topic : topics) {
    StatementUse row =
        conn.Use("SELECT last_sequence_id FROM topic_watermark WHERE topic = ?1", "heads");
    row.BindBlob(1, topic);
    if (row.Step()) {
      out.push_back(row.ColumnInt64(0));
    } else if (row.error()) {
      return *row.error();
    } else {
      out.push_back(0);  // no row on the topic yet
    }
  }
  return out;
}

// implements: STORE.md 7 (GetInboxIds), API-270
StoreResult<std::vector<std::optional<std::string>>> ReadInboxIds(
    Connection& conn, const std::vector<IdentifierKey>& identifiers) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  std::vector<std::optional<std::string>> out;
  out.reserve(identifiers.size());
  for (const IdentifierKey& key : identifiers) {
    StatementUse row = conn.Use(
        "SELECT inbox_id FROM identifier_association WHERE identifier = ?1 AND "
        "identifier_kind = ?2 AND revocation_sequence_id IS NULL "
        "ORDER BY association_sequence_id DESC LIMIT 1",
        "inbox ids");
    row.BindText(1, key.identifier);
    row.BindInt64(2, key.identifier_kind);
    if (row.Step()) {
      out.push_back(row.ColumnBlob(0));
    } else if (row.error()) {
      return *row.error();
    } else {
      out.push_back(std::nullopt);
    }
  }
  return out;
}

namespace {

// The current row of a full-row SELECT (sequence_id, topic, server_ns, expiry_ns, message_hash,
// is_commit_or_proposal, payload), in place.
StoredEnvelopeView ViewOf(const StatementUse& rows) {
  return StoredEnvelopeView{
      .sequence_id = rows.ColumnInt64(0),
      .server_ns = rows.ColumnInt64(2),
      .message_hash = rows.ColumnBlobView(4),
      .topic = rows.ColumnBlobView(1),
      .expiry_ns = rows.ColumnIsNull(3) ? 0 : rows.ColumnInt64(3),  // NULL = exempt (ARC-025)
      .is_commit_or_proposal = rows.ColumnInt64(5) != 0,
      .payload = rows.ColumnBlobView(6),
  };
}

EnvelopeMeta MetaOf(const StoredEnvelopeView& row) {
  EnvelopeMeta meta;
  meta.sequence_id = row.sequence_id;
  meta.topic = std::string(row.topic);
  meta.server_ns = row.server_ns;
  meta.expiry_ns = row.expiry_ns;
  std::memcpy(meta.message_hash.data(), row.message_hash.data(),
              std::min(row.message_hash.size(), meta.message_hash.size()));
  meta.is_commit_or_proposal = row.is_commit_or_proposal;
  return meta;
}

// One range, in its own read transaction: its rounds are its rows in order, so one pass over
// full rows applies the same cutoff as AdmitByRounds without a second lookup per row. Each row
// is handed over in place (views into the statement's current row).
std::optional<StoreError> VisitOneRange(
    Connection& conn, const CatchUpRange& range, uint32_t per_range, uint64_t byte_budget,
    const std::function<bool(const StoredEnvelopeView&)>& visit) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  StatementUse rows = conn.Use(
      "SELECT sequence_id, topic, server_ns, expiry_ns, message_hash, is_commit_or_proposal, "
      "payload FROM envelopes WHERE topic = ?1 AND sequence_id > ?2 AND sequence_id <= ?3 "
      "ORDER BY sequence_id LIMIT ?4",
      "catch-up rows");
  rows.BindBlob(1, range.topic)
      .BindInt64(2, range.after)
      .BindInt64(3, range.through)
      .BindInt64(4, per_range);
  uint64_t used = 0;
  bool first = true;
  while (rows.Step()) {
    const StoredEnvelopeView row = ViewOf(rows);
    const uint64_t cost = row.payload.size() + kRowOverheadBytes;
    if (!first && (used > byte_budget || cost > byte_budget - used)) {
      break;  // the first row is always admitted
    }
    first = false;
    used += cost;
    if (!visit(row)) {
      break;
    }
  }
  if (rows.error()) {
    return *rows.error();
  }
  return std::nullopt;
}

// Several ranges: candidate ids and sizes per range, admitted by rounds (AdmitByRounds), then
// each admitted row read once, in id order, and handed to every range that has it (the same topic
// may appear twice), so each range's rows arrive ascending.
std::optional<StoreError> VisitRanges(Connection& conn, const std::vector<CatchUpRange>& ranges,
                                      uint32_t per_range, uint64_t byte_budget,
                                      const Store::CatchUpVisitor& visit) {
  ReadTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  std::vector<std::vector<int64_t>> ids(ranges.size());
  std::vector<std::vector<uint64_t>> sizes(ranges.size());
  for (size_t r = 0; r < ranges.size(); ++r) {
    const CatchUpRange& range = ranges[r];
    StatementUse rows = conn.Use(
        "SELECT sequence_id, length(payload) FROM envelopes WHERE topic = ?1 AND sequence_id > ?2 "
        "AND sequence_id <= ?3 ORDER BY sequence_id LIMIT ?4",
        "catch-up candidates");
    rows.BindBlob(1, range.topic)
        .BindInt64(2, range.after)
        .BindInt64(3, range.through)
        .BindInt64(4, per_range);
    while (rows.Step()) {
      ids[r].push_back(rows.ColumnInt64(0));
      sizes[r].push_back(static_cast<uint64_t>(rows.ColumnInt64(1)));
    }
    if (rows.error()) {
      return *rows.error();
    }
  }
  const std::vector<size_t> admitted = AdmitByRounds(sizes, byte_budget);
  std::vector<std::pair<int64_t, size_t>> load;  // (id, range), sorted: id order, then range
  for (size_t r = 0; r < ranges.size(); ++r) {
    for (size_t i = 0; i < admitted[r]; ++i) {
      load.emplace_back(ids[r][i], r);
    }
  }
  std::sort(load.begin(), load.end());
  for (size_t k = 0; k < load.size();) {
    const int64_t id = load[k].first;
    StatementUse rows = conn.Use(kRowById, "load rows");
    rows.BindInt64(1, id);
    if (!rows.Step()) {
      if (rows.error()) {
        return *rows.error();
      }
      return InvariantError("catch-up: a candidate row vanished inside one snapshot");
    }
    const StoredEnvelopeView row = ViewOf(rows);
    for (; k < load.size() && load[k].first == id; ++k) {
      if (!visit(load[k].second, row)) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// implements: STORE.md 7 (catch-up history: sizes first, byte cutoff keeping each range's prefix,
// payloads for admitted ids only, one snapshot), ARC-087
std::optional<StoreError> VisitCatchUp(Connection& conn, const std::vector<CatchUpRange>& ranges,
                                       uint32_t per_range, uint64_t byte_budget,
                                       const Store::CatchUpVisitor& visit) {
  if (ranges.empty() || per_range == 0) {
    return std::nullopt;
  }
  if (ranges.size() == 1) {
    return VisitOneRange(conn, ranges[0], per_range, byte_budget,
                         [&](const StoredEnvelopeView& row) { return visit(0, row); });
  }
  return VisitRanges(conn, ranges, per_range, byte_budget, visit);
}

StoreResult<std::vector<std::vector<StoredEnvelope>>> ReadCatchUp(
    Connection& conn, const std::vector<CatchUpRange>& ranges, uint32_t per_range,
    uint64_t byte_budget) {
  std::vector<std::vector<StoredEnvelope>> out(ranges.size());
  std::optional<StoreError> error = VisitCatchUp(
      conn, ranges, per_range, byte_budget, [&](size_t range, const StoredEnvelopeView& row) {
        out[range].push_back(
            StoredEnvelope{.meta = MetaOf(row), .payload = std::string(row.payload)});
        return true;
      });
  if (error) {
    return *std::move(error);
  }
  return out;
}

}  // namespace xb::store::sqlite
