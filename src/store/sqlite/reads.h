// The read statements of the embedded engine (STORE.md 7 as adapted by section 8). SQLite has no
// arrays, so a multi-input read loops over its inputs inside one read transaction: one snapshot
// per call. Each function opens and ends that transaction on the connection it is given (a leased
// reader), except LookupStoredMeta, which runs inside the caller's transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/sqlite/connection.h"
#include "store/store.h"

namespace xb::store::sqlite {

// The stored metadata of (topic, hash), nullopt when absent; inside the caller's transaction
// (the writer's duplicate re-check uses it too). Unique index (topic, message_hash).
StoreResult<std::optional<EnvelopeMeta>> LookupStoredMeta(Connection& conn,
                                                          const std::string& topic,
                                                          const Hash& hash);

// Duplicate lookup: one result per key, same order.
StoreResult<std::vector<std::optional<EnvelopeMeta>>> ReadDuplicates(
    Connection& conn, const std::vector<std::pair<std::string, Hash>>& keys);

// Identity history: every row of `topic`, ascending (envelopes_topic_sequence).
StoreResult<std::vector<StoredEnvelope>> ReadHistory(Connection& conn, const std::string& topic);

// API-240: per topic at most limit + 1 candidate ids above its cursor; the lowest limit + 1
// candidates overall decide has_more; the page is the lowest `limit` of them, payloads loaded by
// primary key for page ids only, ascending, until their payloads pass `max_payload_bytes`
// (over_budget). Precondition: limit >= 1 (kInvariant otherwise).
StoreResult<QueryPage> ReadQuery(Connection& conn, const std::vector<TopicCursor>& topics,
                                 uint32_t limit, uint64_t max_payload_bytes);

// Issue 33 G1: the candidate ids of ReadQueryBefore, newest first: a backward range scan of
// envelopes_topic_sequence (?1 topic, ?2 the highest eligible id, ?3 limit + 1). Named here so a
// test can check the plan.
inline constexpr const char* kQueryBeforeCandidates =
    "SELECT sequence_id FROM envelopes WHERE topic = ?1 AND sequence_id <= ?2 "
    "ORDER BY sequence_id DESC LIMIT ?3";

// Issue 33 G1: the rows of `topic` with id < `before` (0: no bound; below 0: none), newest first:
// at most limit + 1 candidate ids decide has_more, the page is the highest `limit` of them,
// payloads loaded by primary key in page order until they pass `max_payload_bytes` (over_budget),
// all in one read transaction. Precondition: limit >= 1 (kInvariant otherwise).
StoreResult<QueryPage> ReadQueryBefore(Connection& conn, const std::string& topic, int64_t before,
                                       uint32_t limit, uint64_t max_payload_bytes);

// API-244: per distinct topic in order of first appearance, the row its watermark names;
// topics without a watermark are absent; the payload only when `with_payload`.
StoreResult<std::vector<StoredEnvelope>> ReadNewest(Connection& conn,
                                                    const std::vector<std::string>& topics,
                                                    bool with_payload);

// API 3.7: the row with that id; nullopt for none, including ids outside 1..INT64_MAX.
StoreResult<std::optional<StoredEnvelope>> ReadGet(Connection& conn, int64_t sequence_id);

// The persisted closed allocation boundary (= the last committed id on this engine); inside the
// caller's transaction when one is open.
StoreResult<int64_t> ReadBoundary(Connection& conn);

// The full rows of `ids`, ascending by id, inside the caller's transaction (one snapshot with the
// reads that chose the ids); an id without a row is absent from the result. Primary key lookups.
StoreResult<std::vector<StoredEnvelope>> LoadEnvelopes(Connection& conn,
                                                       const std::vector<int64_t>& ids);

// STORE.md 7 (GetInboxIds): per input position the latest live association's inbox, in one read
// transaction (identifier_association_active).
StoreResult<std::vector<std::optional<std::string>>> ReadInboxIds(
    Connection& conn, const std::vector<IdentifierKey>& identifiers);

// STORE.md 7 (heads): per input position the topic's watermark, 0 when absent.
StoreResult<std::vector<int64_t>> ReadHeads(Connection& conn,
                                            const std::vector<std::string>& topics);

// STORE.md 7 (catch-up history, store.h Store::CatchUp): per range its candidate ids with payload
// sizes (envelopes_topic_sequence, at most `per_range`), then the byte cutoff (AdmitByRounds),
// then full rows for the admitted ids only, all in one read transaction.
// The same rows handed to `visit` (Store::VisitCatchUp): in place for a single range, from the
// loaded rows otherwise.
std::optional<StoreError> VisitCatchUp(Connection& conn, const std::vector<CatchUpRange>& ranges,
                                       uint32_t per_range, uint64_t byte_budget,
                                       const Store::CatchUpVisitor& visit);

StoreResult<std::vector<std::vector<StoredEnvelope>>> ReadCatchUp(
    Connection& conn, const std::vector<CatchUpRange>& ranges, uint32_t per_range,
    uint64_t byte_budget);

}  // namespace xb::store::sqlite
