#include "store/postgres/publish.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "store/postgres/rows.h"

namespace xb::store::postgres {
namespace {

// How long past the lifetime the client waits for the server's own timeout before it cancels.
constexpr std::chrono::milliseconds kServerFirst{250};

constexpr uint8_t kIdentityTopicKind = 0x02;
constexpr size_t kIdentityTopicLength = 33;  // kind byte + 32-byte inbox id
constexpr int64_t kNanosPerSecond = 1000000000;

// Topic lock keys: the first 8 bytes of SHA-256(topic), big-endian, as a signed bigint (STORE.md
// 2.4). The lock function is volatile, so PostgreSQL evaluates it after the sort, one distinct key
// at a time in ascending order (the planner postpones volatile output expressions past ORDER BY).
constexpr const char* kTopicLocks = R"sql(
SELECT pg_advisory_xact_lock(s.k)
FROM (SELECT DISTINCT ('x' || encode(substr(sha256(u.t), 1, 8), 'hex'))::bit(64)::bigint AS k
      FROM unnest($1::bytea[]) AS u(t)) AS s
ORDER BY s.k)sql";

constexpr const char* kFindStored = R"sql(
SELECT u.ord, e.sequence_id, e.server_ns, e.expiry_ns, e.is_commit_or_proposal
FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS u(topic, hash, ord)
JOIN envelopes AS e ON e.topic = u.topic AND e.message_hash = u.hash)sql";

constexpr const char* kIdentityHeads = R"sql(
SELECT u.ord,
       coalesce((SELECT w.last_sequence_id FROM topic_watermark AS w WHERE w.topic = u.topic), 0),
       (SELECT count(*) FROM envelopes AS e WHERE e.topic = u.topic)
FROM unnest($1::bytea[]) WITH ORDINALITY AS u(topic, ord))sql";

// server_ns: the transaction start time, microsecond precision, exact numeric arithmetic.
constexpr const char* kAllocate = R"sql(
SELECT nextval('envelope_sequence'),
       (extract(epoch FROM transaction_timestamp()) * 1000000000)::bigint
FROM generate_series(1, $1::int8) AS g(n)
ORDER BY g.n)sql";

constexpr const char* kInsert = R"sql(
INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash,
                       is_commit_or_proposal, payload, push_eligible, sender_hmac)
SELECT u.id, u.topic, $3::int8, u.expiry, u.hash, u.cp, u.payload, u.push, u.hmac
FROM unnest($1::int8[], $2::bytea[], $4::int8[], $5::bytea[], $6::bool[], $7::bytea[],
            $8::bool[], $9::bytea[])
     AS u(id, topic, expiry, hash, cp, payload, push, hmac))sql";

// ARC-034: a watermark only moves up; every row returned is a topic that advanced.
constexpr const char* kAdvanceWatermarks = R"sql(
INSERT INTO topic_watermark AS w (topic, last_sequence_id)
SELECT u.topic, max(u.id) FROM unnest($1::bytea[], $2::int8[]) AS u(topic, id) GROUP BY u.topic
ON CONFLICT (topic) DO UPDATE SET last_sequence_id = excluded.last_sequence_id
  WHERE w.last_sequence_id < excluded.last_sequence_id
RETURNING w.topic)sql";

// STORE.md 2.2 projection rules; the guards stop an older update undoing newer state.
constexpr const char* kAssociate = R"sql(
INSERT INTO identifier_association AS a
  (identifier, identifier_kind, inbox_id, association_sequence_id, revocation_sequence_id)
VALUES ($1::text, $2::int4::smallint, $3::bytea, $4::int8, NULL)
ON CONFLICT (identifier, identifier_kind, inbox_id) DO UPDATE
  SET association_sequence_id = excluded.association_sequence_id, revocation_sequence_id = NULL
  WHERE a.association_sequence_id < excluded.association_sequence_id
    AND (a.revocation_sequence_id IS NULL
         OR a.revocation_sequence_id < excluded.association_sequence_id))sql";

constexpr const char* kRevoke = R"sql(
UPDATE identifier_association SET revocation_sequence_id = $4::int8
WHERE identifier = $1::text AND identifier_kind = $2::int4::smallint AND inbox_id = $3::bytea
  AND association_sequence_id < $4::int8
  AND (revocation_sequence_id IS NULL OR revocation_sequence_id < $4::int8))sql";

bool IsIdentityItem(const PublishItem& item) {
  return item.identity_validated_head.has_value() ||
         (!item.topic.empty() && static_cast<uint8_t>(item.topic[0]) == kIdentityTopicKind);
}

std::optional<uint64_t> RetentionFor(const PublishItem& item, const RetentionSeconds& r) {
  switch (item.retention) {
    case RetentionClass::kGroupMessage:
      return r.group_message;
    case RetentionClass::kWelcome:
      return r.welcome;
    case RetentionClass::kKeyPackage:
      return r.key_package;
    case RetentionClass::kExempt:
      return std::nullopt;
  }
  return std::nullopt;
}

// implements: OPS-020 (expiry arithmetic is checked at publish time)
// server_ns + seconds * 1e9, or nullopt when it does not fit a signed 64-bit value.
std::optional<int64_t> CheckedExpiry(int64_t server_ns, uint64_t seconds) {
  if (seconds > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / kNanosPerSecond)) {
    return std::nullopt;
  }
  int64_t expiry = 0;
  if (__builtin_add_overflow(server_ns, static_cast<int64_t>(seconds) * kNanosPerSecond, &expiry)) {
    return std::nullopt;
  }
  return expiry;
}

StoreError Invariant(std::string message) {
  return DbError::MakeStoreError(ErrorKind::kInvariant, std::move(message));
}

StoreError Admission(size_t item, Status status) {
  StoreError error = DbError::MakeStoreError(ErrorKind::kAdmission, "publish admission failed");
  error.item = item;
  error.admission = std::move(status);
  return error;
}

// Inputs the schema would reject anyway, caught before any lock is taken.
std::optional<StoreError> CheckRequest(const CommitPublishRequest& request) {
  for (const PublishItem& item : request.items) {
    if (item.topic.empty() || item.topic.size() > 128) {
      return Invariant("commit publish: topic length out of range");
    }
    if (!item.identity_changes.empty() &&
        (item.topic.size() != kIdentityTopicLength ||
         static_cast<uint8_t>(item.topic[0]) != kIdentityTopicKind)) {
      return Invariant("commit publish: identity changes on a topic that is not an inbox's");
    }
    for (const IdentifierChange& change : item.identity_changes) {
      if (change.identifier_kind < std::numeric_limits<int16_t>::min() ||
          change.identifier_kind > std::numeric_limits<int16_t>::max()) {
        return Invariant("commit publish: identifier kind out of range");
      }
    }
  }
  return std::nullopt;
}

// One publish transaction on one leased connection.
class PublishTransaction {
 public:
  PublishTransaction(Connection& conn, int statement_timeout_ms, Clock::time_point end)
      : conn_(conn), statement_timeout_ms_(statement_timeout_ms), end_(end) {}
  ~PublishTransaction() { Rollback(); }

  StoreResult<CommitPublishResult> Run(const CommitPublishRequest& request);

 private:
  // Any failure: roll back (the transaction guard) and report.
  StoreError Fail(const DbError& error) {
    Rollback();
    return error.ToStoreError();
  }
  StoreError Fail(StoreError error) {
    Rollback();
    return error;
  }

  std::optional<DbError> Begin();
  // One statement under the lifetime bound: the local statement_timeout is lowered to the
  // remaining lifetime when that is the smaller (STORE.md 3.3), and the client cancels shortly
  // after the lifetime if the server has not answered.
  DbResult<PgResult> Step(std::string_view what, const char* sql, const Params& params);
  void Rollback();

  int64_t RemainingMs() const {
    return std::chrono::floor<std::chrono::milliseconds>(end_ - Clock::now()).count();
  }

  Connection& conn_;
  const int statement_timeout_ms_;
  const Clock::time_point end_;
  int64_t local_statement_timeout_ms_ = 0;  // the value in effect inside the transaction
  bool open_ = false;
};

std::optional<DbError> PublishTransaction::Begin() {
  int64_t remaining = RemainingMs();
  if (remaining < 1) {
    return DeadlineExceeded("commit publish");
  }
  // implements: STORE.md 3.3 (the lifetime holds inside PostgreSQL on version 15: the local
  // idle_in_transaction_session_timeout ends a transaction its client abandoned)
  local_statement_timeout_ms_ = std::min<int64_t>(statement_timeout_ms_, remaining);
  std::string begin =
      "BEGIN ISOLATION LEVEL READ COMMITTED; " +
      ("SET LOCAL idle_in_transaction_session_timeout = " + std::to_string(remaining)) +
      "; SET LOCAL statement_timeout = " + std::to_string(local_statement_timeout_ms_);
  open_ = true;
  auto r = conn_.ExecScript("commit publish: begin", begin, end_ + kServerFirst);
  if (auto* e = std::get_if<DbError>(&r)) {
    return std::move(*e);
  }
  return std::nullopt;
}

DbResult<PgResult> PublishTransaction::Step(std::string_view what, const char* sql,
                                            const Params& params) {
  int64_t remaining = RemainingMs();
  if (remaining < 1) {
    return DeadlineExceeded(what);
  }
  int64_t wanted = std::min<int64_t>(statement_timeout_ms_, remaining);
  if (wanted != local_statement_timeout_ms_) {
    auto set = conn_.ExecScript(what, "SET LOCAL statement_timeout = " + std::to_string(wanted),
                                end_ + kServerFirst);
    if (auto* e = std::get_if<DbError>(&set)) {
      return std::move(*e);
    }
    local_statement_timeout_ms_ = wanted;
  }
  return conn_.Exec(what, sql, params, end_ + kServerFirst);
}

void PublishTransaction::Rollback() {
  if (!open_) {
    return;
  }
  open_ = false;
  if (!conn_.usable() || conn_.transaction_status() == PQTRANS_IDLE) {
    return;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(statement_timeout_ms_);
  auto r = conn_.ExecScript("commit publish: rollback", "ROLLBACK", deadline);
  if (std::holds_alternative<DbError>(r) || conn_.transaction_status() != PQTRANS_IDLE) {
    conn_.CancelAndClose();  // closing ends the server transaction and its locks
  }
}

// implements: STORE.md 3.1 steps 5-13, API-220 (atomic), API-222 (idempotent under the locks)
StoreResult<CommitPublishResult> PublishTransaction::Run(const CommitPublishRequest& request) {
  const std::vector<PublishItem>& items = request.items;
  const size_t n = items.size();

  std::vector<std::string_view> topics;
  std::vector<std::string_view> hashes;
  bool any_identity = false;
  for (const PublishItem& item : items) {
    topics.push_back(item.topic);
    hashes.emplace_back(reinterpret_cast<const char*>(item.message_hash.data()),
                        item.message_hash.size());
    any_identity = any_identity || IsIdentityItem(item);
  }

  // Step 5: begin, then lock in the one global order (ARC-031): identity, topics ascending by key.
  // The barrier comes last, immediately before the first nextval (step 9), so it is held only
  // across allocation, insert and commit.
  if (auto e = Begin()) {
    return Fail(*e);
  }
  if (any_identity) {
    auto r = Step("commit publish: identity lock", "SELECT pg_advisory_xact_lock(0, 1)", Params());
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
  }
  {
    Params params;
    params.ByteaArray(topics);
    auto r = Step("commit publish: topic locks", kTopicLocks, params);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
  }

  // Step 6: re-check duplicates. READ COMMITTED: this statement sees every publish that committed
  // while we waited for the locks, and the topic locks keep it true until we commit.
  CommitPublishResult result;
  result.locked_at = Clock::now();  // the publish.locks / db.commit_publish span boundary
  result.metas.resize(n);
  result.duplicate.assign(n, false);
  {
    Params params;
    params.ByteaArray(topics).ByteaArray(hashes);
    auto r = Step("commit publish: duplicate check", kFindStored, params);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
    const PgResult& rows = std::get<PgResult>(r);
    for (int row = 0; row < rows.rows(); ++row) {
      size_t i = static_cast<size_t>(rows.Int8(row, 0) - 1);
      EnvelopeMeta& meta = result.metas[i];
      meta.sequence_id = rows.Int8(row, 1);
      meta.server_ns = rows.Int8(row, 2);
      meta.expiry_ns = rows.IsNull(row, 3) ? 0 : rows.Int8(row, 3);
      meta.is_commit_or_proposal = rows.Bool(row, 4);
      meta.topic = items[i].topic;
      meta.message_hash = items[i].message_hash;
      result.duplicate[i] = true;
    }
  }

  // Step 7: identity head check, and the history length for the cap of step 8. The identity lock
  // makes both final: no other identity update can commit before we do.
  std::vector<size_t> identity_items;
  for (size_t i = 0; i < n; ++i) {
    if (!result.duplicate[i] && IsIdentityItem(items[i])) {
      identity_items.push_back(i);
    }
  }
  std::vector<int64_t> history_length(n, 0);
  if (!identity_items.empty()) {
    std::vector<std::string_view> identity_topics;
    for (size_t i : identity_items) {
      identity_topics.push_back(items[i].topic);
    }
    Params params;
    params.ByteaArray(identity_topics);
    auto r = Step("commit publish: identity heads", kIdentityHeads, params);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
    const PgResult& rows = std::get<PgResult>(r);
    for (int row = 0; row < rows.rows(); ++row) {
      size_t i = identity_items[static_cast<size_t>(rows.Int8(row, 0) - 1)];
      int64_t head = rows.Int8(row, 1);
      history_length[i] = rows.Int8(row, 2);
      // implements: API-232 (one history or start over)
      if (items[i].identity_validated_head && *items[i].identity_validated_head != head) {
        return Fail(DbError::MakeStoreError(ErrorKind::kStaleHistory,
                                            "identity history changed since validation"));
      }
    }
  }

  // Step 8: the lowest failing item that is still not a duplicate decides (API-223): its pending
  // validation failure, or the identity cap (API-234). A duplicate at the cap still succeeds.
  for (size_t i = 0; i < n; ++i) {
    if (result.duplicate[i]) {
      continue;
    }
    if (items[i].pending_failure) {
      return Fail(Admission(i, *items[i].pending_failure));
    }
    if (IsIdentityItem(items[i]) &&
        history_length[i] >= static_cast<int64_t>(request.max_identity_entries)) {
      return Fail(Admission(i, InvalidArgument("identity update rejected: too many entries")));
    }
  }

  std::vector<size_t> fresh;
  for (size_t i = 0; i < n; ++i) {
    if (!result.duplicate[i]) {
      fresh.push_back(i);
    }
  }
  if (fresh.empty()) {
    Rollback();  // nothing to store: every item was already stored
    return result;
  }

  // Step 9: the allocation barrier, shared, then one id per new item in item order (ARC-030).
  {
    auto r = Step("commit publish: allocation barrier", "SELECT pg_advisory_xact_lock_shared(0, 2)",
                  Params());
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
  }
  std::vector<int64_t> ids;
  int64_t server_ns = 0;
  {
    Params params;
    params.Int8(static_cast<int64_t>(fresh.size()));
    auto r = Step("commit publish: allocate", kAllocate, params);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
    const PgResult& rows = std::get<PgResult>(r);
    if (static_cast<size_t>(rows.rows()) != fresh.size()) {
      return Fail(Invariant("commit publish: allocation returned the wrong number of ids"));
    }
    for (int row = 0; row < rows.rows(); ++row) {
      ids.push_back(rows.Int8(row, 0));
    }
    server_ns = rows.Int8(0, 1);
    // The sequence only increases, so ascending ids are the draw order.
    std::sort(ids.begin(), ids.end());
  }

  // Step 10: rows in item order. server_ns is the transaction start, the same for every row, never
  // clamped to an earlier row's time (ARC-035).
  std::vector<int64_t> row_ids;
  std::vector<std::string_view> row_topics;
  std::vector<std::optional<int64_t>> expiries;
  std::vector<std::string_view> row_hashes;
  std::vector<bool> commit_flags;
  std::vector<std::string_view> payloads;
  std::vector<bool> push_flags;
  std::vector<std::optional<std::string_view>> hmacs;
  for (size_t k = 0; k < fresh.size(); ++k) {
    size_t i = fresh[k];
    const PublishItem& item = items[i];
    std::optional<int64_t> expiry;
    if (auto seconds = RetentionFor(item, request.retention)) {
      expiry = CheckedExpiry(server_ns, *seconds);
      if (!expiry) {
        return Fail(DbError::MakeStoreError(
            ErrorKind::kOverflow,
            "commit publish: expiry does not fit a signed 64-bit nanosecond timestamp"));
      }
    }
    row_ids.push_back(ids[k]);
    row_topics.push_back(item.topic);
    expiries.push_back(expiry);
    row_hashes.push_back(hashes[i]);
    commit_flags.push_back(item.is_commit_or_proposal);
    payloads.push_back(item.payload);
    push_flags.push_back(item.push_eligible);
    if (item.sender_hmac) {
      hmacs.emplace_back(std::string_view(reinterpret_cast<const char*>(item.sender_hmac->data()),
                                          item.sender_hmac->size()));
    } else {
      hmacs.emplace_back(std::nullopt);
    }

    EnvelopeMeta& meta = result.metas[i];
    meta.sequence_id = ids[k];
    meta.server_ns = server_ns;
    meta.message_hash = item.message_hash;
    meta.topic = item.topic;
    meta.expiry_ns = expiry.value_or(0);
    meta.is_commit_or_proposal = item.is_commit_or_proposal;
  }
  {
    Params params;
    params.Int8Array(row_ids)
        .ByteaArray(row_topics)
        .Int8(server_ns)
        .NullableInt8Array(expiries)
        .ByteaArray(row_hashes)
        .BoolArray(commit_flags)
        .ByteaArray(payloads)
        .BoolArray(push_flags)
        .NullableByteaArray(hmacs);
    auto r = Step("commit publish: insert", kInsert, params);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);  // 23505 included: never mapped to duplicate success (ARC-050)
    }
  }

  // Step 11: every inserted topic's watermark must advance (ARC-034).
  {
    Params params;
    params.ByteaArray(row_topics).Int8Array(row_ids);
    auto r = Step("commit publish: watermarks", kAdvanceWatermarks, params);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
    std::set<std::string_view> distinct(row_topics.begin(), row_topics.end());
    if (static_cast<size_t>(std::get<PgResult>(r).rows()) != distinct.size()) {
      return Fail(Invariant("commit publish: a topic watermark did not advance"));
    }
  }

  // Step 12: project identity changes with the update's own id (STORE.md 2.2).
  for (size_t k = 0; k < fresh.size(); ++k) {
    const PublishItem& item = items[fresh[k]];
    std::string_view inbox = std::string_view(item.topic).substr(1);
    for (const IdentifierChange& change : item.identity_changes) {
      Params params;
      params.Text(change.identifier).Int4(change.identifier_kind).Bytea(inbox).Int8(ids[k]);
      auto r = Step("commit publish: identifier projection", change.added ? kAssociate : kRevoke,
                    params);
      if (auto* e = std::get_if<DbError>(&r)) {
        return Fail(*e);
      }
    }
  }

  // Step 13: commit once. A failure here leaves the outcome unknown (ARC-053).
  {
    int64_t remaining = RemainingMs();
    if (remaining < 1) {
      return Fail(DeadlineExceeded("commit publish"));
    }
    auto r = conn_.ExecScript("commit publish: commit", "COMMIT", end_ + kServerFirst);
    if (auto* e = std::get_if<DbError>(&r)) {
      return Fail(*e);
    }
    open_ = false;
    if (std::get<PgResult>(r).CommandTag() != "COMMIT") {
      return Fail(Invariant("commit publish: the transaction did not commit"));
    }
  }
  return result;
}

}  // namespace

StoreResult<CommitPublishResult> CommitPublishOn(ConnectionPool& primary,
                                                 const PublishBounds& bounds,
                                                 const CommitPublishRequest& request) {
  if (request.items.empty()) {
    return CommitPublishResult{};
  }
  if (auto error = CheckRequest(request)) {
    return *error;
  }
  Clock::time_point end = Clock::now() + std::chrono::milliseconds(bounds.max_publish_duration_ms);
  if (request.deadline != Clock::time_point{} && request.deadline < end) {
    end = request.deadline;
  }
  auto lease = primary.Acquire(end);
  if (auto* e = std::get_if<DbError>(&lease)) {
    return e->ToStoreError();
  }
  PublishTransaction transaction(*std::get<ConnectionPool::Lease>(lease),
                                 bounds.statement_timeout_ms, end);
  return transaction.Run(request);
}

}  // namespace xb::store::postgres
