#include "store/sqlite/publish.h"

#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/publish_rules.h"
#include "store/sqlite/reads.h"

namespace xb::store::sqlite {
namespace {

StoreError Error(ErrorKind kind, std::string message) {
  StoreError error;
  error.kind = kind;
  error.message = std::move(message);
  return error;
}

std::string_view HashBytes(const Hash& hash) {
  return std::string_view(reinterpret_cast<const char*>(hash.data()), hash.size());
}

// The identity topic's watermark (its greatest id), 0 when absent (API-232).
StoreResult<int64_t> IdentityHead(Connection& conn, const std::string& topic) {
  StatementUse row =
      conn.Use("SELECT last_sequence_id FROM topic_watermark WHERE topic = ?1", "identity head");
  row.BindBlob(1, topic);
  if (row.Step()) {
    return row.ColumnInt64(0);
  }
  if (row.error()) {
    return *row.error();
  }
  return int64_t{0};
}

StoreResult<int64_t> TopicRowCount(Connection& conn, const std::string& topic) {
  StatementUse row =
      conn.Use("SELECT count(*) FROM envelopes WHERE topic = ?1", "identity history length");
  row.BindBlob(1, topic);
  if (row.Step()) {
    return row.ColumnInt64(0);
  }
  return row.error() ? *row.error() : Error(ErrorKind::kInvariant, "count returned no row");
}

// STORE.md 2.2 projection rules with the update's own id `u`; the guards stop an older update
// undoing newer state.
StoreResult<void> ProjectIdentifier(Connection& conn, const IdentifierChange& change,
                                    std::string_view inbox_id, int64_t u) {
  if (change.added) {
    return conn
        .Use(
            "INSERT INTO identifier_association (identifier, identifier_kind, inbox_id, "
            "association_sequence_id, revocation_sequence_id) VALUES (?1, ?2, ?3, ?4, NULL) "
            "ON CONFLICT (identifier, identifier_kind, inbox_id) DO UPDATE SET "
            "association_sequence_id = excluded.association_sequence_id, "
            "revocation_sequence_id = NULL "
            "WHERE excluded.association_sequence_id > "
            "identifier_association.association_sequence_id "
            "AND (identifier_association.revocation_sequence_id IS NULL OR "
            "excluded.association_sequence_id > identifier_association.revocation_sequence_id)",
            "project added identifier")
        .BindText(1, change.identifier)
        .BindInt64(2, change.identifier_kind)
        .BindBlob(3, inbox_id)
        .BindInt64(4, u)
        .Run();
  }
  return conn
      .Use(
          "UPDATE identifier_association SET revocation_sequence_id = ?4 "
          "WHERE identifier = ?1 AND identifier_kind = ?2 AND inbox_id = ?3 "
          "AND association_sequence_id < ?4 "
          "AND (revocation_sequence_id IS NULL OR revocation_sequence_id < ?4)",
          "project revoked identifier")
      .BindText(1, change.identifier)
      .BindInt64(2, change.identifier_kind)
      .BindBlob(3, inbox_id)
      .BindInt64(4, u)
      .Run();
}

// Step 6: re-check duplicates. The writer's turn serializes us after every earlier commit, so
// a copy committed since the pre-lock lookup is seen here and turns a pending failure into
// success (API-222). An item repeating an earlier item's key follows that item: per item, the
// index of the item it repeats.
StoreResult<std::vector<std::optional<size_t>>> RecheckDuplicates(
    Connection& conn, const std::vector<PublishItem>& items, CommitPublishResult& result) {
  std::vector<std::optional<size_t>> repeat_of(items.size());
  std::map<std::pair<std::string_view, std::string_view>, size_t> first_index;
  for (size_t i = 0; i < items.size(); ++i) {
    const PublishItem& item = items[i];
    auto [it, inserted] = first_index.emplace(
        std::make_pair(std::string_view(item.topic), HashBytes(item.message_hash)), i);
    if (!inserted) {
      repeat_of[i] = it->second;
      continue;
    }
    XB_TRY(std::optional<EnvelopeMeta> meta, LookupStoredMeta(conn, item.topic, item.message_hash));
    if (meta) {
      result.metas[i] = std::move(*meta);
      result.duplicate[i] = true;
    }
  }
  return repeat_of;
}

// Step 7: identity head check (API-232). Final: no other write can commit before we end.
StoreResult<void> CheckIdentityHeads(Connection& conn, const std::vector<PublishItem>& items,
                                     const std::vector<bool>& is_new) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (!is_new[i] || !items[i].identity_validated_head) {
      continue;
    }
    XB_TRY(const int64_t head, IdentityHead(conn, items[i].topic));
    if (head != *items[i].identity_validated_head) {
      return Error(ErrorKind::kStaleHistory, "identity history changed since validation");
    }
  }
  return {};
}

// Step 8: admission of the items that are still new, lowest index first (API-223): a recorded
// validation failure, or the identity cap (API-234), which step 7 proved is measured on the
// history the update was validated against. A duplicate at the cap still succeeds.
StoreResult<void> Admit(Connection& conn, const CommitPublishRequest& request,
                        const std::vector<bool>& is_new) {
  const std::vector<PublishItem>& items = request.items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!is_new[i]) {
      continue;
    }
    StoreError admission = Error(ErrorKind::kAdmission, "publish item failed admission");
    admission.item = i;
    if (items[i].pending_failure) {
      admission.admission = *items[i].pending_failure;
      return admission;
    }
    if (items[i].identity_validated_head) {
      XB_TRY(const int64_t count, TopicRowCount(conn, items[i].topic));
      if (count >= static_cast<int64_t>(request.max_identity_entries)) {
        // The API layer attaches REASON_INVALID_IDENTITY_UPDATE to this INVALID_ARGUMENT.
        admission.admission = InvalidArgument("identity update rejected: too many entries");
        return admission;
      }
    }
  }
  return {};
}

// The greatest new id per topic.
using TopicLast = std::map<std::string_view, int64_t>;

// Step 10's inserts: the new rows with ids first_id.. in item order. Fills their metas; returns
// the greatest new id per topic (step 11's input).
StoreResult<TopicLast> InsertRows(Connection& conn, const std::vector<PublishItem>& items,
                                  const std::vector<bool>& is_new, int64_t first_id,
                                  int64_t server_ns, const std::vector<int64_t>& expiry,
                                  CommitPublishResult& result) {
  int64_t next_id = first_id;
  TopicLast topic_last;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!is_new[i]) {
      continue;
    }
    const PublishItem& item = items[i];
    const int64_t id = next_id++;
    StatementUse insert = conn.Use(
        "INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash, "
        "is_commit_or_proposal, payload, push_eligible, sender_hmac) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        "insert envelope");
    insert.BindInt64(1, id)
        .BindBlob(2, item.topic)
        .BindInt64(3, server_ns)
        .BindOptionalInt64(4, expiry[i] == 0 ? std::nullopt : std::optional<int64_t>(expiry[i]))
        .BindBlob(5, HashBytes(item.message_hash))
        .BindInt64(6, item.is_commit_or_proposal ? 1 : 0)
        .BindBlob(7, item.payload)
        .BindInt64(8, item.push_eligible ? 1 : 0);
    if (item.sender_hmac) {
      insert.BindBlob(9, HashBytes(*item.sender_hmac));
    } else {
      insert.BindNull(9);
    }
    // An unexpected unique violation is an invariant error, never a duplicate (ARC-050).
    XB_TRY_VOID(insert.Run());
    EnvelopeMeta& meta = result.metas[i];
    meta.sequence_id = id;
    meta.server_ns = server_ns;
    meta.message_hash = item.message_hash;
    meta.topic = item.topic;
    meta.expiry_ns = expiry[i];
    meta.is_commit_or_proposal = item.is_commit_or_proposal;
    topic_last[item.topic] = id;  // ids rise in item order
  }
  return topic_last;
}

// Step 11: each inserted topic's watermark must rise (ARC-034).
StoreResult<void> AdvanceWatermarks(Connection& conn, const TopicLast& topic_last) {
  for (const auto& [topic, last] : topic_last) {
    XB_TRY_VOID(conn.Use("INSERT INTO topic_watermark (topic, last_sequence_id) "
                         "VALUES (?1, ?2) ON CONFLICT (topic) DO UPDATE SET "
                         "last_sequence_id = excluded.last_sequence_id "
                         "WHERE excluded.last_sequence_id > topic_watermark.last_sequence_id",
                         "advance watermark")
                    .BindBlob(1, topic)
                    .BindInt64(2, last)
                    .Run());
    if (sqlite3_changes(conn.get()) != 1) {
      return Error(ErrorKind::kInvariant, "a topic watermark did not advance");
    }
  }
  return {};
}

// Step 12: identity projection, in item order, each change under its update's own id.
StoreResult<void> ProjectIdentities(Connection& conn, const std::vector<PublishItem>& items,
                                    const std::vector<bool>& is_new,
                                    const CommitPublishResult& result) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (!is_new[i] || items[i].identity_changes.empty()) {
      continue;
    }
    const std::string& topic = items[i].topic;
    if (!IsInboxTopic(topic)) {
      return Error(ErrorKind::kInvariant, "identifier changes on a non-identity topic");
    }
    const std::string_view inbox_id = std::string_view(topic).substr(1);
    for (const IdentifierChange& change : items[i].identity_changes) {
      XB_TRY_VOID(ProjectIdentifier(conn, change, inbox_id, result.metas[i].sequence_id));
    }
  }
  return {};
}

// Steps 9-12 for the `new_count` new items: ids, expiries, inserts, watermarks, projection, and
// the boundary. Returns the last id stored.
StoreResult<int64_t> StoreNewRows(Connection& conn, const CommitPublishRequest& request,
                                  const std::vector<bool>& is_new, size_t new_count,
                                  int64_t server_ns, CommitPublishResult& result) {
  const std::vector<PublishItem>& items = request.items;
  // Step 9: ids closed + 1 .. closed + n in item order; the boundary is the high-water mark.
  XB_TRY(const int64_t closed, ReadBoundary(conn));
  if (closed < 0 || closed > kMaxSequenceId - static_cast<int64_t>(new_count)) {
    return Error(ErrorKind::kInvariant, "sequence ids exhausted");
  }
  // Step 10: expiries first (checked), then inserts; an overflow stores nothing (OPS-020).
  std::vector<int64_t> expiry(items.size(), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    if (is_new[i]) {
      XB_TRY(expiry[i], ComputeExpiryNs(server_ns, items[i].retention, request.retention));
    }
  }
  XB_TRY(const TopicLast topic_last,
         InsertRows(conn, items, is_new, closed + 1, server_ns, expiry, result));
  XB_TRY_VOID(AdvanceWatermarks(conn, topic_last));
  XB_TRY_VOID(ProjectIdentities(conn, items, is_new, result));

  // The boundary moves to the last id in the same transaction (API-291: it only rises).
  const int64_t last = closed + static_cast<int64_t>(new_count);
  XB_TRY_VOID(conn.Use("UPDATE allocation_boundary SET closed_sequence_id = ?2 "
                       "WHERE singleton = 1 AND closed_sequence_id = ?1",
                       "advance boundary")
                  .BindInt64(1, closed)
                  .BindInt64(2, last)
                  .Run());
  if (sqlite3_changes(conn.get()) != 1) {
    return Error(ErrorKind::kInvariant, "the allocation boundary did not advance");
  }
  return last;
}

}  // namespace

// implements: API-212 (expiry_ns), OPS-020 (publish-time check), STORE.md 9.1
StoreResult<int64_t> ComputeExpiryNs(int64_t server_ns, RetentionClass retention,
                                     const RetentionSeconds& seconds) {
  const std::optional<uint64_t> period = RetentionPeriod(retention, seconds);
  if (!period) {
    return int64_t{0};  // OPS-001: NULL in storage, 0 on the wire, whatever is configured
  }
  const std::optional<int64_t> expiry = CheckedExpiryNs(server_ns, *period);
  if (!expiry) {
    return Error(ErrorKind::kOverflow, "expiry does not fit a signed 64-bit nanosecond count");
  }
  return *expiry;
}

// implements: API-220, API-222, API-232, API-234, API-286, API-287, API-289, STORE.md 3.1
// steps 5-13 and section 8 (publish)
StoreResult<PublishOutcome> CommitPublishTransaction(Connection& conn,
                                                     const CommitPublishRequest& request,
                                                     const std::function<int64_t()>& now_ns) {
  const std::vector<PublishItem>& items = request.items;
  // The progress handler only fires inside longer statements; check the deadline explicitly too.
  if (Clock::now() >= request.deadline) {
    return Error(ErrorKind::kTimeout, "publish deadline passed before the write began");
  }
  WriteTransaction txn(&conn);
  XB_TRY_VOID(txn.Begin());
  // API-212, ARC-035: read once, identical for every row of this publish.
  const int64_t server_ns = now_ns();

  PublishOutcome outcome;
  CommitPublishResult& result = outcome.result;
  result.locked_at = Clock::now();  // the writer lock is held: publish.locks ends here
  result.metas.resize(items.size());
  result.duplicate.assign(items.size(), false);

  XB_TRY(const std::vector<std::optional<size_t>> repeat_of,
         RecheckDuplicates(conn, items, result));
  std::vector<bool> is_new(items.size());
  size_t new_count = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    is_new[i] = !result.duplicate[i] && !repeat_of[i];
    new_count += is_new[i] ? 1 : 0;
  }
  XB_TRY_VOID(CheckIdentityHeads(conn, items, is_new));
  XB_TRY_VOID(Admit(conn, request, is_new));
  if (new_count > 0) {
    XB_TRY(const int64_t last, StoreNewRows(conn, request, is_new, new_count, server_ns, result));
    outcome.committed_through = last;
  }

  if (Clock::now() >= request.deadline) {
    return Error(ErrorKind::kTimeout, "publish deadline passed before commit");
  }
  // Step 13: commit once. Success is answered only after this (API-220).
  XB_TRY_VOID(txn.Commit());
  for (size_t i = 0; i < items.size(); ++i) {
    if (repeat_of[i]) {
      result.metas[i] = result.metas[*repeat_of[i]];
      result.duplicate[i] = true;
    }
  }
  return outcome;
}

}  // namespace xb::store::sqlite
