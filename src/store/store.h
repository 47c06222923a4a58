// The engine-neutral storage interface (spec/STORE.md section 0). The API layer never sees SQL,
// wire messages never reach an engine, and an engine returns typed errors (StoreError), never
// gRPC statuses; api/ maps them (STORE.md 3.2) and counts xmtp_db_errors_total{kind}.
//
// Threading: every method blocks and is thread-safe. Callers run them on the DB pool
// (store/db_pool.h), never on an I/O thread. Implementations: store/sqlite (embedded default),
// store/postgres (primary + optional streaming replica).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"

namespace xb::store {

using Hash = std::array<uint8_t, 32>;
using Clock = std::chrono::steady_clock;

inline constexpr int64_t kMaxSequenceId = INT64_MAX;

// What API-212 reports for one stored envelope. expiry_ns 0 = never expires (NULL in storage).
struct EnvelopeMeta {
  int64_t sequence_id = 0;
  int64_t server_ns = 0;
  Hash message_hash{};
  std::string topic;
  int64_t expiry_ns = 0;
  bool is_commit_or_proposal = false;
};

struct StoredEnvelope {
  EnvelopeMeta meta;
  std::string payload;  // the backend's canonical ClientEnvelope encoding (API-211)
};

// Retention class of a new row (STORE.md 9.1). kExempt stores a NULL expiry.
enum class RetentionClass : uint8_t { kGroupMessage, kWelcome, kKeyPackage, kExempt };

struct RetentionSeconds {
  uint64_t group_message = 7776000;
  uint64_t welcome = 7776000;
  uint64_t key_package = 7776000;
};

// One change to the identifier projection made by an identity update (STORE.md 2.2).
struct IdentifierChange {
  std::string identifier;  // normalized by kind
  int32_t identifier_kind = 0;
  bool added = true;  // false: revoked
};

// One distinct (topic, hash) of a publish, in order of first appearance in the request.
struct PublishItem {
  std::string topic;
  Hash message_hash{};
  bool is_commit_or_proposal = false;
  std::string payload;
  RetentionClass retention = RetentionClass::kExempt;
  bool push_eligible = false;
  std::optional<Hash> sender_hmac;
  // Identity updates: the identity topic head the update was validated against (API-232) and
  // the projection changes it makes; nullopt for other kinds.
  std::optional<int64_t> identity_validated_head;
  std::vector<IdentifierChange> identity_changes;
  // A validation failure found before the transaction (steps 1-4 of STORE.md 3.1). It fails the
  // publish unless the item turns out to be a duplicate under the locks (API-222).
  std::optional<Status> pending_failure;
};

struct CommitPublishRequest {
  std::vector<PublishItem> items;
  RetentionSeconds retention;
  // API-234, checked under the locks: a new identity update whose topic already holds this many
  // rows fails kAdmission with INVALID_ARGUMENT "identity update rejected: too many entries".
  uint32_t max_identity_entries = 256;
  Clock::time_point deadline;  // publishing.max_publish_duration_ms from the first lock
};

struct CommitPublishResult {
  std::vector<EnvelopeMeta> metas;  // one per item, same order
  std::vector<bool> duplicate;      // per item: already stored (true) or stored now (false)
};

struct TopicCursor {
  std::string topic;
  int64_t after = 0;  // ids strictly greater
};

struct QueryPage {
  std::vector<StoredEnvelope> envelopes;  // ascending id
  bool has_more = false;                  // from the same snapshot (API-240)
};

// Typed errors (STORE.md section 0). `item` names the failing PublishItem for kAdmission.
enum class ErrorKind : uint8_t {
  kTimeout,       // -> DEADLINE_EXCEEDED, db error kind "timeout"
  kPoolTimeout,   // no pooled connection in time (STORE.md 3.2 [design]) -> UNAVAILABLE, "timeout"
  kConnection,    // -> UNAVAILABLE, "connection"
  kInvariant,     // -> INTERNAL, "invariant"
  kStaleHistory,  // identity head moved (API-232) -> ABORTED
  kAdmission,     // a pending failure of a non-duplicate item -> that item's status
  kOverflow,      // expiry does not fit int64 ns (OPS-020) -> INTERNAL
  kOther,         // -> UNAVAILABLE, "other"
};

struct StoreError {
  ErrorKind kind = ErrorKind::kOther;
  std::string message;  // plain words, never request data (OPS-014)
  size_t item = 0;      // kAdmission: index into CommitPublishRequest::items
  Status admission;     // kAdmission: the item's pending failure
};

template <typename T>
using StoreResult = std::variant<T, StoreError>;

class Store {
 public:
  virtual ~Store() = default;

  // The primary store's clock in ns since the Unix epoch (OPS-020).
  virtual StoreResult<int64_t> ClockNs() = 0;

  // Stored metadata per (topic, hash), nullopt where absent. Primary (STORE.md 3.1 step 3).
  virtual StoreResult<std::vector<std::optional<EnvelopeMeta>>> FindDuplicates(
      const std::vector<std::pair<std::string, Hash>>& keys) = 0;

  // Every envelope of one identity topic, ascending, in one snapshot (API-232). Primary.
  virtual StoreResult<std::vector<StoredEnvelope>> History(const std::string& topic) = 0;

  // STORE.md 3.1 steps 5-13: in one transaction, re-check duplicates, check identity heads,
  // resolve admission failures of non-duplicates (lowest item), enforce the identity cap, assign
  // ids in item order, read server_ns once, compute expiries with checked arithmetic, insert,
  // advance watermarks, project identity changes, commit.
  virtual StoreResult<CommitPublishResult> CommitPublish(const CommitPublishRequest& request) = 0;

  // API-240: per topic ids above its cursor; the page is the lowest `limit` candidates overall,
  // each topic a prefix; has_more from the same snapshot. Topics are distinct. Primary.
  virtual StoreResult<QueryPage> Query(const std::vector<TopicCursor>& topics, uint32_t limit) = 0;

  // API-244: the newest envelope per distinct topic that has one, in request order; payload
  // empty unless `with_payload`. The read database (replica when configured).
  virtual StoreResult<std::vector<StoredEnvelope>> Newest(const std::vector<std::string>& topics,
                                                          bool with_payload) = 0;

  // API 3.7: the envelope with that id, nullopt when none is visible. Primary.
  virtual StoreResult<std::optional<StoredEnvelope>> Get(int64_t sequence_id) = 0;
};

}  // namespace xb::store
