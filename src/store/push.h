// The push side of the store (spec/PUSH.md sections 3, 4, 8, 11): recipients and their
// subscriptions for NotificationService, and what the dispatcher reads and writes. Reached through
// Store::push(); both engines implement it.
//
// Privacy (PUSH-254, OPS-014): recipient ids, secrets, tokens, URLs, signing keys, topics and HMAC
// keys never appear in a StoreError message.
//
// Threading: as Store: every method blocks and is thread-safe; callers run them on the DB pool.
// A PushLock is used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace xb::store {

// What a recipient is delivered through (PUSH.md 3.1): channel 1 APNs, 2 FCM, 3 HTTPS webhook.
struct PushRecipient {
  std::string recipient_id;                // 32 bytes
  Hash secret_hash{};                      // SHA-256 of the recipient secret
  int32_t channel = 0;                     // Channel number, 1..3
  std::string delivery;                    // APNs token, FCM token or webhook URL
  std::optional<std::string> signing_key;  // channel 3 only, 16..64 bytes

  bool operator==(const PushRecipient&) const = default;
};

// The RecipientState of a successful call, before the API adds the TTL (PUSH.md 4.2).
struct RecipientState {
  uint64_t topic_count = 0;
  int32_t channel = 0;
  int64_t renewed_ns = 0;  // store clock, set by this call
};

// Admission verdicts the store decides (PUSH.md 4.1 rows 2, 3 and 4g).
enum class PushVerdict : uint8_t {
  kOk,
  kNotFound,          // no recipient with this id: NOT_FOUND
  kPermissionDenied,  // the stored secret hash differs: PERMISSION_DENIED
  kTopicLimit,        // the result would pass limits.max_push_topics: RESOURCE_EXHAUSTED
};

// What the stored secret hash says about a (recipient id, secret hash) pair.
enum class RecipientCheck : uint8_t { kAbsent, kSecretMismatch, kMatch };

// One add of UpdateSubscriptions, already shape-checked (PUSH.md 5.1). `hmac_keys` empty means
// no key window (the epoch base is then not stored).
struct SubscriptionAdd {
  std::string topic;
  int64_t hmac_epoch_base = 0;
  std::vector<std::string> hmac_keys;  // 0..3 keys of 42 bytes, slots 0..2 in order
  bool include_commits = false;
};

struct SubscriptionChange {
  RecipientState state;
  uint64_t added = 0;    // rows newly inserted (replacements excluded)
  uint64_t removed = 0;  // rows deleted by `removes`
};

template <typename T>
struct PushAnswer {
  PushVerdict verdict = PushVerdict::kOk;
  T value{};  // meaningful when verdict == kOk
};

// The dispatcher's window (PUSH.md 8.3): the first up-to-N push-eligible ids in (after, ceiling].
struct PushWindow {
  int64_t first = 0;
  int64_t last = 0;
  uint32_t envelopes = 0;  // 0: no eligible envelope in range (first/last unset)
};

// Keyset position of delivery paging: (sequence_id, recipient_id).
struct DeliveryKey {
  int64_t sequence_id = 0;
  std::string recipient_id;
};

// One delivery (envelope x subscription, joined to the recipient) satisfying PUSH.md 8.3's
// condition: sequence_id > since_sequence_id and (not a commit/proposal or include_commits).
struct PushDelivery {
  int64_t sequence_id = 0;
  int64_t server_ns = 0;
  std::string topic;
  bool is_commit_or_proposal = false;
  std::optional<Hash> sender_hmac;
  // The stored payload, present only when suppression could apply (sender_hmac and a key window
  // are both present); empty otherwise.
  std::string payload;
  PushRecipient recipient;
  std::optional<int64_t> hmac_epoch_base;
  std::array<std::optional<std::string>, 3> hmac_keys;
};

// The dispatcher's dedicated primary connection (PUSH.md 8.1): the connection-scoped lock, the
// liveness query, the cursor, dead and expired recipient deletions. Any error means the holding
// is over: the caller drops this object (closing the connection releases the lock). SQLite has
// one process per database: its lock is always granted.
class PushLock {
 public:
  virtual ~PushLock() = default;
  // pg_try_advisory_lock(0, 3) on this connection: true when now held.
  virtual StoreResult<bool> TryAcquire() = 0;
  // One round trip on this connection (the tick's liveness query).
  virtual StoreResult<bool> Ping() = 0;
  // The persisted cursor (push_cursor.sequence_id).
  virtual StoreResult<int64_t> ReadCursor() = 0;
  // UPDATE push_cursor SET sequence_id = next WHERE sequence_id = last_written AND
  // sequence_id < next: false when no row changed (ownership lost, PUSH.md 8.2 step 2).
  virtual StoreResult<bool> AdvanceCursor(int64_t last_written, int64_t next) = 0;
  // PUSH-234: deletes the recipient only when all five stored values equal `used`; true when a
  // row was deleted.
  virtual StoreResult<bool> DeleteDead(const PushRecipient& used) = 0;
  // PUSH-226: deletes recipients with renewed_ns < store now - ttl (subscriptions cascade);
  // returns how many.
  virtual StoreResult<uint64_t> DeleteExpired(uint64_t ttl_seconds) = 0;
};

class PushStore {
 public:
  virtual ~PushStore() = default;

  // --- NotificationService (primary store, OPS-009) ---

  // PUSH.md 4.1 row 3 before the delivery checks: what the stored hash says.
  virtual StoreResult<RecipientCheck> CheckRecipient(const std::string& recipient_id,
                                                     const Hash& secret_hash) = 0;
  // PUSH.md 4.2 in one transaction: insert, or replace channel/delivery/signing_key when the
  // stored hash matches (subscriptions untouched); renewed_ns := store now. A stored id whose
  // hash differs (also one that appeared concurrently) is kPermissionDenied, nothing changed.
  virtual StoreResult<PushAnswer<RecipientState>> RegisterRecipient(
      const PushRecipient& recipient) = 0;
  // PUSH.md 4.3: one delete matching id and hash. kNotFound when no such id, kPermissionDenied
  // when the id is stored with another hash.
  virtual StoreResult<PushVerdict> UnregisterRecipient(const std::string& recipient_id,
                                                       const Hash& secret_hash) = 0;
  // PUSH.md 4.4 steps 1-7 in one transaction (lock the recipient row, re-check, read the closed
  // boundary B, delete removes, upsert adds with since = B for new rows, count, limit, renew).
  // On any verdict other than kOk nothing changed.
  virtual StoreResult<PushAnswer<SubscriptionChange>> UpdateSubscriptions(
      const std::string& recipient_id, const Hash& secret_hash,
      const std::vector<SubscriptionAdd>& adds, const std::vector<std::string>& removes,
      uint32_t max_topics) = 0;

  // --- The dispatcher (PUSH.md 8) ---

  // A new dedicated primary connection for the lock (PostgreSQL application_name
  // "xmtp-backend push").
  virtual StoreResult<std::unique_ptr<PushLock>> OpenPushLock() = 0;
  // The stored closed allocation boundary (API-203); the read database may answer.
  virtual StoreResult<int64_t> ClosedBoundary() = 0;
  // Whether any push-eligible envelope has sequence_id > `boundary` (PUSH.md 8.2 step 4).
  virtual StoreResult<bool> EligibleAbove(int64_t boundary) = 0;
  // The first up-to-`max_envelopes` push-eligible ids with after < id <= ceiling (PUSH.md 8.3).
  virtual StoreResult<PushWindow> NextPushWindow(int64_t after, int64_t ceiling,
                                                 uint32_t max_envelopes) = 0;
  // Deliveries of the window's envelopes (ids in [window.first, window.last], eligible only), in
  // (sequence_id, recipient_id) order, strictly after `after` when set, at most `limit`.
  virtual StoreResult<std::vector<PushDelivery>> PushDeliveries(
      const PushWindow& window, const std::optional<DeliveryKey>& after, uint32_t limit) = 0;
};

}  // namespace xb::store
