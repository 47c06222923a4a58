#include "store/postgres/publish.h"

#include <sched.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "base/completion_scope.h"
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

// One unique-index probe per input (the note on lookups in rows.h).
constexpr const char* kFindStored = R"sql(
SELECT u.ord, e.sequence_id, e.server_ns, e.expiry_ns, e.is_commit_or_proposal
FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS u(topic, hash, ord)
CROSS JOIN LATERAL (
  SELECT x.* FROM envelopes AS x WHERE x.topic = u.topic AND x.message_hash = u.hash LIMIT 1) AS e
)sql";

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

// Steps 7 (duplicates), 9, 10 and 11 as one statement, for rows with no identity projection, under
// the topic locks and the barrier taken by the statements before it in the same round trip. One
// output row per input, in input order: its stored row's metadata and whether that row was stored
// before. An input stored before is not inserted; of equal (topic, hash) inputs only the first is
// (the caller counts later ones as duplicates of it). Each new row gets one id drawn now, matched
// to the rows in input order by rank, so the order nextval ran in does not matter (ARC-030);
// server_ns is the transaction start for every row (ARC-035); expiry_ns the checked sum (bigint
// overflow is SQLSTATE 22003, OPS-020); each inserted topic's watermark advances (ARC-034). A topic
// that did not advance divides by zero (SQLSTATE 22012), which aborts the transaction before the
// COMMIT queued behind it runs: plain SQL has no RAISE, and the check has to hold inside the server
// to share the round trip. Payloads are read from the arrays once, by the insert; the duplicate
// logic sorts only (topic, hash, ord).
constexpr const char* kStoreNew = R"sql(
WITH input AS MATERIALIZED (
  SELECT u.topic, u.hash, u.ord FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS u(topic, hash, ord)),
stored AS MATERIALIZED (
  SELECT i.ord, e.sequence_id, e.server_ns, e.expiry_ns, e.is_commit_or_proposal
  FROM input AS i
  CROSS JOIN LATERAL (
    SELECT x.sequence_id, x.server_ns, x.expiry_ns, x.is_commit_or_proposal FROM envelopes AS x
    WHERE x.topic = i.topic AND x.message_hash = i.hash LIMIT 1) AS e),
fresh AS MATERIALIZED (
  SELECT DISTINCT ON (i.topic, i.hash) i.ord
  FROM input AS i
  WHERE NOT EXISTS (SELECT 1 FROM stored AS s WHERE s.ord = i.ord)
  ORDER BY i.topic, i.hash, i.ord),
drawn AS MATERIALIZED (SELECT nextval('envelope_sequence') AS id FROM fresh),
ranked AS (SELECT d.id, row_number() OVER (ORDER BY d.id) AS k FROM drawn AS d),
numbered AS (SELECT f.ord, row_number() OVER (ORDER BY f.ord) AS k FROM fresh AS f),
clock AS (SELECT (extract(epoch FROM transaction_timestamp()) * 1000000000)::bigint AS ns),
inserted AS (
  INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash,
                         is_commit_or_proposal, payload, push_eligible, sender_hmac)
  SELECT r.id, u.topic, c.ns, c.ns + u.retention * 1000000000, u.hash, u.cp, u.payload, u.push,
         u.hmac
  FROM unnest($1::bytea[], $2::bytea[], $3::int8[], $4::bool[], $5::bytea[], $6::bool[],
              $7::bytea[]) WITH ORDINALITY AS u(topic, hash, retention, cp, payload, push, hmac, ord)
  JOIN numbered AS n ON n.ord = u.ord
  JOIN ranked AS r ON r.k = n.k
  CROSS JOIN clock AS c
  RETURNING sequence_id, topic, message_hash, server_ns, expiry_ns, is_commit_or_proposal),
advanced AS (
  INSERT INTO topic_watermark AS w (topic, last_sequence_id)
  SELECT i.topic, max(i.sequence_id) FROM inserted AS i GROUP BY i.topic
  ON CONFLICT (topic) DO UPDATE SET last_sequence_id = excluded.last_sequence_id
    WHERE w.last_sequence_id < excluded.last_sequence_id
  RETURNING w.topic)
SELECT coalesce(s.sequence_id, n.sequence_id), coalesce(s.server_ns, n.server_ns),
       CASE WHEN s.ord IS NULL THEN n.expiry_ns ELSE s.expiry_ns END,
       coalesce(s.is_commit_or_proposal, n.is_commit_or_proposal), s.ord IS NOT NULL,
       1 / ((SELECT count(*) FROM advanced) = (SELECT count(DISTINCT x.topic) FROM inserted AS x))::int
FROM input AS i
LEFT JOIN stored AS s ON s.ord = i.ord
LEFT JOIN inserted AS n ON n.topic = i.topic AND n.message_hash = i.hash
ORDER BY i.ord)sql";
constexpr std::string_view kNumericOutOfRange = "22003";
constexpr std::string_view kDivisionByZero = "22012";

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

constexpr const char* kBegin = "BEGIN ISOLATION LEVEL READ COMMITTED";
constexpr const char* kSetLimits =
    "SELECT set_config('idle_in_transaction_session_timeout', $1::text, true), "
    "set_config('statement_timeout', $2::text, true)";
constexpr const char* kSetStatementTimeout =
    "SELECT set_config('statement_timeout', $1::text, true)";
constexpr const char* kIdentityLock = "SELECT pg_advisory_xact_lock(0, 1)";
constexpr const char* kAllocationBarrier = "SELECT pg_advisory_xact_lock_shared(0, 2)";
constexpr const char* kCommit = "COMMIT";

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

StoreError ExpiryOverflow() {
  return DbError::MakeStoreError(
      ErrorKind::kOverflow,
      "commit publish: expiry does not fit a signed 64-bit nanosecond timestamp");
}

StoreError WatermarkStuck() {
  return Invariant("commit publish: a topic watermark did not advance");
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

// The new rows' columns in item order, as the insert statements bind them.
struct NewRows {
  std::vector<std::string_view> topics;
  std::vector<std::string_view> hashes;
  std::vector<std::optional<uint64_t>> retention_seconds;  // none for exempt kinds
  std::vector<bool> commit_flags;
  std::vector<std::string_view> payloads;
  std::vector<bool> push_flags;
  std::vector<std::optional<std::string_view>> hmacs;

  void Add(const PublishItem& item, std::string_view hash, const RetentionSeconds& retention) {
    topics.push_back(item.topic);
    hashes.push_back(hash);
    retention_seconds.push_back(RetentionFor(item, retention));
    commit_flags.push_back(item.is_commit_or_proposal);
    payloads.push_back(item.payload);
    push_flags.push_back(item.push_eligible);
    if (item.sender_hmac) {
      hmacs.emplace_back(std::string_view(reinterpret_cast<const char*>(item.sender_hmac->data()),
                                          item.sender_hmac->size()));
    } else {
      hmacs.emplace_back(std::nullopt);
    }
  }
};

// Binds kStoreNew's parameters for `rows`; false when a retention does not fit int8 (OPS-020).
bool BindStoreNew(const NewRows& rows, Params* params) {
  std::vector<std::optional<int64_t>> retentions;
  for (const std::optional<uint64_t>& seconds : rows.retention_seconds) {
    if (seconds && *seconds > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return false;
    }
    retentions.push_back(seconds ? std::optional<int64_t>(static_cast<int64_t>(*seconds))
                                 : std::nullopt);
  }
  params->ByteaArray(rows.topics)
      .ByteaArray(rows.hashes)
      .NullableInt8Array(retentions)
      .BoolArray(rows.commit_flags)
      .ByteaArray(rows.payloads)
      .BoolArray(rows.push_flags)
      .NullableByteaArray(rows.hmacs);
  return true;
}

struct BatchFailure {
  StoreError error;
  bool retry_alone = true;
};

// One publish transaction on one leased connection.
class PublishTransaction {
 public:
  PublishTransaction(Connection& conn, int statement_timeout_ms, Clock::time_point end)
      : conn_(conn), statement_timeout_ms_(statement_timeout_ms), end_(end) {}
  ~PublishTransaction() { Rollback(); }

  // Runs `requests` (at least one) as one transaction. Each request keeps its own outcome: its
  // admission failure, identity staleness or duplicates never touch another's. A failure that is
  // not one request's own (a database error, a timeout, an expiry overflow) fails the whole
  // transaction: BatchFailure::retry_alone says whether the requests may still run on their own
  // (nothing was committed) or must all report the error (the commit's outcome is unknown).
  Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure> Run(
      const std::vector<const CommitPublishRequest*>& requests);

 private:
  // Run for requests of group-message kinds only (no identity item, no pending validation
  // failure): no outcome then depends on what the duplicate check finds, so the whole transaction
  // is one round trip.
  Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure> RunInOneRound(
      const std::vector<const CommitPublishRequest*>& requests);

  // `before` (statements of this transaction not yet sent), then the barrier, kStoreNew bound to
  // `params` for `inputs` rows and the COMMIT, in one round trip. Returns kStoreNew's rows, one
  // per input.
  Expected<PgResult, BatchFailure> StoreAndCommit(std::vector<Connection::Statement> before,
                                                  const Params& params, size_t inputs);

  // Any failure: roll back (the transaction guard) and report.
  StoreError Fail(const DbError& error) {
    Rollback();
    return error.ToStoreError();
  }
  StoreError Fail(StoreError error) {
    Rollback();
    return error;
  }

  // One round trip of statements (a libpq pipeline) under the lifetime bound. The first round
  // begins the transaction and sets its local idle_in_transaction_session_timeout and
  // statement_timeout to the remaining lifetime when that is the smaller (STORE.md 3.3); a later
  // round lowers statement_timeout again first when the lifetime has shrunk below it. The client
  // gives up shortly after the lifetime if the server has not answered. Returns the results of
  // `statements` only; `*failed_at` as Connection::ExecPipeline, relative to `statements`.
  DbResult<std::vector<PgResult>> Round(std::string_view what,
                                        std::vector<Connection::Statement> statements,
                                        size_t* failed_at);
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

DbResult<std::vector<PgResult>> PublishTransaction::Round(
    std::string_view what, std::vector<Connection::Statement> statements, size_t* failed_at) {
  *failed_at = 0;
  const int64_t remaining = RemainingMs();
  if (remaining < 1) {
    return DeadlineExceeded(what);
  }
  const int64_t wanted = std::min<int64_t>(statement_timeout_ms_, remaining);
  std::vector<Connection::Statement> all;
  Params limits;
  if (!open_) {
    // implements: STORE.md 3.3 (the lifetime holds inside PostgreSQL on version 15: the local
    // idle_in_transaction_session_timeout ends a transaction its client abandoned)
    limits.Text(std::to_string(remaining)).Text(std::to_string(wanted));
    all.push_back({.sql = kBegin, .params = nullptr});
    all.push_back({.sql = kSetLimits, .params = &limits});
    open_ = true;
  } else if (wanted != local_statement_timeout_ms_) {
    limits.Text(std::to_string(wanted));
    all.push_back({.sql = kSetStatementTimeout, .params = &limits});
  }
  local_statement_timeout_ms_ = wanted;
  const size_t prefix = all.size();
  all.insert(all.end(), statements.begin(), statements.end());
  auto r = conn_.ExecPipeline(what, all, end_ + kServerFirst, failed_at);
  *failed_at = *failed_at < prefix ? 0 : *failed_at - prefix;
  if (!r.ok()) {
    return std::move(r).error();
  }
  auto& results = r.value();
  results.erase(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(prefix));
  return std::move(results);
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
  if (!r.ok() || conn_.transaction_status() != PQTRANS_IDLE) {
    conn_.CancelAndClose();  // closing ends the server transaction and its locks
  }
}

Expected<PgResult, BatchFailure> PublishTransaction::StoreAndCommit(
    std::vector<Connection::Statement> before, const Params& params, size_t inputs) {
  const size_t statement_at = before.size() + 1;
  const size_t commit_at = statement_at + 1;
  std::vector<Connection::Statement> round = std::move(before);
  round.push_back({.sql = kAllocationBarrier, .params = nullptr});
  round.push_back({.sql = kStoreNew, .params = &params});
  round.push_back({.sql = kCommit, .params = nullptr});
  size_t failed_at = 0;
  auto r = Round("commit publish: store and commit", std::move(round), &failed_at);
  if (!r.ok()) {
    if (failed_at == statement_at && r.error().sqlstate == kNumericOutOfRange) {
      return BatchFailure{.error = Fail(ExpiryOverflow())};
    }
    if (failed_at == statement_at && r.error().sqlstate == kDivisionByZero) {
      return BatchFailure{.error = Fail(WatermarkStuck())};
    }
    // Up to the COMMIT's own error answer nothing committed; past it (a deadline or a lost
    // connection after sending) the outcome is unknown (ARC-053).
    return BatchFailure{.error = Fail(r.error()), .retry_alone = failed_at <= commit_at};
  }
  open_ = false;
  std::vector<PgResult>& out = r.value();
  if (out[commit_at].CommandTag() != "COMMIT") {
    return BatchFailure{.error = Fail(Invariant("commit publish: the transaction did not commit")),
                        .retry_alone = false};
  }
  if (static_cast<size_t>(out[statement_at].rows()) != inputs) {
    return BatchFailure{
        .error = Invariant("commit publish: the store returned the wrong number of rows"),
        .retry_alone = false};
  }
  return std::move(out[statement_at]);
}

// implements: STORE.md 3.1 steps 5-13, API-220, API-222 (one round trip: begin, the topic locks
// in their one order, the barrier, kStoreNew, commit)
Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure>
PublishTransaction::RunInOneRound(const std::vector<const CommitPublishRequest*>& requests) {
  NewRows rows;
  for (const CommitPublishRequest* request : requests) {
    for (const PublishItem& item : request->items) {
      rows.Add(item,
               std::string_view(reinterpret_cast<const char*>(item.message_hash.data()),
                                item.message_hash.size()),
               request->retention);
    }
  }
  Params params;
  if (!BindStoreNew(rows, &params)) {
    return BatchFailure{.error = Fail(ExpiryOverflow())};
  }
  Params lock_params;
  lock_params.ByteaArray(rows.topics);
  auto r =
      StoreAndCommit({{.sql = kTopicLocks, .params = &lock_params}}, params, rows.topics.size());
  if (!r.ok()) {
    return std::move(r).error();
  }
  const PgResult& stored = r.value();
  // The publish.locks / db.commit_publish span boundary: here the locks were taken in the same
  // round trip as everything else.
  const Clock::time_point locked_at = Clock::now();
  using Key = std::pair<std::string_view, std::string_view>;
  std::set<Key> seen;  // (topic, hash) of earlier inputs: a later copy is a duplicate of it
  std::vector<StoreResult<CommitPublishResult>> out;
  int row = 0;
  for (const CommitPublishRequest* request : requests) {
    CommitPublishResult result;
    result.locked_at = locked_at;
    for (const PublishItem& item : request->items) {
      const size_t k = static_cast<size_t>(row);
      EnvelopeMeta& meta = result.metas.emplace_back();
      meta.sequence_id = stored.Int8(row, 0);
      meta.server_ns = stored.Int8(row, 1);
      meta.expiry_ns = stored.IsNull(row, 2) ? 0 : stored.Int8(row, 2);
      meta.is_commit_or_proposal = stored.Bool(row, 3);
      meta.topic = item.topic;
      meta.message_hash = item.message_hash;
      const bool first = seen.insert(Key{rows.topics[k], rows.hashes[k]}).second;
      result.duplicate.push_back(stored.Bool(row, 4) || !first);
      ++row;
    }
    out.emplace_back(std::move(result));
  }
  return out;
}

// implements: STORE.md 3.1 steps 5-13, API-220 (atomic per request), API-222 (idempotent under the
// locks)
Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure> PublishTransaction::Run(
    const std::vector<const CommitPublishRequest*>& requests) {
  // Every item of every request, flattened in request order then item order.
  struct FlatItem {
    size_t request;
    size_t item;
  };
  std::vector<FlatItem> flat;
  std::vector<size_t> first_flat(requests.size());  // flat index of each request's item 0
  std::vector<std::string_view> topics;
  std::vector<std::string_view> hashes;
  bool any_identity = false;
  for (size_t r = 0; r < requests.size(); ++r) {
    first_flat[r] = flat.size();
    for (size_t i = 0; i < requests[r]->items.size(); ++i) {
      const PublishItem& item = requests[r]->items[i];
      flat.push_back(FlatItem{.request = r, .item = i});
      topics.push_back(item.topic);
      hashes.emplace_back(reinterpret_cast<const char*>(item.message_hash.data()),
                          item.message_hash.size());
      any_identity = any_identity || IsIdentityItem(item);
    }
  }
  const size_t n = flat.size();
  const bool any_pending_failure =
      std::any_of(requests.begin(), requests.end(), [](const CommitPublishRequest* request) {
        return std::any_of(
            request->items.begin(), request->items.end(),
            [](const PublishItem& item) { return item.pending_failure.has_value(); });
      });
  if (!any_identity && !any_pending_failure) {
    return RunInOneRound(requests);
  }
  auto batch_failure = [this](auto error) { return BatchFailure{.error = Fail(std::move(error))}; };

  // Steps 5-7 in one round trip: begin, lock in the one global order (ARC-031: identity, topics
  // ascending by key), re-check duplicates, and read the identity heads. READ COMMITTED: the
  // duplicate check sees every publish that committed while we waited for the locks, and the
  // topic locks keep it true until we commit; the identity lock makes the heads final. The
  // barrier comes later, immediately before the first nextval (step 9), so it is held only across
  // allocation, insert and commit.
  std::vector<CommitPublishResult> results(requests.size());
  std::vector<std::optional<StoreError>> request_error(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    results[r].metas.resize(requests[r]->items.size());
    results[r].duplicate.assign(requests[r]->items.size(), false);
  }
  auto item_of = [&](size_t f) -> const PublishItem& {
    return requests[flat[f].request]->items[flat[f].item];
  };
  auto meta_of = [&](size_t f) -> EnvelopeMeta& {
    return results[flat[f].request].metas[flat[f].item];
  };
  auto is_duplicate = [&](size_t f) { return results[flat[f].request].duplicate[flat[f].item]; };
  std::vector<size_t> identity_items;
  std::vector<std::string_view> identity_topics;
  for (size_t f = 0; f < n; ++f) {
    if (IsIdentityItem(item_of(f))) {
      identity_items.push_back(f);
      identity_topics.push_back(item_of(f).topic);
    }
  }
  std::vector<int64_t> history_length(n, 0);
  {
    Params lock_params;
    lock_params.ByteaArray(topics);
    Params duplicate_params;
    duplicate_params.ByteaArray(topics).ByteaArray(hashes);
    Params head_params;
    head_params.ByteaArray(identity_topics);
    std::vector<Connection::Statement> round;
    if (any_identity) {
      round.push_back({.sql = kIdentityLock, .params = nullptr});
    }
    round.push_back({.sql = kTopicLocks, .params = &lock_params});
    const size_t duplicates_at = round.size();
    round.push_back({.sql = kFindStored, .params = &duplicate_params});
    const size_t heads_at = round.size();
    if (!identity_items.empty()) {
      round.push_back({.sql = kIdentityHeads, .params = &head_params});
    }
    size_t failed_at = 0;
    auto r = Round("commit publish: locks and duplicate check", std::move(round), &failed_at);
    if (!r.ok()) {
      return batch_failure(r.error());
    }
    // The publish.locks / db.commit_publish span boundary: the locks are held once this round
    // trip has answered.
    const Clock::time_point locked_at = Clock::now();
    for (CommitPublishResult& result : results) {
      result.locked_at = locked_at;
    }
    const std::vector<PgResult>& out = r.value();
    const PgResult& rows = out[duplicates_at];
    for (int row = 0; row < rows.rows(); ++row) {
      const size_t f = static_cast<size_t>(rows.Int8(row, 0) - 1);
      EnvelopeMeta& meta = meta_of(f);
      meta.sequence_id = rows.Int8(row, 1);
      meta.server_ns = rows.Int8(row, 2);
      meta.expiry_ns = rows.IsNull(row, 3) ? 0 : rows.Int8(row, 3);
      meta.is_commit_or_proposal = rows.Bool(row, 4);
      meta.topic = item_of(f).topic;
      meta.message_hash = item_of(f).message_hash;
      results[flat[f].request].duplicate[flat[f].item] = true;
    }
    if (!identity_items.empty()) {
      const PgResult& heads = out[heads_at];
      for (int row = 0; row < heads.rows(); ++row) {
        const size_t f = identity_items[static_cast<size_t>(heads.Int8(row, 0) - 1)];
        if (is_duplicate(f)) {
          continue;  // a stored duplicate succeeds whatever the head (API-222)
        }
        const int64_t head = heads.Int8(row, 1);
        history_length[f] = heads.Int8(row, 2);
        // implements: API-232 (one history or start over)
        const auto& validated = item_of(f).identity_validated_head;
        if (validated && *validated != head && !request_error[flat[f].request]) {
          request_error[flat[f].request] = DbError::MakeStoreError(
              ErrorKind::kStaleHistory, "identity history changed since validation");
        }
      }
    }
  }

  // Step 8, per request in queue order: the lowest failing item that is still not a duplicate
  // decides (API-223): its pending validation failure, or the identity cap (API-234). A duplicate
  // at the cap still succeeds. An item an earlier request of this transaction stores is a
  // duplicate of it, exactly as if that request had committed first.
  using Key = std::pair<std::string_view, std::string_view>;
  std::map<Key, size_t> stored_here;  // (topic, hash) -> flat index
  std::vector<size_t> copy_of(n, std::numeric_limits<size_t>::max());
  std::vector<size_t> fresh;
  for (size_t r = 0; r < requests.size(); ++r) {
    if (request_error[r]) {
      continue;
    }
    const std::vector<PublishItem>& items = requests[r]->items;
    for (size_t i = 0; i < items.size() && !request_error[r]; ++i) {
      const size_t f = first_flat[r] + i;
      if (is_duplicate(f) || stored_here.contains(Key{topics[f], hashes[f]})) {
        continue;
      }
      if (items[i].pending_failure) {
        request_error[r] = Admission(i, *items[i].pending_failure);
      } else if (IsIdentityItem(items[i]) &&
                 history_length[f] >= static_cast<int64_t>(requests[r]->max_identity_entries)) {
        request_error[r] =
            Admission(i, InvalidArgument("identity update rejected: too many entries"));
      }
    }
    if (request_error[r]) {
      continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const size_t f = first_flat[r] + i;
      if (is_duplicate(f)) {
        continue;
      }
      auto [it, inserted] = stored_here.emplace(Key{topics[f], hashes[f]}, f);
      if (inserted) {
        fresh.push_back(f);
      } else {
        copy_of[f] = it->second;
      }
    }
  }

  auto outcomes = [&] {
    std::vector<StoreResult<CommitPublishResult>> out;
    out.reserve(requests.size());
    for (size_t r = 0; r < requests.size(); ++r) {
      if (request_error[r]) {
        out.emplace_back(std::move(*request_error[r]));
      } else {
        out.emplace_back(std::move(results[r]));
      }
    }
    return out;
  };
  if (fresh.empty()) {
    Rollback();  // nothing to store: every item was already stored or its request failed
    return outcomes();
  }

  auto adopt_copies = [&] {
    for (size_t f = 0; f < n; ++f) {
      if (copy_of[f] != std::numeric_limits<size_t>::max()) {
        meta_of(f) = meta_of(copy_of[f]);
        results[flat[f].request].duplicate[flat[f].item] = true;
      }
    }
  };
  NewRows rows;
  for (size_t f : fresh) {
    rows.Add(item_of(f), hashes[f], requests[flat[f].request]->retention);
  }
  // Steps 9-13 in one round trip when no new row projects identity changes (the projection needs
  // each row's id on the client): the barrier, kStoreNew over the new rows and the COMMIT.
  if (std::none_of(fresh.begin(), fresh.end(),
                   [&](size_t f) { return !item_of(f).identity_changes.empty(); })) {
    Params params;
    if (!BindStoreNew(rows, &params)) {
      return batch_failure(ExpiryOverflow());
    }
    auto r = StoreAndCommit({}, params, fresh.size());
    if (!r.ok()) {
      return std::move(r).error();
    }
    const PgResult& stored = r.value();
    for (size_t k = 0; k < fresh.size(); ++k) {
      const int row = static_cast<int>(k);
      const PublishItem& item = item_of(fresh[k]);
      EnvelopeMeta& meta = meta_of(fresh[k]);
      meta.sequence_id = stored.Int8(row, 0);
      meta.server_ns = stored.Int8(row, 1);
      meta.expiry_ns = stored.IsNull(row, 2) ? 0 : stored.Int8(row, 2);
      meta.message_hash = item.message_hash;
      meta.topic = item.topic;
      meta.is_commit_or_proposal = item.is_commit_or_proposal;
    }
    adopt_copies();
    return outcomes();
  }

  // Step 9 in one round trip: the allocation barrier, shared, then one id per new item in item
  // order (ARC-030).
  std::vector<int64_t> ids;
  int64_t server_ns = 0;
  {
    Params params;
    params.Int8(static_cast<int64_t>(fresh.size()));
    size_t failed_at = 0;
    auto r = Round(
        "commit publish: allocate",
        {{.sql = kAllocationBarrier, .params = nullptr}, {.sql = kAllocate, .params = &params}},
        &failed_at);
    if (!r.ok()) {
      return batch_failure(r.error());
    }
    const PgResult& rows = r.value()[1];
    if (static_cast<size_t>(rows.rows()) != fresh.size()) {
      return batch_failure(
          Invariant("commit publish: allocation returned the wrong number of ids"));
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
  std::vector<std::optional<int64_t>> expiries;
  for (size_t k = 0; k < fresh.size(); ++k) {
    const PublishItem& item = item_of(fresh[k]);
    std::optional<int64_t> expiry;
    if (const std::optional<uint64_t>& seconds = rows.retention_seconds[k]) {
      expiry = CheckedExpiry(server_ns, *seconds);
      if (!expiry) {
        return batch_failure(ExpiryOverflow());
      }
    }
    expiries.push_back(expiry);

    EnvelopeMeta& meta = meta_of(fresh[k]);
    meta.sequence_id = ids[k];
    meta.server_ns = server_ns;
    meta.message_hash = item.message_hash;
    meta.topic = item.topic;
    meta.expiry_ns = expiry.value_or(0);
    meta.is_commit_or_proposal = item.is_commit_or_proposal;
  }
  // Steps 10-12 in one round trip: the rows, every inserted topic's watermark (ARC-034), and the
  // identity projection with each update's own id (STORE.md 2.2).
  {
    Params insert_params;
    insert_params.Int8Array(ids)
        .ByteaArray(rows.topics)
        .Int8(server_ns)
        .NullableInt8Array(expiries)
        .ByteaArray(rows.hashes)
        .BoolArray(rows.commit_flags)
        .ByteaArray(rows.payloads)
        .BoolArray(rows.push_flags)
        .NullableByteaArray(rows.hmacs);
    Params watermark_params;
    watermark_params.ByteaArray(rows.topics).Int8Array(ids);
    std::deque<Params> projection_params;
    std::vector<Connection::Statement> round = {
        {.sql = kInsert, .params = &insert_params},
        {.sql = kAdvanceWatermarks, .params = &watermark_params}};
    for (size_t k = 0; k < fresh.size(); ++k) {
      const PublishItem& item = item_of(fresh[k]);
      std::string_view inbox = std::string_view(item.topic).substr(1);
      for (const IdentifierChange& change : item.identity_changes) {
        Params& params = projection_params.emplace_back();
        params.Text(change.identifier).Int4(change.identifier_kind).Bytea(inbox).Int8(ids[k]);
        round.push_back({.sql = change.added ? kAssociate : kRevoke, .params = &params});
      }
    }
    size_t failed_at = 0;
    auto r = Round("commit publish: insert", std::move(round), &failed_at);
    if (!r.ok()) {
      return batch_failure(
          r.error());  // 23505 included: never mapped to duplicate success (ARC-050)
    }
    std::set<std::string_view> distinct(rows.topics.begin(), rows.topics.end());
    if (static_cast<size_t>(r.value()[1].rows()) != distinct.size()) {
      return batch_failure(WatermarkStuck());
    }
  }

  // Step 13: commit once. A failure here leaves the outcome unknown (ARC-053): no request may run
  // again on its own.
  {
    size_t failed_at = 0;
    auto r = Round("commit publish: commit", {{.sql = kCommit, .params = nullptr}}, &failed_at);
    if (!r.ok()) {
      // failed_at 0: COMMIT was not sent, or the server answered it with an error (and rolled
      // back); anything else (a deadline or a lost connection after sending) is unknown.
      return BatchFailure{.error = Fail(r.error()), .retry_alone = failed_at == 0};
    }
    open_ = false;
    if (r.value()[0].CommandTag() != "COMMIT") {
      return BatchFailure{
          .error = Fail(Invariant("commit publish: the transaction did not commit")),
          .retry_alone = false};
    }
  }
  adopt_copies();
  return outcomes();
}

// The end of one request's lifetime: the earlier of its deadline (unless unset) and
// max_publish_duration_ms from now.
Clock::time_point EndOf(const CommitPublishRequest& request, const PublishBounds& bounds) {
  Clock::time_point end = Clock::now() + std::chrono::milliseconds(bounds.max_publish_duration_ms);
  if (request.deadline != Clock::time_point{} && request.deadline < end) {
    end = request.deadline;
  }
  return end;
}

// One attempt at running `requests` in one transaction ending at `end`.
Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure> RunOnce(
    ConnectionPool& primary, const PublishBounds& bounds,
    const std::vector<const CommitPublishRequest*>& requests, Clock::time_point end) {
  auto lease = primary.Acquire(end);
  if (!lease.ok()) {
    return BatchFailure{.error = lease.error().ToStoreError(), .retry_alone = requests.size() > 1};
  }
  PublishTransaction transaction(*lease.value(), bounds.statement_timeout_ms, end);
  return transaction.Run(requests);
}

// Runs `requests` in one transaction ending at `end`. On a failure that is not one request's own,
// runs each request again alone (when nothing was committed), so one request's deadline or a
// transient error on a shared transaction costs no other request more than a retry.
std::vector<StoreResult<CommitPublishResult>> RunTransaction(
    ConnectionPool& primary, const PublishBounds& bounds,
    const std::vector<const CommitPublishRequest*>& requests, Clock::time_point end) {
  Expected<std::vector<StoreResult<CommitPublishResult>>, BatchFailure> outcome =
      RunOnce(primary, bounds, requests, end);
  if (outcome.ok()) {
    return std::move(outcome).value();
  }
  BatchFailure& failure = outcome.error();
  std::vector<StoreResult<CommitPublishResult>> results;
  for (const CommitPublishRequest* request : requests) {
    if (requests.size() == 1 || !failure.retry_alone) {
      results.emplace_back(failure.error);
    } else {
      results.push_back(
          std::move(RunTransaction(primary, bounds, {request}, EndOf(*request, bounds)).front()));
    }
  }
  return results;
}

}  // namespace

std::vector<StoreResult<CommitPublishResult>> CommitPublishBatchOn(
    ConnectionPool& primary, const PublishBounds& bounds,
    const std::vector<const CommitPublishRequest*>& requests) {
  Clock::time_point end = Clock::time_point::max();
  for (const CommitPublishRequest* request : requests) {
    end = std::min(end, EndOf(*request, bounds));
  }
  return RunTransaction(primary, bounds, requests, end);
}

PublishCombiner::PublishCombiner(ConnectionPool& primary, PublishBounds bounds,
                                 CombinerLimits limits)
    : primary_(primary), bounds_(bounds), limits_(limits) {
  for (size_t i = 0; i < std::max<size_t>(limits_.max_transactions, 1); ++i) {
    leaders_.emplace_back([this] { Lead(); });
  }
}

PublishCombiner::~PublishCombiner() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& leader : leaders_) {
    leader.join();
  }
}

namespace {

bool HasIdentityItem(const CommitPublishRequest& request) {
  return std::any_of(request.items.begin(), request.items.end(), IsIdentityItem);
}

}  // namespace

StoreResult<CommitPublishResult> PublishCombiner::Commit(const CommitPublishRequest& request) {
  if (request.items.empty()) {
    return CommitPublishResult{};
  }
  if (auto error = CheckRequest(request)) {
    return *error;
  }
  // An identity update runs alone: it takes the identity lock, which would make every group
  // message sharing its transaction wait for every other identity update.
  if (HasIdentityItem(request)) {
    return std::move(
        RunTransaction(primary_, bounds_, {&request}, EndOf(request, bounds_)).front());
  }
  // Bounded: a leader runs the request within its lifetime (every statement and the pool wait
  // are bounded by it, and an expired request is failed when taken) and then calls done.
  std::mutex mu;
  std::condition_variable finished;
  std::optional<StoreResult<CommitPublishResult>> result;
  Enqueue(Pending{.request = &request,
                  .owner = nullptr,
                  .end = EndOf(request, bounds_),
                  .done = [&](StoreResult<CommitPublishResult> r) {
                    std::lock_guard lock(mu);
                    result = std::move(r);
                    finished.notify_one();
                  }});
  std::unique_lock lock(mu);
  finished.wait(lock, [&] { return result.has_value(); });
  return std::move(*result);
}

bool PublishCombiner::Start(std::shared_ptr<const CommitPublishRequest> request, Done done) {
  if (request->items.empty() || CheckRequest(*request) || HasIdentityItem(*request)) {
    return false;
  }
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= limits_.max_queued) {
      return false;  // the caller blocks a DB pool thread instead, which bounds the queue
    }
  }
  const CommitPublishRequest* raw = request.get();
  Enqueue(Pending{.request = raw,
                  .owner = std::move(request),
                  .end = EndOf(*raw, bounds_),
                  .done = std::move(done)});
  return true;
}

void PublishCombiner::Enqueue(Pending pending) {
  {
    std::lock_guard lock(mu_);
    queued_items_ += pending.request->items.size();
    queue_.push_back(std::move(pending));
  }
  work_.notify_one();
}

void PublishCombiner::TakeBatch(std::vector<Pending>* batch, std::vector<std::string>* topics) {
  // Scanned oldest first. A request touching a topic that another leader's transaction holds
  // would only wait for that transaction's locks, so it stays queued; its topics are then closed
  // to every later request of this scan, so requests sharing a topic are taken in queue order.
  std::unordered_set<std::string_view> closed;
  size_t items = 0;
  uint64_t bytes = 0;
  std::vector<bool> taken(queue_.size(), false);
  for (size_t k = 0; k < queue_.size(); ++k) {
    const CommitPublishRequest& next = *queue_[k].request;
    const bool free = std::none_of(next.items.begin(), next.items.end(), [&](const PublishItem& i) {
      return in_flight_.contains(i.topic) || closed.contains(i.topic);
    });
    if (!free) {
      for (const PublishItem& item : next.items) {
        closed.insert(item.topic);
      }
      continue;
    }
    uint64_t next_bytes = 0;
    for (const PublishItem& item : next.items) {
      next_bytes += item.payload.size();
    }
    if (!batch->empty() &&
        (batch->size() >= limits_.max_requests || items + next.items.size() > limits_.max_items ||
         bytes + next_bytes > limits_.max_payload_bytes)) {
      break;
    }
    items += next.items.size();
    bytes += next_bytes;
    queued_items_ -= next.items.size();
    taken[k] = true;
    batch->push_back(std::move(queue_[k]));
  }
  if (batch->empty()) {
    return;
  }
  for (const Pending& pending : *batch) {
    for (const PublishItem& item : pending.request->items) {
      if (!in_flight_.contains(item.topic)) {
        in_flight_.insert(item.topic);
        topics->push_back(item.topic);
      }
    }
  }
  size_t kept = 0;
  for (size_t k = 0; k < queue_.size(); ++k) {
    if (!taken[k]) {
      if (kept != k) {
        queue_[kept] = std::move(queue_[k]);
      }
      ++kept;
    }
  }
  queue_.resize(kept);
}

void PublishCombiner::Lead() {
  std::vector<std::string> held;  // topics of this leader's transaction, in in_flight_
  bool ran = false;               // counted in running_, with `held` in in_flight_
  while (true) {
    std::vector<Pending> batch;
    {
      std::unique_lock lock(mu_);
      if (ran) {
        ran = false;
        --running_;
        for (const std::string& topic : held) {
          in_flight_.erase(topic);
        }
        held.clear();
        work_.notify_all();  // requests waiting on these topics, or on this leader, may go now
      }
      bool yielded = false;
      while (true) {
        // A second concurrent transaction only for a full queue or a request that waited long
        // (CombinerLimits::concurrent_min_items).
        std::optional<Clock::time_point> wake;
        if (running_ == 0 || queued_items_ >= limits_.concurrent_min_items ||
            (!queue_.empty() &&
             Clock::now() - queue_.front().queued_at >= limits_.concurrent_after)) {
          if (!yielded && !queue_.empty() && queued_items_ < limits_.max_items) {
            // As the SQLite writer does (sqlite/writer.cc): woken by a burst's first request, a
            // leader would preempt the thread still queueing the rest and run a batch of one.
            yielded = true;
            lock.unlock();
            sched_yield();
            lock.lock();
            continue;  // look again: the queue grew, or another leader took it
          }
          TakeBatch(&batch, &held);
          if (!batch.empty()) {
            break;
          }
        } else if (!queue_.empty()) {
          wake = queue_.front().queued_at + limits_.concurrent_after;
        }
        if (stopping_ && queue_.empty()) {
          return;  // stopping, and nothing is left to run
        }
        if (wake) {
          work_.wait_until(lock, *wake);
        } else {
          work_.wait(lock);
        }
      }
      ++running_;
      ran = true;
    }
    // A request whose lifetime ended while it waited would end the shared transaction at once and
    // send every other request to run alone: it fails here instead, having stored nothing.
    const Clock::time_point now = Clock::now();
    std::vector<Pending> live;
    live.reserve(batch.size());
    for (Pending& pending : batch) {
      if (pending.end <= now) {
        pending.done(DeadlineExceeded("commit publish: waiting for a transaction").ToStoreError());
      } else {
        live.push_back(std::move(pending));
      }
    }
    if (live.empty()) {
      continue;
    }
    std::vector<const CommitPublishRequest*> requests;
    Clock::time_point end = Clock::time_point::max();
    for (const Pending& pending : live) {
      requests.push_back(pending.request);
      end = std::min(end, pending.end);
    }
    // The lifetimes were fixed when each request arrived, not when the batch formed.
    auto results = RunTransaction(primary_, bounds_, requests, end);
    CompletionScope scope;  // one hand-over per caller thread (base/completion_scope.h)
    for (size_t k = 0; k < live.size(); ++k) {
      live[k].done(std::move(results[k]));
    }
  }
}

}  // namespace xb::store::postgres
