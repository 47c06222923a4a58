#include "store/sqlite/push.h"

#include <chrono>
#include <utility>

#include "store/push_rules.h"
#include "store/sqlite/push_support.h"
#include "store/sqlite/reads.h"

namespace xb::store::sqlite {
namespace {

using push_support::OneRow;
using push_support::OnReader;
using push_support::OnWriter;
using push_support::Returned;

StatementUse& BindOptionalBlob(StatementUse& use, int index,
                               const std::optional<std::string>& bytes) {
  return bytes ? use.BindBlob(index, *bytes) : use.BindNull(index);
}

// The stored hash and count of a recipient, in the caller's transaction.
struct StoredRecipient {
  std::string secret_hash;
  int64_t topic_count = 0;
  int32_t channel = 0;
};

StoreResult<std::optional<StoredRecipient>> ReadRecipient(Connection& conn,
                                                          const std::string& recipient_id) {
  StatementUse row = conn.Use(
      "SELECT secret_hash, topic_count, channel FROM push_recipient WHERE recipient_id = ?1",
      "read push recipient");
  row.BindBlob(1, recipient_id);
  return OneRow<StoredRecipient>(row, [](const StatementUse& r) {
    return StoredRecipient{.secret_hash = r.ColumnBlob(0),
                           .topic_count = r.ColumnInt64(1),
                           .channel = static_cast<int32_t>(r.ColumnInt64(2))};
  });
}

// implements: PUSH-255 (Register: insert, or replace the delivery when the hash matches; the
// subscriptions are untouched; renewed_ns := the store clock, in the transaction)
// PUSH.md 4.1 races: the upsert changes a stored row only when its hash matches, so the loser of
// two concurrent first Registers gets no row back: kPermissionDenied.
constexpr const char* kRegister = R"sql(
INSERT INTO push_recipient (recipient_id, secret_hash, channel, delivery, signing_key,
                            topic_count, renewed_ns)
VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)
ON CONFLICT (recipient_id) DO UPDATE SET
  channel = excluded.channel, delivery = excluded.delivery, signing_key = excluded.signing_key,
  renewed_ns = excluded.renewed_ns
WHERE push_recipient.secret_hash = excluded.secret_hash
RETURNING topic_count, channel, renewed_ns)sql";

StoreResult<PushAnswer<RecipientState>> Register(Connection& conn, const PushRecipient& recipient,
                                                 int64_t (*clock_ns)()) {
  WriteTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  const int64_t now_ns = clock_ns();
  std::optional<RecipientState> state;
  {
    StatementUse row = conn.Use(kRegister, "register push recipient");
    row.BindBlob(1, recipient.recipient_id)
        .BindBlob(2, HashView(recipient.secret_hash))
        .BindInt64(3, recipient.channel)
        .BindText(4, recipient.delivery);
    BindOptionalBlob(row, 5, recipient.signing_key).BindInt64(6, now_ns);
    XB_TRY(state, OneRow<RecipientState>(row, [](const StatementUse& r) {
             return RecipientState{.topic_count = static_cast<uint64_t>(r.ColumnInt64(0)),
                                   .channel = static_cast<int32_t>(r.ColumnInt64(1)),
                                   .renewed_ns = r.ColumnInt64(2)};
           }));
  }
  if (!state) {
    return PushAnswer<RecipientState>{.verdict = PushVerdict::kPermissionDenied};
  }
  XB_TRY_VOID(txn.Commit());
  return PushAnswer<RecipientState>{.verdict = PushVerdict::kOk, .value = *state};
}

// implements: PUSH-207 (one delete matching id and hash; subscriptions cascade)
StoreResult<PushVerdict> Unregister(Connection& conn, const std::string& recipient_id,
                                    const Hash& secret_hash) {
  WriteTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  bool deleted = false;
  {
    StatementUse row = conn.Use(
        "DELETE FROM push_recipient WHERE recipient_id = ?1 AND secret_hash = ?2 RETURNING 1",
        "unregister push recipient");
    row.BindBlob(1, recipient_id).BindBlob(2, HashView(secret_hash));
    XB_TRY(deleted, Returned(row));
  }
  if (!deleted) {
    XB_TRY(std::optional<StoredRecipient> stored, ReadRecipient(conn, recipient_id));
    return stored ? PushVerdict::kPermissionDenied : PushVerdict::kNotFound;
  }
  XB_TRY_VOID(txn.Commit());
  return PushVerdict::kOk;
}

// Step 3 of PUSH.md 4.4: deletes the removes (an absent topic is a no-op); how many were deleted.
StoreResult<uint64_t> DeleteRemoves(Connection& conn, const std::string& recipient_id,
                                    const std::vector<std::string>& removes) {
  uint64_t removed = 0;
  for (const std::string& topic : removes) {
    StatementUse row =
        conn.Use("DELETE FROM push_subscription WHERE recipient_id = ?1 AND topic = ?2 RETURNING 1",
                 "remove push subscription");
    row.BindBlob(1, recipient_id).BindBlob(2, topic);
    XB_TRY(const bool deleted, Returned(row));
    removed += deleted ? 1 : 0;
  }
  return removed;
}

// Binds ?3..?7 of the insert and the replacement: the key window (NULL epoch base without keys).
void BindWindow(StatementUse& use, const SubscriptionAdd& add) {
  if (add.hmac_keys.empty()) {
    use.BindNull(3);
  } else {
    use.BindInt64(3, add.hmac_epoch_base);
  }
  for (size_t slot = 0; slot < 3; ++slot) {
    const int index = 4 + static_cast<int>(slot);
    if (slot < add.hmac_keys.size()) {
      use.BindBlob(index, add.hmac_keys[slot]);
    } else {
      use.BindNull(index);
    }
  }
  use.BindInt64(7, add.include_commits ? 1 : 0);
}

// Step 4 of PUSH.md 4.4: a new topic starts at `boundary`; an existing one keeps its start and
// takes the new key window and flag. How many rows were newly inserted.
// implements: PUSH-216 (since = the boundary read in this transaction, for new rows only)
StoreResult<uint64_t> UpsertAdds(Connection& conn, const std::string& recipient_id,
                                 const std::vector<SubscriptionAdd>& adds, int64_t boundary) {
  uint64_t inserted = 0;
  for (const SubscriptionAdd& add : adds) {
    bool is_new = false;
    {
      StatementUse row = conn.Use(
          "INSERT INTO push_subscription (recipient_id, topic, hmac_epoch_base, hmac_key_0, "
          "hmac_key_1, hmac_key_2, include_commits, since_sequence_id) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
          "ON CONFLICT (recipient_id, topic) DO NOTHING RETURNING 1",
          "add push subscription");
      row.BindBlob(1, recipient_id).BindBlob(2, add.topic).BindInt64(8, boundary);
      BindWindow(row, add);
      XB_TRY(is_new, Returned(row));
    }
    if (is_new) {
      ++inserted;
      continue;
    }
    StatementUse update = conn.Use(
        "UPDATE push_subscription SET hmac_epoch_base = ?3, hmac_key_0 = ?4, hmac_key_1 = ?5, "
        "hmac_key_2 = ?6, include_commits = ?7 WHERE recipient_id = ?1 AND topic = ?2",
        "replace push subscription");
    update.BindBlob(1, recipient_id).BindBlob(2, add.topic);
    BindWindow(update, add);
    XB_TRY_VOID(update.Run());
  }
  return inserted;
}

struct SubscriptionRequest {
  const std::string& recipient_id;
  const Hash& secret_hash;
  const std::vector<SubscriptionAdd>& adds;
  const std::vector<std::string>& removes;
  uint32_t max_topics;
};

// implements: PUSH-216, PUSH-217, PUSH-255 (PUSH.md 4.4 steps 1-7 in one write transaction)
StoreResult<PushAnswer<SubscriptionChange>> Update(Connection& conn, const SubscriptionRequest& r,
                                                   int64_t (*clock_ns)()) {
  using Answer = PushAnswer<SubscriptionChange>;
  // 1. BEGIN IMMEDIATE holds the database's write lock: the recipient row cannot change under us.
  WriteTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  XB_TRY(const std::optional<StoredRecipient> stored, ReadRecipient(conn, r.recipient_id));
  if (!stored) {
    return Answer{.verdict = PushVerdict::kNotFound};
  }
  if (!SecretHashEquals(stored->secret_hash, r.secret_hash)) {
    return Answer{.verdict = PushVerdict::kPermissionDenied};
  }
  // 2. The closed allocation boundary B, in this transaction (the last committed id here).
  XB_TRY(const int64_t boundary, ReadBoundary(conn));
  // 3, 4.
  XB_TRY(const uint64_t removed, DeleteRemoves(conn, r.recipient_id, r.removes));
  XB_TRY(const uint64_t added, UpsertAdds(conn, r.recipient_id, r.adds, boundary));
  // 5. Replacements do not count. Leaving without Commit rolls everything back.
  const int64_t count =
      stored->topic_count - static_cast<int64_t>(removed) + static_cast<int64_t>(added);
  if (count > static_cast<int64_t>(r.max_topics)) {
    return Answer{.verdict = PushVerdict::kTopicLimit};
  }
  // 6.
  const int64_t now_ns = clock_ns();
  StatementUse renew = conn.Use(
      "UPDATE push_recipient SET topic_count = ?2, renewed_ns = ?3 WHERE recipient_id = ?1",
      "renew push recipient");
  renew.BindBlob(1, r.recipient_id).BindInt64(2, count).BindInt64(3, now_ns);
  XB_TRY_VOID(renew.Run());
  XB_TRY_VOID(txn.Commit());
  // 7.
  return Answer{.verdict = PushVerdict::kOk,
                .value = SubscriptionChange{.state = {.topic_count = static_cast<uint64_t>(count),
                                                      .channel = stored->channel,
                                                      .renewed_ns = now_ns},
                                            .added = added,
                                            .removed = removed}};
}

}  // namespace

StoreResult<RecipientCheck> SqlitePushStore::CheckRecipient(const std::string& recipient_id,
                                                            const Hash& secret_hash) {
  return OnReader<RecipientCheck>(
      readers_, statement_timeout_ms_, [&](Connection& conn) -> StoreResult<RecipientCheck> {
        XB_TRY(const std::optional<StoredRecipient> stored, ReadRecipient(conn, recipient_id));
        if (!stored) {
          return RecipientCheck::kAbsent;
        }
        return SecretHashEquals(stored->secret_hash, secret_hash) ? RecipientCheck::kMatch
                                                                  : RecipientCheck::kSecretMismatch;
      });
}

StoreResult<PushAnswer<RecipientState>> SqlitePushStore::RegisterRecipient(
    const PushRecipient& recipient) {
  return OnWriter<PushAnswer<RecipientState>>(
      writer_, statement_timeout_ms_,
      [&](Connection& conn) { return Register(conn, recipient, clock_ns_); });
}

StoreResult<PushVerdict> SqlitePushStore::UnregisterRecipient(const std::string& recipient_id,
                                                              const Hash& secret_hash) {
  return OnWriter<PushVerdict>(writer_, statement_timeout_ms_, [&](Connection& conn) {
    return Unregister(conn, recipient_id, secret_hash);
  });
}

StoreResult<PushAnswer<SubscriptionChange>> SqlitePushStore::UpdateSubscriptions(
    const std::string& recipient_id, const Hash& secret_hash,
    const std::vector<SubscriptionAdd>& adds, const std::vector<std::string>& removes,
    uint32_t max_topics) {
  const SubscriptionRequest request{.recipient_id = recipient_id,
                                    .secret_hash = secret_hash,
                                    .adds = adds,
                                    .removes = removes,
                                    .max_topics = max_topics};
  return OnWriter<PushAnswer<SubscriptionChange>>(
      writer_, statement_timeout_ms_,
      [&](Connection& conn) { return Update(conn, request, clock_ns_); });
}

}  // namespace xb::store::sqlite
