// The dispatcher's side of the PostgreSQL push store (PUSH.md 8, 11): the lock connection, and
// windows and deliveries on the read database.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "store/postgres/push.h"
#include "store/postgres/push_support.h"
#include "store/push_rules.h"

namespace xb::store::postgres {
namespace {

using push_support::BadRow;
using push_support::DeadlineIn;
using push_support::ExecOnce;
using push_support::OptionalBytes;

// (0, 3): this project's key pair for the dispatcher (PUSH.md 8.1); (0, 2) is the allocation
// barrier, (0, 4) the migration lock.
constexpr const char* kTryLock = "SELECT pg_try_advisory_lock(0, 3)";

constexpr const char* kReadCursor = "SELECT sequence_id FROM push_cursor WHERE singleton";

// implements: PUSH.md 8.2 step 2 (compare-and-set; never a lower value)
constexpr const char* kAdvanceCursor = R"sql(
UPDATE push_cursor SET sequence_id = $2::int8
WHERE singleton AND sequence_id = $1::int8 AND sequence_id < $2::int8 RETURNING 1)sql";

// implements: PUSH-234 (the five-value WHERE of PUSH.md 8.5; the signing key is NULL unless $6)
constexpr const char* kDeleteDead = R"sql(
DELETE FROM push_recipient
WHERE recipient_id = $1::bytea AND channel = $2::int4 AND delivery = $3::text
  AND signing_key IS NOT DISTINCT FROM (CASE WHEN $6::bool THEN $4::bytea END)
  AND secret_hash = $5::bytea
RETURNING 1)sql";

// implements: PUSH-226 (renewed_ns < store now - ttl; subscriptions cascade). The threshold is
// exact numeric arithmetic, clamped to bigint, computed once (push_recipient_renewed).
constexpr const char* kDeleteExpired = R"sql(
WITH d AS (
  DELETE FROM push_recipient
  WHERE renewed_ns < (
    SELECT greatest(extract(epoch FROM clock_timestamp()) * 1000000000 - $1::int8::numeric
                      * 1000000000, -9223372036854775808)::bigint)
  RETURNING 1)
SELECT count(*)::int8 FROM d)sql";

class PostgresPushLock final : public PushLock {
 public:
  PostgresPushLock(std::unique_ptr<Connection> conn, int timeout_ms)
      : conn_(std::move(conn)), timeout_ms_(timeout_ms) {}

  StoreResult<bool> TryAcquire() override {
    XB_TRY(const PgResult rows, Exec("push lock", kTryLock, Params()));
    if (rows.rows() != 1) {
      return BadRow("push lock");
    }
    return rows.Bool(0, 0);
  }
  StoreResult<bool> Ping() override {
    XB_TRY(const PgResult rows, Exec("push liveness", "SELECT 1", Params()));
    return rows.rows() == 1;
  }
  StoreResult<int64_t> ReadCursor() override {
    XB_TRY(const PgResult rows, Exec("read cursor", kReadCursor, Params()));
    if (rows.rows() != 1) {
      return BadRow("read cursor");
    }
    return rows.Int8(0, 0);
  }
  StoreResult<bool> AdvanceCursor(int64_t last_written, int64_t next) override {
    Params params;
    params.Int8(last_written).Int8(next);
    XB_TRY(const PgResult rows, Exec("advance cursor", kAdvanceCursor, params));
    return rows.rows() == 1;
  }
  StoreResult<bool> DeleteDead(const PushRecipient& used) override {
    Params params;
    params.Bytea(used.recipient_id)
        .Int4(used.channel)
        .Text(used.delivery)
        .Bytea(used.signing_key.value_or(""))
        .Bytea(HashView(used.secret_hash))
        .Bool(used.signing_key.has_value());
    XB_TRY(const PgResult rows, Exec("delete dead recipient", kDeleteDead, params));
    return rows.rows() == 1;
  }
  StoreResult<uint64_t> DeleteExpired(uint64_t ttl_seconds) override {
    // A TTL past INT64_MAX seconds expires nothing, as INT64_MAX does.
    const auto ttl =
        static_cast<int64_t>(std::min<uint64_t>(ttl_seconds, std::numeric_limits<int64_t>::max()));
    Params params;
    params.Int8(ttl);
    XB_TRY(const PgResult rows, Exec("delete expired recipients", kDeleteExpired, params));
    if (rows.rows() != 1) {
      return BadRow("delete expired recipients");
    }
    return static_cast<uint64_t>(rows.Int8(0, 0));
  }

 private:
  StoreResult<PgResult> Exec(std::string_view what, const char* sql, const Params& params) {
    auto r = conn_->Exec(what, sql, params, DeadlineIn(timeout_ms_));
    if (!r.ok()) {
      return r.error().ToStoreError();
    }
    return std::move(r).value();
  }

  const std::unique_ptr<Connection> conn_;
  const int timeout_ms_;
};

constexpr const char* kReadBoundary =
    "SELECT closed_sequence_id FROM allocation_boundary WHERE singleton";

// envelopes_push_eligible (a partial index on sequence_id WHERE push_eligible) answers both.
constexpr const char* kEligibleAbove =
    "SELECT EXISTS (SELECT 1 FROM envelopes WHERE push_eligible AND sequence_id > $1::int8)";

constexpr const char* kWindow = R"sql(
SELECT count(*)::int8, min(w.sequence_id), max(w.sequence_id)
FROM (SELECT sequence_id FROM envelopes
      WHERE push_eligible AND sequence_id > $1::int8 AND sequence_id <= $2::int8
      ORDER BY sequence_id LIMIT $3::int8) AS w)sql";

// implements: PUSH-257 (the delivery condition of PUSH.md 8.3: eligible envelopes of the window,
// each subscription on its topic that started below it, commits only with include_commits; keyset
// paging on (sequence_id, recipient_id); the payload only when suppression could apply)
// The subscriptions of an envelope are a LATERAL subquery fenced by OFFSET 0 and the recipient a
// LIMIT 1 probe, so that every envelope is an index probe of push_subscription_topic and every
// subscription one of the recipient's primary key, whatever a generic plan made on empty tables
// would otherwise choose (rows.h).
constexpr const char* kDeliveries = R"sql(
SELECT e.sequence_id, e.server_ns, e.topic, e.is_commit_or_proposal, e.sender_hmac,
       CASE WHEN e.sender_hmac IS NOT NULL AND s.hmac_epoch_base IS NOT NULL THEN e.payload END,
       s.recipient_id, r.secret_hash, r.channel::int4, r.delivery, r.signing_key,
       s.hmac_epoch_base, s.hmac_key_0, s.hmac_key_1, s.hmac_key_2
FROM envelopes AS e
CROSS JOIN LATERAL (
  SELECT x.* FROM push_subscription AS x
  WHERE x.topic = e.topic AND e.sequence_id > x.since_sequence_id
    AND (NOT e.is_commit_or_proposal OR x.include_commits)
  OFFSET 0) AS s
CROSS JOIN LATERAL (
  SELECT y.* FROM push_recipient AS y WHERE y.recipient_id = s.recipient_id LIMIT 1) AS r
WHERE e.push_eligible AND e.sequence_id BETWEEN $1::int8 AND $2::int8
  AND e.sequence_id >= $3::int8
  AND (e.sequence_id, s.recipient_id) > ($3::int8, $4::bytea)
ORDER BY e.sequence_id, s.recipient_id
LIMIT $5::int8)sql";

StoreResult<PushDelivery> DeliveryOf(const PgResult& rows, int row) {
  PushDelivery d;
  d.sequence_id = rows.Int8(row, 0);
  d.server_ns = rows.Int8(row, 1);
  d.topic = std::string(rows.Bytes(row, 2));
  d.is_commit_or_proposal = rows.Bool(row, 3);
  if (!rows.IsNull(row, 4)) {
    const std::string_view hmac = rows.Bytes(row, 4);
    if (hmac.size() != d.sender_hmac.emplace().size()) {
      return BadRow("push deliveries");
    }
    std::copy(hmac.begin(), hmac.end(), reinterpret_cast<char*>(d.sender_hmac->data()));
  }
  d.payload = rows.IsNull(row, 5) ? std::string() : std::string(rows.Bytes(row, 5));
  d.recipient.recipient_id = std::string(rows.Bytes(row, 6));
  const std::string_view secret = rows.Bytes(row, 7);
  if (secret.size() != d.recipient.secret_hash.size()) {
    return BadRow("push deliveries");
  }
  std::copy(secret.begin(), secret.end(), reinterpret_cast<char*>(d.recipient.secret_hash.data()));
  d.recipient.channel = rows.Int4(row, 8);
  d.recipient.delivery = std::string(rows.Bytes(row, 9));
  d.recipient.signing_key = OptionalBytes(rows, row, 10);
  if (!rows.IsNull(row, 11)) {
    d.hmac_epoch_base = rows.Int8(row, 11);
  }
  for (int slot = 0; slot < 3; ++slot) {
    d.hmac_keys[static_cast<size_t>(slot)] = OptionalBytes(rows, row, 12 + slot);
  }
  return d;
}

}  // namespace

StoreResult<std::unique_ptr<PushLock>> PostgresPushStore::OpenPushLock() {
  // The session's statement_timeout bounds each statement; the lock itself is session-scoped.
  auto conn = Connection::Open(options_.primary_url, "database.url", options_.statement_timeout_ms,
                               DeadlineIn(options_.statement_timeout_ms), "xmtp-backend push");
  if (!conn.ok()) {
    return conn.error().ToStoreError();
  }
  return std::unique_ptr<PushLock>(
      std::make_unique<PostgresPushLock>(std::move(conn).value(), options_.statement_timeout_ms));
}

StoreResult<int64_t> PostgresPushStore::ClosedBoundary() {
  XB_TRY(const PgResult rows,
         ExecOnce(read_, options_.statement_timeout_ms, "read boundary", kReadBoundary, Params()));
  if (rows.rows() != 1) {
    return BadRow("read boundary");
  }
  return rows.Int8(0, 0);
}

StoreResult<bool> PostgresPushStore::EligibleAbove(int64_t boundary) {
  Params params;
  params.Int8(boundary);
  XB_TRY(const PgResult rows, ExecOnce(read_, options_.statement_timeout_ms, "push eligible above",
                                       kEligibleAbove, params));
  if (rows.rows() != 1) {
    return BadRow("push eligible above");
  }
  return rows.Bool(0, 0);
}

// implements: PUSH.md 8.3 (window: the first eligible ids in (after, ceiling], never above it)
StoreResult<PushWindow> PostgresPushStore::NextPushWindow(int64_t after, int64_t ceiling,
                                                          uint32_t max_envelopes) {
  Params params;
  params.Int8(after).Int8(ceiling).Int8(max_envelopes);
  XB_TRY(const PgResult rows,
         ExecOnce(read_, options_.statement_timeout_ms, "push window", kWindow, params));
  if (rows.rows() != 1) {
    return BadRow("push window");
  }
  const int64_t n = rows.Int8(0, 0);
  if (n == 0) {
    return PushWindow{};
  }
  return PushWindow{
      .first = rows.Int8(0, 1), .last = rows.Int8(0, 2), .envelopes = static_cast<uint32_t>(n)};
}

StoreResult<std::vector<PushDelivery>> PostgresPushStore::PushDeliveries(
    const PushWindow& window, const std::optional<DeliveryKey>& after, uint32_t limit) {
  std::vector<PushDelivery> out;
  if (window.envelopes == 0 || limit == 0) {
    return out;
  }
  Params params;
  // Without a position, (first, empty id) precedes every row of the window.
  params.Int8(window.first)
      .Int8(window.last)
      .Int8(after ? after->sequence_id : window.first)
      .Bytea(after ? std::string_view(after->recipient_id) : std::string_view())
      .Int8(limit);
  XB_TRY(const PgResult rows,
         ExecOnce(read_, options_.statement_timeout_ms, "push deliveries", kDeliveries, params));
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int row = 0; row < rows.rows(); ++row) {
    XB_TRY(PushDelivery delivery, DeliveryOf(rows, row));
    out.push_back(std::move(delivery));
  }
  return out;
}

}  // namespace xb::store::postgres
