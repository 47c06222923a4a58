// The dispatcher's side of the embedded engine's push store (PUSH.md 8, 11): the lock (always
// granted: one process per database file), the cursor and recipient deletions through the writer,
// windows and deliveries on a pooled reader.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "store/push_rules.h"
#include "store/sqlite/push.h"
#include "store/sqlite/push_support.h"
#include "store/sqlite/reads.h"

namespace xb::store::sqlite {
namespace {

using push_support::OneRow;
using push_support::OnReader;
using push_support::OnWriter;
using push_support::OptionalBlob;
using push_support::Returned;

class SqlitePushLock final : public PushLock {
 public:
  SqlitePushLock(Writer& writer, ReaderPool& readers, uint32_t statement_timeout_ms,
                 int64_t (*clock_ns)())
      : writer_(writer),
        readers_(readers),
        statement_timeout_ms_(statement_timeout_ms),
        clock_ns_(clock_ns) {}

  StoreResult<bool> TryAcquire() override { return true; }

  StoreResult<bool> Ping() override {
    return OnReader<bool>(readers_, statement_timeout_ms_, [](Connection& conn) {
      StatementUse row = conn.Use("SELECT 1", "push liveness");
      return Returned(row);
    });
  }

  StoreResult<int64_t> ReadCursor() override {
    return OnReader<int64_t>(
        readers_, statement_timeout_ms_, [](Connection& conn) -> StoreResult<int64_t> {
          StatementUse row =
              conn.Use("SELECT sequence_id FROM push_cursor WHERE singleton = 1", "read cursor");
          XB_TRY(const std::optional<int64_t> cursor,
                 OneRow<int64_t>(row, [](const StatementUse& r) { return r.ColumnInt64(0); }));
          if (!cursor) {
            return push_support::Invariant("the push cursor row is missing");
          }
          return *cursor;
        });
  }

  // implements: PUSH.md 8.2 step 2 (compare-and-set; never a lower value)
  StoreResult<bool> AdvanceCursor(int64_t last_written, int64_t next) override {
    return OnWriter<bool>(writer_, statement_timeout_ms_, [&](Connection& conn) {
      StatementUse row = conn.Use(
          "UPDATE push_cursor SET sequence_id = ?2 "
          "WHERE singleton = 1 AND sequence_id = ?1 AND sequence_id < ?2 RETURNING 1",
          "advance cursor");
      row.BindInt64(1, last_written).BindInt64(2, next);
      return Returned(row);
    });
  }

  // implements: PUSH-234 (deleted only while all five stored values are those used; `IS` is
  // SQLite's null-safe equality for the signing key)
  StoreResult<bool> DeleteDead(const PushRecipient& used) override {
    return OnWriter<bool>(writer_, statement_timeout_ms_, [&](Connection& conn) {
      StatementUse row = conn.Use(
          "DELETE FROM push_recipient WHERE recipient_id = ?1 AND channel = ?2 AND delivery = ?3 "
          "AND signing_key IS ?4 AND secret_hash = ?5 RETURNING 1",
          "delete dead recipient");
      row.BindBlob(1, used.recipient_id).BindInt64(2, used.channel).BindText(3, used.delivery);
      if (used.signing_key) {
        row.BindBlob(4, *used.signing_key);
      } else {
        row.BindNull(4);
      }
      row.BindBlob(5, HashView(used.secret_hash));
      return Returned(row);
    });
  }

  // implements: PUSH-226 (renewed_ns < store now - ttl; subscriptions cascade)
  StoreResult<uint64_t> DeleteExpired(uint64_t ttl_seconds) override {
    return OnWriter<uint64_t>(
        writer_, statement_timeout_ms_, [&](Connection& conn) -> StoreResult<uint64_t> {
          const int64_t threshold = ExpiryThresholdNs(clock_ns_(), ttl_seconds);
          XB_TRY_VOID(conn.Use("DELETE FROM push_recipient WHERE renewed_ns < ?1",
                               "delete expired recipients")
                          .BindInt64(1, threshold)
                          .Run());
          return static_cast<uint64_t>(sqlite3_changes64(conn.get()));
        });
  }

 private:
  Writer& writer_;
  ReaderPool& readers_;
  const uint32_t statement_timeout_ms_;
  int64_t (*const clock_ns_)();
};

// implements: PUSH-257 (the delivery condition of PUSH.md 8.3: eligible envelopes of the window,
// each subscription on its topic that started below it, commits only with include_commits; keyset
// paging on (sequence_id, recipient_id); the payload only when suppression could apply)
constexpr const char* kDeliveries = R"sql(
SELECT e.sequence_id, e.server_ns, e.topic, e.is_commit_or_proposal, e.sender_hmac,
       CASE WHEN e.sender_hmac IS NOT NULL AND s.hmac_epoch_base IS NOT NULL
            THEN e.payload END,
       r.recipient_id, r.secret_hash, r.channel, r.delivery, r.signing_key,
       s.hmac_epoch_base, s.hmac_key_0, s.hmac_key_1, s.hmac_key_2
FROM envelopes AS e
JOIN push_subscription AS s ON s.topic = e.topic
JOIN push_recipient AS r ON r.recipient_id = s.recipient_id
WHERE e.push_eligible = 1 AND e.sequence_id BETWEEN ?1 AND ?2
  AND e.sequence_id > s.since_sequence_id
  AND (e.is_commit_or_proposal = 0 OR s.include_commits = 1)
  AND (e.sequence_id, s.recipient_id) > (?3, ?4)
ORDER BY e.sequence_id, s.recipient_id
LIMIT ?5)sql";

StoreResult<PushDelivery> DeliveryOf(const StatementUse& r) {
  PushDelivery d;
  d.sequence_id = r.ColumnInt64(0);
  d.server_ns = r.ColumnInt64(1);
  d.topic = r.ColumnBlob(2);
  d.is_commit_or_proposal = r.ColumnInt64(3) != 0;
  if (!r.ColumnIsNull(4)) {
    const std::string_view hmac = r.ColumnBlobView(4);
    if (hmac.size() != d.sender_hmac.emplace().size()) {
      return push_support::Invariant("a stored push row breaks the schema");
    }
    std::copy(hmac.begin(), hmac.end(), reinterpret_cast<char*>(d.sender_hmac->data()));
  }
  d.payload = r.ColumnIsNull(5) ? std::string() : r.ColumnBlob(5);
  d.recipient.recipient_id = r.ColumnBlob(6);
  const std::string_view secret = r.ColumnBlobView(7);
  if (secret.size() != d.recipient.secret_hash.size()) {
    return push_support::Invariant("a stored push row breaks the schema");
  }
  std::copy(secret.begin(), secret.end(), reinterpret_cast<char*>(d.recipient.secret_hash.data()));
  d.recipient.channel = static_cast<int32_t>(r.ColumnInt64(8));
  d.recipient.delivery = r.ColumnText(9);
  d.recipient.signing_key = OptionalBlob(r, 10);
  if (!r.ColumnIsNull(11)) {
    d.hmac_epoch_base = r.ColumnInt64(11);
  }
  for (int slot = 0; slot < 3; ++slot) {
    d.hmac_keys[static_cast<size_t>(slot)] = OptionalBlob(r, 12 + slot);
  }
  return d;
}

}  // namespace

StoreResult<std::unique_ptr<PushLock>> SqlitePushStore::OpenPushLock() {
  return std::unique_ptr<PushLock>(
      std::make_unique<SqlitePushLock>(writer_, readers_, statement_timeout_ms_, clock_ns_));
}

StoreResult<int64_t> SqlitePushStore::ClosedBoundary() {
  return OnReader<int64_t>(readers_, statement_timeout_ms_,
                           [](Connection& conn) { return ReadBoundary(conn); });
}

StoreResult<bool> SqlitePushStore::EligibleAbove(int64_t boundary) {
  return OnReader<bool>(readers_, statement_timeout_ms_, [boundary](Connection& conn) {
    // The partial index envelopes_push_eligible answers this (its WHERE is in the query).
    StatementUse row =
        conn.Use("SELECT 1 FROM envelopes WHERE push_eligible = 1 AND sequence_id > ?1 LIMIT 1",
                 "push eligible above");
    row.BindInt64(1, boundary);
    return Returned(row);
  });
}

// implements: PUSH.md 8.3 (window: the first eligible ids in (after, ceiling], never above it)
StoreResult<PushWindow> SqlitePushStore::NextPushWindow(int64_t after, int64_t ceiling,
                                                        uint32_t max_envelopes) {
  return OnReader<PushWindow>(
      readers_, statement_timeout_ms_, [&](Connection& conn) -> StoreResult<PushWindow> {
        StatementUse row = conn.Use(
            "SELECT count(*), min(sequence_id), max(sequence_id) FROM ("
            "SELECT sequence_id FROM envelopes WHERE push_eligible = 1 AND sequence_id > ?1 "
            "AND sequence_id <= ?2 ORDER BY sequence_id LIMIT ?3)",
            "push window");
        row.BindInt64(1, after).BindInt64(2, ceiling).BindInt64(3, max_envelopes);
        XB_TRY(const std::optional<PushWindow> window,
               OneRow<PushWindow>(row, [](const StatementUse& r) {
                 const auto n = static_cast<uint32_t>(r.ColumnInt64(0));
                 return n == 0 ? PushWindow{}
                               : PushWindow{.first = r.ColumnInt64(1),
                                            .last = r.ColumnInt64(2),
                                            .envelopes = n};
               }));
        return window.value_or(PushWindow{});
      });
}

StoreResult<std::vector<PushDelivery>> SqlitePushStore::PushDeliveries(
    const PushWindow& window, const std::optional<DeliveryKey>& after, uint32_t limit) {
  return OnReader<std::vector<PushDelivery>>(
      readers_, statement_timeout_ms_,
      [&](Connection& conn) -> StoreResult<std::vector<PushDelivery>> {
        std::vector<PushDelivery> out;
        if (window.envelopes == 0 || limit == 0) {
          return out;
        }
        StatementUse rows = conn.Use(kDeliveries, "push deliveries");
        // Without a position, (first, empty id) precedes every row of the window.
        rows.BindInt64(1, window.first)
            .BindInt64(2, window.last)
            .BindInt64(3, after ? after->sequence_id : window.first)
            .BindBlob(4, after ? std::string_view(after->recipient_id) : std::string_view())
            .BindInt64(5, limit);
        while (rows.Step()) {
          XB_TRY(PushDelivery delivery, DeliveryOf(rows));
          out.push_back(std::move(delivery));
        }
        if (rows.error()) {
          return *rows.error();
        }
        return out;
      });
}

}  // namespace xb::store::sqlite
