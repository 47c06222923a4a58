#include "store/postgres/publish_transaction.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/postgres/params.h"
#include "store/postgres/publish_sql.h"
#include "store/publish_rules.h"

namespace xb::store::postgres {

namespace sql = publish_sql;

namespace {

// How long past the lifetime the client waits for the server's own timeout before it cancels.
constexpr std::chrono::milliseconds kServerFirst{250};

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

}  // namespace

bool IsIdentityItem(const PublishItem& item) {
  return item.identity_validated_head.has_value() || HasIdentityKind(item.topic);
}

std::optional<StoreError> CheckRequest(const CommitPublishRequest& request) {
  for (const PublishItem& item : request.items) {
    if (item.topic.empty() || item.topic.size() > 128) {
      return Invariant("commit publish: topic length out of range");
    }
    if (!item.identity_changes.empty() && !IsInboxTopic(item.topic)) {
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
    retention_seconds.push_back(RetentionPeriod(item.retention, retention));
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

namespace {

// Binds sql::kStoreNew's parameters for `rows`; false when a retention does not fit int8 (OPS-020).
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

}  // namespace

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
    all.push_back({.sql = sql::kBegin, .params = nullptr});
    all.push_back({.sql = sql::kSetLimits, .params = &limits});
    open_ = true;
  } else if (wanted != local_statement_timeout_ms_) {
    limits.Text(std::to_string(wanted));
    all.push_back({.sql = sql::kSetStatementTimeout, .params = &limits});
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
  round.push_back({.sql = sql::kAllocationBarrier, .params = nullptr});
  round.push_back({.sql = sql::kStoreNew, .params = &params});
  round.push_back({.sql = sql::kCommit, .params = nullptr});
  size_t failed_at = 0;
  auto r = Round("commit publish: store and commit", std::move(round), &failed_at);
  if (!r.ok()) {
    if (failed_at == statement_at && r.error().sqlstate == sql::kNumericOutOfRange) {
      return BatchFailure{.error = Fail(ExpiryOverflow())};
    }
    if (failed_at == statement_at && r.error().sqlstate == sql::kDivisionByZero) {
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
// in their one order, the barrier, sql::kStoreNew, commit)
BatchOutcome PublishTransaction::RunInOneRound(
    const std::vector<const CommitPublishRequest*>& requests) {
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
  auto r = StoreAndCommit({{.sql = sql::kTopicLocks, .params = &lock_params}}, params,
                          rows.topics.size());
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

// The requests' items flattened in request order then item order, with each request's result and
// own failure as the steps find them.
struct PublishTransaction::Batch {
  struct FlatItem {
    size_t request;
    size_t item;
  };

  explicit Batch(const std::vector<const CommitPublishRequest*>& in) : requests(in) {
    first_flat.resize(requests.size());
    results.resize(requests.size());
    request_error.resize(requests.size());
    for (size_t r = 0; r < requests.size(); ++r) {
      first_flat[r] = flat.size();
      results[r].metas.resize(requests[r]->items.size());
      results[r].duplicate.assign(requests[r]->items.size(), false);
      for (size_t i = 0; i < requests[r]->items.size(); ++i) {
        const PublishItem& item = requests[r]->items[i];
        flat.push_back(FlatItem{.request = r, .item = i});
        topics.push_back(item.topic);
        hashes.emplace_back(reinterpret_cast<const char*>(item.message_hash.data()),
                            item.message_hash.size());
        any_identity = any_identity || IsIdentityItem(item);
      }
    }
    history_length.assign(flat.size(), 0);
    copy_of.assign(flat.size(), kNone);
  }

  size_t size() const { return flat.size(); }
  const PublishItem& item_of(size_t f) const {
    return requests[flat[f].request]->items[flat[f].item];
  }
  EnvelopeMeta& meta_of(size_t f) { return results[flat[f].request].metas[flat[f].item]; }
  bool is_duplicate(size_t f) const { return results[flat[f].request].duplicate[flat[f].item]; }
  void MarkDuplicate(size_t f) { results[flat[f].request].duplicate[flat[f].item] = true; }

  bool AnyPendingFailure() const {
    return std::any_of(requests.begin(), requests.end(), [](const CommitPublishRequest* request) {
      return std::any_of(request->items.begin(), request->items.end(),
                         [](const PublishItem& item) { return item.pending_failure.has_value(); });
    });
  }

  // An item an earlier request of this transaction stores takes that row's metadata.
  void AdoptCopies() {
    for (size_t f = 0; f < size(); ++f) {
      if (copy_of[f] != kNone) {
        meta_of(f) = meta_of(copy_of[f]);
        MarkDuplicate(f);
      }
    }
  }

  std::vector<StoreResult<CommitPublishResult>> Outcomes() {
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
  }

  static constexpr size_t kNone = std::numeric_limits<size_t>::max();

  const std::vector<const CommitPublishRequest*>& requests;
  std::vector<FlatItem> flat;
  std::vector<size_t> first_flat;  // flat index of each request's item 0
  std::vector<std::string_view> topics;
  std::vector<std::string_view> hashes;
  bool any_identity = false;
  std::vector<CommitPublishResult> results;              // per request
  std::vector<std::optional<StoreError>> request_error;  // per request
  std::vector<int64_t> history_length;                   // per identity item: rows stored
  std::vector<size_t> copy_of;  // per item: the flat index of the earlier item storing its row
  std::vector<size_t> fresh;    // flat indexes of the rows to store, in item order
};

// implements: STORE.md 3.1 steps 5-13, API-220 (atomic per request), API-222 (idempotent under the
// locks)
BatchOutcome PublishTransaction::Run(const std::vector<const CommitPublishRequest*>& requests) {
  Batch batch(requests);
  if (!batch.any_identity && !batch.AnyPendingFailure()) {
    return RunInOneRound(requests);
  }
  if (std::optional<BatchFailure> failure = LockAndCheck(batch)) {
    return std::move(*failure);
  }
  Admit(batch);
  if (batch.fresh.empty()) {
    Rollback();  // nothing to store: every item was already stored or its request failed
    return batch.Outcomes();
  }
  NewRows rows;
  for (size_t f : batch.fresh) {
    rows.Add(batch.item_of(f), batch.hashes[f], requests[batch.flat[f].request]->retention);
  }
  // Steps 9-13 in one round trip when no new row projects identity changes (the projection needs
  // each row's id on the client): the barrier, sql::kStoreNew over the new rows and the COMMIT.
  if (std::none_of(batch.fresh.begin(), batch.fresh.end(),
                   [&](size_t f) { return !batch.item_of(f).identity_changes.empty(); })) {
    return StoreFresh(batch, rows);
  }
  return StoreAndProject(batch, rows);
}

// Steps 5-7 in one round trip: begin, lock in the one global order (ARC-031: identity, topics
// ascending by key), re-check duplicates, and read the identity heads. READ COMMITTED: the
// duplicate check sees every publish that committed while we waited for the locks, and the
// topic locks keep it true until we commit; the identity lock makes the heads final. The
// barrier comes later, immediately before the first nextval (step 9), so it is held only across
// allocation, insert and commit.
std::optional<BatchFailure> PublishTransaction::LockAndCheck(Batch& batch) {
  std::vector<size_t> identity_items;
  std::vector<std::string_view> identity_topics;
  for (size_t f = 0; f < batch.size(); ++f) {
    if (IsIdentityItem(batch.item_of(f))) {
      identity_items.push_back(f);
      identity_topics.push_back(batch.item_of(f).topic);
    }
  }
  Params lock_params;
  lock_params.ByteaArray(batch.topics);
  Params duplicate_params;
  duplicate_params.ByteaArray(batch.topics).ByteaArray(batch.hashes);
  Params head_params;
  head_params.ByteaArray(identity_topics);
  std::vector<Connection::Statement> round;
  if (batch.any_identity) {
    round.push_back({.sql = sql::kIdentityLock, .params = nullptr});
  }
  round.push_back({.sql = sql::kTopicLocks, .params = &lock_params});
  const size_t duplicates_at = round.size();
  round.push_back({.sql = sql::kFindStored, .params = &duplicate_params});
  const size_t heads_at = round.size();
  if (!identity_items.empty()) {
    round.push_back({.sql = sql::kIdentityHeads, .params = &head_params});
  }
  size_t failed_at = 0;
  auto r = Round("commit publish: locks and duplicate check", std::move(round), &failed_at);
  if (!r.ok()) {
    return BatchFailure{.error = Fail(r.error())};
  }
  // The publish.locks / db.commit_publish span boundary: the locks are held once this round
  // trip has answered.
  const Clock::time_point locked_at = Clock::now();
  for (CommitPublishResult& result : batch.results) {
    result.locked_at = locked_at;
  }
  const std::vector<PgResult>& out = r.value();
  const PgResult& rows = out[duplicates_at];
  for (int row = 0; row < rows.rows(); ++row) {
    const size_t f = static_cast<size_t>(rows.Int8(row, 0) - 1);
    EnvelopeMeta& meta = batch.meta_of(f);
    meta.sequence_id = rows.Int8(row, 1);
    meta.server_ns = rows.Int8(row, 2);
    meta.expiry_ns = rows.IsNull(row, 3) ? 0 : rows.Int8(row, 3);
    meta.is_commit_or_proposal = rows.Bool(row, 4);
    meta.topic = batch.item_of(f).topic;
    meta.message_hash = batch.item_of(f).message_hash;
    batch.MarkDuplicate(f);
  }
  if (identity_items.empty()) {
    return std::nullopt;
  }
  const PgResult& heads = out[heads_at];
  for (int row = 0; row < heads.rows(); ++row) {
    const size_t f = identity_items[static_cast<size_t>(heads.Int8(row, 0) - 1)];
    if (batch.is_duplicate(f)) {
      continue;  // a stored duplicate succeeds whatever the head (API-222)
    }
    const int64_t head = heads.Int8(row, 1);
    batch.history_length[f] = heads.Int8(row, 2);
    // implements: API-232 (one history or start over)
    const auto& validated = batch.item_of(f).identity_validated_head;
    std::optional<StoreError>& request_error = batch.request_error[batch.flat[f].request];
    if (validated && *validated != head && !request_error) {
      request_error = DbError::MakeStoreError(ErrorKind::kStaleHistory,
                                              "identity history changed since validation");
    }
  }
  return std::nullopt;
}

// Step 8, per request in queue order: the lowest failing item that is still not a duplicate
// decides (API-223): its pending validation failure, or the identity cap (API-234). A duplicate
// at the cap still succeeds. An item an earlier request of this transaction stores is a
// duplicate of it, exactly as if that request had committed first.
void PublishTransaction::Admit(Batch& batch) {
  using Key = std::pair<std::string_view, std::string_view>;
  std::map<Key, size_t> stored_here;  // (topic, hash) -> flat index
  for (size_t r = 0; r < batch.requests.size(); ++r) {
    std::optional<StoreError>& request_error = batch.request_error[r];
    if (request_error) {
      continue;
    }
    const std::vector<PublishItem>& items = batch.requests[r]->items;
    for (size_t i = 0; i < items.size() && !request_error; ++i) {
      const size_t f = batch.first_flat[r] + i;
      if (batch.is_duplicate(f) || stored_here.contains(Key{batch.topics[f], batch.hashes[f]})) {
        continue;
      }
      if (items[i].pending_failure) {
        request_error = Admission(i, *items[i].pending_failure);
      } else if (IsIdentityItem(items[i]) &&
                 batch.history_length[f] >=
                     static_cast<int64_t>(batch.requests[r]->max_identity_entries)) {
        request_error = Admission(i, InvalidArgument("identity update rejected: too many entries"));
      }
    }
    if (request_error) {
      continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const size_t f = batch.first_flat[r] + i;
      if (batch.is_duplicate(f)) {
        continue;
      }
      auto [it, inserted] = stored_here.emplace(Key{batch.topics[f], batch.hashes[f]}, f);
      if (inserted) {
        batch.fresh.push_back(f);
      } else {
        batch.copy_of[f] = it->second;
      }
    }
  }
}

BatchOutcome PublishTransaction::StoreFresh(Batch& batch, const NewRows& rows) {
  Params params;
  if (!BindStoreNew(rows, &params)) {
    return BatchFailure{.error = Fail(ExpiryOverflow())};
  }
  auto r = StoreAndCommit({}, params, batch.fresh.size());
  if (!r.ok()) {
    return std::move(r).error();
  }
  const PgResult& stored = r.value();
  for (size_t k = 0; k < batch.fresh.size(); ++k) {
    const int row = static_cast<int>(k);
    const PublishItem& item = batch.item_of(batch.fresh[k]);
    EnvelopeMeta& meta = batch.meta_of(batch.fresh[k]);
    meta.sequence_id = stored.Int8(row, 0);
    meta.server_ns = stored.Int8(row, 1);
    meta.expiry_ns = stored.IsNull(row, 2) ? 0 : stored.Int8(row, 2);
    meta.message_hash = item.message_hash;
    meta.topic = item.topic;
    meta.is_commit_or_proposal = item.is_commit_or_proposal;
  }
  batch.AdoptCopies();
  return batch.Outcomes();
}

BatchOutcome PublishTransaction::StoreAndProject(Batch& batch, const NewRows& rows) {
  std::vector<int64_t> ids;
  int64_t server_ns = 0;
  if (std::optional<BatchFailure> failure = Allocate(batch.fresh.size(), &ids, &server_ns)) {
    return std::move(*failure);
  }
  // Step 10: rows in item order. server_ns is the transaction start, the same for every row, never
  // clamped to an earlier row's time (ARC-035).
  std::vector<std::optional<int64_t>> expiries;
  for (size_t k = 0; k < batch.fresh.size(); ++k) {
    const PublishItem& item = batch.item_of(batch.fresh[k]);
    std::optional<int64_t> expiry;
    if (const std::optional<uint64_t>& seconds = rows.retention_seconds[k]) {
      expiry = CheckedExpiryNs(server_ns, *seconds);
      if (!expiry) {
        return BatchFailure{.error = Fail(ExpiryOverflow())};
      }
    }
    expiries.push_back(expiry);

    EnvelopeMeta& meta = batch.meta_of(batch.fresh[k]);
    meta.sequence_id = ids[k];
    meta.server_ns = server_ns;
    meta.message_hash = item.message_hash;
    meta.topic = item.topic;
    meta.expiry_ns = expiry.value_or(0);
    meta.is_commit_or_proposal = item.is_commit_or_proposal;
  }
  if (std::optional<BatchFailure> failure =
          InsertAndProject(batch, rows, ids, server_ns, expiries)) {
    return std::move(*failure);
  }
  if (std::optional<BatchFailure> failure = CommitRound()) {
    return std::move(*failure);
  }
  batch.AdoptCopies();
  return batch.Outcomes();
}

// Step 9 in one round trip: the allocation barrier, shared, then one id per new item in item
// order (ARC-030).
std::optional<BatchFailure> PublishTransaction::Allocate(size_t count, std::vector<int64_t>* ids,
                                                         int64_t* server_ns) {
  Params params;
  params.Int8(static_cast<int64_t>(count));
  size_t failed_at = 0;
  auto r = Round("commit publish: allocate",
                 {{.sql = sql::kAllocationBarrier, .params = nullptr},
                  {.sql = sql::kAllocate, .params = &params}},
                 &failed_at);
  if (!r.ok()) {
    return BatchFailure{.error = Fail(r.error())};
  }
  const PgResult& rows = r.value()[1];
  if (static_cast<size_t>(rows.rows()) != count) {
    return BatchFailure{
        .error = Fail(Invariant("commit publish: allocation returned the wrong number of ids"))};
  }
  for (int row = 0; row < rows.rows(); ++row) {
    ids->push_back(rows.Int8(row, 0));
  }
  *server_ns = rows.Int8(0, 1);
  // The sequence only increases, so ascending ids are the draw order.
  std::sort(ids->begin(), ids->end());
  return std::nullopt;
}

// Steps 10-12 in one round trip: the rows, every inserted topic's watermark (ARC-034), and the
// identity projection with each update's own id (STORE.md 2.2).
std::optional<BatchFailure> PublishTransaction::InsertAndProject(
    const Batch& batch, const NewRows& rows, const std::vector<int64_t>& ids, int64_t server_ns,
    const std::vector<std::optional<int64_t>>& expiries) {
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
      {.sql = sql::kInsert, .params = &insert_params},
      {.sql = sql::kAdvanceWatermarks, .params = &watermark_params}};
  for (size_t k = 0; k < batch.fresh.size(); ++k) {
    const PublishItem& item = batch.item_of(batch.fresh[k]);
    std::string_view inbox = std::string_view(item.topic).substr(1);
    for (const IdentifierChange& change : item.identity_changes) {
      Params& params = projection_params.emplace_back();
      params.Text(change.identifier).Int4(change.identifier_kind).Bytea(inbox).Int8(ids[k]);
      round.push_back({.sql = change.added ? sql::kAssociate : sql::kRevoke, .params = &params});
    }
  }
  size_t failed_at = 0;
  auto r = Round("commit publish: insert", std::move(round), &failed_at);
  if (!r.ok()) {
    // 23505 included: never mapped to duplicate success (ARC-050)
    return BatchFailure{.error = Fail(r.error())};
  }
  std::set<std::string_view> distinct(rows.topics.begin(), rows.topics.end());
  if (static_cast<size_t>(r.value()[1].rows()) != distinct.size()) {
    return BatchFailure{.error = Fail(WatermarkStuck())};
  }
  return std::nullopt;
}

// Step 13: commit once. A failure here leaves the outcome unknown (ARC-053): no request may run
// again on its own.
std::optional<BatchFailure> PublishTransaction::CommitRound() {
  size_t failed_at = 0;
  auto r = Round("commit publish: commit", {{.sql = sql::kCommit, .params = nullptr}}, &failed_at);
  if (!r.ok()) {
    // failed_at 0: COMMIT was not sent, or the server answered it with an error (and rolled
    // back); anything else (a deadline or a lost connection after sending) is unknown.
    return BatchFailure{.error = Fail(r.error()), .retry_alone = failed_at == 0};
  }
  open_ = false;
  if (r.value()[0].CommandTag() != "COMMIT") {
    return BatchFailure{.error = Fail(Invariant("commit publish: the transaction did not commit")),
                        .retry_alone = false};
  }
  return std::nullopt;
}
}  // namespace xb::store::postgres
