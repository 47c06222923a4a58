#include "store/postgres/push.h"

#include <utility>

#include "store/postgres/push_support.h"
#include "store/push_rules.h"

namespace xb::store::postgres {
namespace {

using push_support::BadRow;
using push_support::DeadlineIn;
using push_support::ExecOnce;

constexpr const char* kReadHash =
    "SELECT secret_hash FROM push_recipient WHERE recipient_id = $1::bytea";

// implements: PUSH-255 (Register: insert, or replace the delivery when the hash matches; the
// subscriptions are untouched; renewed_ns := the store clock, in the statement's transaction)
// PUSH.md 4.1 races: the upsert changes a stored row only when its hash matches, so the loser of
// two concurrent first Registers (it waits for the winner's commit, then meets the conflict) gets
// no row back: kPermissionDenied. The signing key is NULL unless $6.
constexpr const char* kRegister = R"sql(
INSERT INTO push_recipient AS p (recipient_id, secret_hash, channel, delivery, signing_key,
                                 topic_count, renewed_ns)
VALUES ($1::bytea, $2::bytea, $3::int4, $4::text, CASE WHEN $6::bool THEN $5::bytea END, 0,
        )sql" XB_PG_CLOCK_NS R"sql()
ON CONFLICT (recipient_id) DO UPDATE SET
  channel = EXCLUDED.channel, delivery = EXCLUDED.delivery, signing_key = EXCLUDED.signing_key,
  renewed_ns = EXCLUDED.renewed_ns
WHERE p.secret_hash = EXCLUDED.secret_hash
RETURNING p.topic_count::int8, p.channel::int4, p.renewed_ns)sql";

// implements: PUSH-207 (one delete matching id and hash; subscriptions cascade). Both EXISTS read
// the statement's snapshot, taken before the delete: a stored id with another hash is seen.
constexpr const char* kUnregister = R"sql(
WITH d AS (
  DELETE FROM push_recipient WHERE recipient_id = $1::bytea AND secret_hash = $2::bytea
  RETURNING 1)
SELECT EXISTS (SELECT 1 FROM d),
       EXISTS (SELECT 1 FROM push_recipient WHERE recipient_id = $1::bytea))sql";

// PUSH.md 4.4 step 1: the row lock serializes every change of this recipient's subscriptions
// (and the dead and expired deletions, which delete the row).
constexpr const char* kLockRecipient = R"sql(
SELECT secret_hash, topic_count::int8, channel::int4 FROM push_recipient
WHERE recipient_id = $1::bytea FOR UPDATE)sql";

constexpr const char* kReadBoundary =
    "SELECT closed_sequence_id FROM allocation_boundary WHERE singleton";

constexpr const char* kRemove = R"sql(
WITH d AS (
  DELETE FROM push_subscription WHERE recipient_id = $1::bytea AND topic = ANY ($2::bytea[])
  RETURNING 1)
SELECT count(*)::int8 FROM d)sql";

// implements: PUSH-216 (a new topic starts at B, $8; a stored one keeps since_sequence_id and
// takes the new key window and flag). `existing` reads the snapshot before the upsert, so
// inserted = upserted - existing (the row lock keeps the set stable in between).
constexpr const char* kUpsert = R"sql(
WITH existing AS (
  SELECT count(*)::int8 AS n FROM push_subscription
  WHERE recipient_id = $1::bytea AND topic = ANY ($2::bytea[])),
up AS (
  INSERT INTO push_subscription AS s (recipient_id, topic, since_sequence_id, hmac_epoch_base,
                                      hmac_key_0, hmac_key_1, hmac_key_2, include_commits)
  SELECT $1::bytea, a.topic, $8::int8, a.base, a.k0, a.k1, a.k2, a.inc
  FROM unnest($2::bytea[], $3::int8[], $4::bytea[], $5::bytea[], $6::bytea[], $7::bool[])
    AS a(topic, base, k0, k1, k2, inc)
  ON CONFLICT (recipient_id, topic) DO UPDATE SET
    hmac_epoch_base = EXCLUDED.hmac_epoch_base, hmac_key_0 = EXCLUDED.hmac_key_0,
    hmac_key_1 = EXCLUDED.hmac_key_1, hmac_key_2 = EXCLUDED.hmac_key_2,
    include_commits = EXCLUDED.include_commits
  RETURNING 1)
SELECT (SELECT count(*)::int8 FROM up) - (SELECT n FROM existing))sql";

constexpr const char* kRenew = R"sql(
UPDATE push_recipient SET topic_count = $2::int4, renewed_ns = )sql" XB_PG_CLOCK_NS R"sql(
WHERE recipient_id = $1::bytea RETURNING renewed_ns)sql";

// The add columns of kUpsert ($2..$7), one array per column; no keys: NULL epoch base and slots.
void BindAdds(Params& params, const std::vector<SubscriptionAdd>& adds) {
  std::vector<std::string_view> topics;
  std::vector<std::optional<int64_t>> bases;
  std::vector<std::optional<std::string_view>> keys[3];
  std::vector<bool> include_commits;
  for (const SubscriptionAdd& add : adds) {
    topics.push_back(add.topic);
    bases.push_back(add.hmac_keys.empty() ? std::nullopt
                                          : std::optional<int64_t>(add.hmac_epoch_base));
    for (size_t slot = 0; slot < 3; ++slot) {
      keys[slot].push_back(slot < add.hmac_keys.size()
                               ? std::optional<std::string_view>(add.hmac_keys[slot])
                               : std::nullopt);
    }
    include_commits.push_back(add.include_commits);
  }
  params.ByteaArray(topics).NullableInt8Array(bases);
  for (const auto& slot : keys) {
    params.NullableByteaArray(slot);
  }
  params.BoolArray(include_commits);
}

// One transaction on a leased primary connection: BEGIN on construction (Begin), ROLLBACK unless
// committed, closing a connection that cannot roll back (so the release hook never counts it).
class Transaction {
 public:
  Transaction(Connection& conn, int timeout_ms) : conn_(conn), timeout_ms_(timeout_ms) {}
  ~Transaction() {
    if (!conn_.usable() || conn_.transaction_status() == PQTRANS_IDLE) {
      return;
    }
    auto r = conn_.ExecScript("push: rollback", "ROLLBACK", DeadlineIn(timeout_ms_));
    if (!r.ok() || conn_.transaction_status() != PQTRANS_IDLE) {
      conn_.CancelAndClose();
    }
  }
  StoreResult<void> Script(std::string_view what, const char* sql) {
    auto r = conn_.ExecScript(what, sql, DeadlineIn(timeout_ms_));
    if (!r.ok()) {
      return r.error().ToStoreError();
    }
    return {};
  }
  StoreResult<PgResult> Exec(std::string_view what, const char* sql, const Params& params) {
    auto r = conn_.Exec(what, sql, params, DeadlineIn(timeout_ms_));
    if (!r.ok()) {
      return r.error().ToStoreError();
    }
    return std::move(r).value();
  }
  // One int8 in one row.
  StoreResult<int64_t> Int8(std::string_view what, const char* sql, const Params& params) {
    XB_TRY(const PgResult rows, Exec(what, sql, params));
    if (rows.rows() != 1 || rows.IsNull(0, 0)) {
      return BadRow(what);
    }
    return rows.Int8(0, 0);
  }

 private:
  Connection& conn_;
  const int timeout_ms_;
};

struct SubscriptionRequest {
  const std::string& recipient_id;
  const Hash& secret_hash;
  const std::vector<SubscriptionAdd>& adds;
  const std::vector<std::string>& removes;
  uint32_t max_topics;
};

// Steps 3 and 4 of PUSH.md 4.4: (removed, inserted).
StoreResult<std::pair<uint64_t, uint64_t>> ApplyChanges(Transaction& txn,
                                                        const SubscriptionRequest& r,
                                                        int64_t boundary) {
  int64_t removed = 0;
  if (!r.removes.empty()) {
    Params params;
    params.Bytea(r.recipient_id).ByteaArray({r.removes.begin(), r.removes.end()});
    XB_TRY(removed, txn.Int8("remove push subscriptions", kRemove, params));
  }
  int64_t inserted = 0;
  if (!r.adds.empty()) {
    Params params;
    params.Bytea(r.recipient_id);
    BindAdds(params, r.adds);
    params.Int8(boundary);
    XB_TRY(inserted, txn.Int8("add push subscriptions", kUpsert, params));
  }
  if (removed < 0 || inserted < 0) {
    return BadRow("update push subscriptions");
  }
  return std::pair<uint64_t, uint64_t>(removed, inserted);
}

// implements: PUSH-216, PUSH-217, PUSH-255 (PUSH.md 4.4 steps 1-7 in one transaction)
StoreResult<PushAnswer<SubscriptionChange>> Update(Connection& conn, int timeout_ms,
                                                   const SubscriptionRequest& r) {
  using Answer = PushAnswer<SubscriptionChange>;
  Transaction txn(conn, timeout_ms);
  XB_TRY_VOID(txn.Script("push: begin", "BEGIN ISOLATION LEVEL READ COMMITTED"));
  // 1. Lock the recipient row; re-check existence and the hash.
  Params id;
  id.Bytea(r.recipient_id);
  XB_TRY(const PgResult stored, txn.Exec("lock push recipient", kLockRecipient, id));
  if (stored.rows() == 0) {
    return Answer{.verdict = PushVerdict::kNotFound};
  }
  if (!SecretHashEquals(stored.Bytes(0, 0), r.secret_hash)) {
    return Answer{.verdict = PushVerdict::kPermissionDenied};
  }
  const int64_t old_count = stored.Int8(0, 1);
  const int32_t channel = stored.Int4(0, 2);
  // 2. The closed allocation boundary B, read in this transaction.
  XB_TRY(const int64_t boundary, txn.Int8("read boundary", kReadBoundary, Params()));
  // 3, 4.
  XB_TRY(const auto changed, ApplyChanges(txn, r, boundary));
  // 5. Replacements do not count; leaving without COMMIT rolls everything back.
  const int64_t count =
      old_count - static_cast<int64_t>(changed.first) + static_cast<int64_t>(changed.second);
  if (count > static_cast<int64_t>(r.max_topics)) {
    return Answer{.verdict = PushVerdict::kTopicLimit};
  }
  // 6.
  Params renew;
  renew.Bytea(r.recipient_id).Int4(static_cast<int32_t>(count));
  XB_TRY(const int64_t renewed_ns, txn.Int8("renew push recipient", kRenew, renew));
  XB_TRY_VOID(txn.Script("push: commit", "COMMIT"));
  // 7.
  return Answer{.verdict = PushVerdict::kOk,
                .value = SubscriptionChange{.state = {.topic_count = static_cast<uint64_t>(count),
                                                      .channel = channel,
                                                      .renewed_ns = renewed_ns},
                                            .added = changed.second,
                                            .removed = changed.first}};
}

}  // namespace

StoreResult<RecipientCheck> PostgresPushStore::CheckRecipient(const std::string& recipient_id,
                                                              const Hash& secret_hash) {
  Params params;
  params.Bytea(recipient_id);
  XB_TRY(const PgResult rows, ExecOnce(primary_, options_.statement_timeout_ms,
                                       "check push recipient", kReadHash, params));
  if (rows.rows() == 0) {
    return RecipientCheck::kAbsent;
  }
  return SecretHashEquals(rows.Bytes(0, 0), secret_hash) ? RecipientCheck::kMatch
                                                         : RecipientCheck::kSecretMismatch;
}

StoreResult<PushAnswer<RecipientState>> PostgresPushStore::RegisterRecipient(
    const PushRecipient& recipient) {
  Params params;
  params.Bytea(recipient.recipient_id)
      .Bytea(HashView(recipient.secret_hash))
      .Int4(recipient.channel)
      .Text(recipient.delivery)
      .Bytea(recipient.signing_key.value_or(""))
      .Bool(recipient.signing_key.has_value());
  XB_TRY(const PgResult rows, ExecOnce(primary_, options_.statement_timeout_ms,
                                       "register push recipient", kRegister, params));
  if (rows.rows() == 0) {
    return PushAnswer<RecipientState>{.verdict = PushVerdict::kPermissionDenied};
  }
  return PushAnswer<RecipientState>{
      .verdict = PushVerdict::kOk,
      .value = RecipientState{.topic_count = static_cast<uint64_t>(rows.Int8(0, 0)),
                              .channel = rows.Int4(0, 1),
                              .renewed_ns = rows.Int8(0, 2)}};
}

StoreResult<PushVerdict> PostgresPushStore::UnregisterRecipient(const std::string& recipient_id,
                                                                const Hash& secret_hash) {
  Params params;
  params.Bytea(recipient_id).Bytea(HashView(secret_hash));
  XB_TRY(const PgResult rows, ExecOnce(primary_, options_.statement_timeout_ms,
                                       "unregister push recipient", kUnregister, params));
  if (rows.rows() != 1) {
    return BadRow("unregister push recipient");
  }
  if (rows.Bool(0, 0)) {
    return PushVerdict::kOk;
  }
  return rows.Bool(0, 1) ? PushVerdict::kPermissionDenied : PushVerdict::kNotFound;
}

StoreResult<PushAnswer<SubscriptionChange>> PostgresPushStore::UpdateSubscriptions(
    const std::string& recipient_id, const Hash& secret_hash,
    const std::vector<SubscriptionAdd>& adds, const std::vector<std::string>& removes,
    uint32_t max_topics) {
  auto lease =
      primary_.Acquire(Clock::now() + std::chrono::milliseconds(options_.statement_timeout_ms));
  if (!lease.ok()) {
    return lease.error().ToStoreError();
  }
  return Update(*lease.value(), options_.statement_timeout_ms,
                SubscriptionRequest{.recipient_id = recipient_id,
                                    .secret_hash = secret_hash,
                                    .adds = adds,
                                    .removes = removes,
                                    .max_topics = max_topics});
}

}  // namespace xb::store::postgres
