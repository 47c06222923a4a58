#include "api/publish_service.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "api/envelope_codec.h"
#include "api/identity_admission.h"
#include "api/publish_error.h"
#include "api/store_status.h"
#include "rpc/unary.h"
#include "store/commit_publish.h"
#include "validate/canonical.h"
#include "validate/envelope.h"
#include "validate/key_package_validator.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;
using Reason = v1::PublishError::Reason;

namespace {

telemetry::PublishRejectionReason ReasonLabel(Reason reason) {
  switch (reason) {
    case v1::PublishError::REASON_INVALID_KEY_PACKAGE:
      return telemetry::PublishRejectionReason::kInvalidKeyPackage;
    case v1::PublishError::REASON_INVALID_IDENTITY_UPDATE:
      return telemetry::PublishRejectionReason::kInvalidIdentityUpdate;
    case v1::PublishError::REASON_INVALID_SIGNATURE:
      return telemetry::PublishRejectionReason::kInvalidSignature;
    case v1::PublishError::REASON_TOO_LARGE:
      return telemetry::PublishRejectionReason::kTooLarge;
    default:
      return telemetry::PublishRejectionReason::kMalformedPayload;
  }
}

store::RetentionClass RetentionOf(const validate::ParsedEnvelope& e) {
  switch (e.kind) {
    case validate::TopicKind::kGroupMessage:
      return e.is_commit_or_proposal ? store::RetentionClass::kExempt
                                     : store::RetentionClass::kGroupMessage;
    case validate::TopicKind::kWelcome:
      return store::RetentionClass::kWelcome;
    case validate::TopicKind::kKeyPackage:
      return store::RetentionClass::kKeyPackage;
    case validate::TopicKind::kIdentityUpdate:
    case validate::TopicKind::kCommitLog:
      return store::RetentionClass::kExempt;  // OPS-001
  }
  return store::RetentionClass::kExempt;
}

// The lowest-index failure found before the store is consulted.
struct PendingFailure {
  uint32_t index = 0;
  Reason reason = v1::PublishError::REASON_MALFORMED_PAYLOAD;
  std::string message;
};

// The admission seam (API-230): checks beyond parsing that a non-duplicate envelope must pass
// before it is stored — identity-update validation against the inbox's history (IDENT-005).
// Parsing alone admits today. (Key packages are validated by ValidateKeyPackages below, after the
// stored-duplicate lookup and on the CPU pool.)
std::optional<PendingFailure> Admit(const validate::ParsedEnvelope&, uint32_t) {
  return std::nullopt;
}

// A key package of the request awaiting validation: its item and the parse to validate.
struct PendingKeyPackage {
  size_t item = 0;
  validate::ParsedKeyPackage parsed;
};

// The backend's clock for key-package lifetimes (VALIDATION.md 4.3 step 8), whole seconds.
uint64_t NowSeconds() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
  return seconds < 0 ? 0 : static_cast<uint64_t>(seconds);
}

// implements: JOIN-007, JOIN-008, JOIN-004 at admission (STORE.md 3.1 steps 3-4, API-222)
// Key packages that are not already stored are validated on the CPU pool; each failure becomes
// its item's pending failure (REASON_INVALID_KEY_PACKAGE at the item's first position), which the
// store resolves under its locks (a copy committed meanwhile turns it into a duplicate success).
// A stored duplicate is not validated again: a retry of an accepted package succeeds even after
// its lifetime ended. Fails only when the store or the CPU pool is unavailable.
asio::awaitable<Status> ValidateKeyPackages(const ApiContext& ctx,
                                            std::vector<store::PublishItem>& items,
                                            const std::vector<uint32_t>& first_position,
                                            std::vector<PendingKeyPackage> pending) {
  std::vector<std::pair<std::string, store::Hash>> keys;
  keys.reserve(pending.size());
  for (const PendingKeyPackage& p : pending) {
    keys.emplace_back(items[p.item].topic, items[p.item].message_hash);
  }
  auto duplicates_job = [store = ctx.store, keys = std::move(keys)] {
    return store->FindDuplicates(keys);
  };
  auto duplicates = co_await ctx.db->Run(std::move(duplicates_job));
  if (auto* error = std::get_if<store::StoreError>(&duplicates)) {
    co_return StoreErrorStatus(*error, ctx);
  }
  const auto& stored = std::get<std::vector<std::optional<store::EnvelopeMeta>>>(duplicates);
  std::vector<PendingKeyPackage> to_validate;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!stored.at(i).has_value()) {
      to_validate.push_back(std::move(pending[i]));
    }
  }
  if (to_validate.empty()) {
    co_return Status::Ok();
  }
  auto validate_job = [to_validate = std::move(to_validate), now = NowSeconds()] {
    std::vector<std::pair<size_t, Status>> failures;
    for (const PendingKeyPackage& p : to_validate) {
      Status status = validate::ValidateKeyPackage(p.parsed, now);
      if (!status.ok()) {
        failures.emplace_back(p.item, std::move(status));
      }
    }
    return failures;
  };
  auto failures = co_await ctx.cpu->Run(std::move(validate_job));
  if (!failures.has_value()) {
    co_return Unavailable("signature verifier unavailable");
  }
  for (auto& [item, status] : *failures) {
    items[item].pending_failure = PublishRejected(v1::PublishError::REASON_INVALID_KEY_PACKAGE,
                                                  first_position[item], status.message());
  }
  co_return Status::Ok();
}

// A failed publish: every position counts as rejected, the request once by its reason.
Status Reject(const ApiContext& ctx, int positions, Reason reason, std::optional<uint32_t> index,
              std::string message) {
  ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                           static_cast<uint64_t>(positions));
  ctx.metrics->api().publish_rejections.Inc(ReasonLabel(reason));
  return PublishRejected(reason, index, std::move(message));
}

// `ctx` outlives the process's calls; `request` lives in the calling Unary frame. `parent` is the
// rpc.publish span: the publish stage spans of the span catalogue go under it (OPS-019).
asio::awaitable<Result<v1::PublishResponse>> Publish(const ApiContext& ctx,
                                                     const v1::PublishRequest& request,
                                                     telemetry::SpanContext parent) {
  const auto& limits = ctx.limits;
  const int n = request.envelopes_size();
  telemetry::Span parse_span = StartSpan(ctx, telemetry::Operation::kPublishParsePublish, parent);
  parse_span.Set(telemetry::IntAttribute::kEnvelopes, n);

  // Step 1: the request as re-encoded by us (API.md 1.4), a request-level bound: no index.
  if (validate::CanonicalRequestSize(request) > limits.max_request_bytes) {
    parse_span.SetError();
    co_return Reject(ctx, n, v1::PublishError::REASON_TOO_LARGE, std::nullopt,
                     "the publish request is too large");
  }

  // Step 2: parse, bound and collapse, in index order (API.md 3.4 processing order).
  std::vector<store::PublishItem> items;
  std::vector<uint32_t> first_position;  // per item
  std::vector<size_t> item_of(static_cast<size_t>(n), 0);
  std::map<std::pair<std::string, store::Hash>, size_t> item_by_key;
  std::map<std::string, store::Hash> identity_update_by_topic;
  std::set<std::string> distinct_topics;
  std::optional<PendingFailure> failure;
  std::vector<PendingKeyPackage> key_packages;
  std::vector<PendingIdentityUpdate> identity_updates;
  auto fail = [&failure](uint32_t index, Reason reason, std::string message) {
    if (!failure || index < failure->index) {
      failure = PendingFailure{index, reason, std::move(message)};
    }
  };
  for (int i = 0; i < n; ++i) {
    const auto index = static_cast<uint32_t>(i);
    const auto& envelope = request.envelopes(i);
    if (validate::CanonicalSize(envelope) > limits.max_envelope_bytes) {
      fail(index, v1::PublishError::REASON_TOO_LARGE, "an envelope is too large");
      continue;
    }
    auto parsed_or = validate::ParseEnvelope(envelope);
    if (auto* rejection = std::get_if<validate::Rejection>(&parsed_or)) {
      fail(index, rejection->reason, rejection->message);
      continue;
    }
    auto& parsed = std::get<validate::ParsedEnvelope>(parsed_or);
    const auto key = std::make_pair(parsed.topic, parsed.message_hash);
    if (auto it = item_by_key.find(key); it != item_by_key.end()) {
      item_of[index] = it->second;  // API-222: an earlier index in the same request
      continue;
    }
    if (parsed.kind == validate::TopicKind::kIdentityUpdate) {
      // implements: API-233 — reported at the later index.
      auto [it, inserted] = identity_update_by_topic.emplace(parsed.topic, parsed.message_hash);
      if (!inserted) {
        fail(index, v1::PublishError::REASON_INVALID_IDENTITY_UPDATE,
             "two different identity updates for one inbox in one request");
        continue;
      }
    }
    distinct_topics.insert(parsed.topic);
    if (distinct_topics.size() > limits.max_publish_topics) {
      parse_span.SetError();
      co_return Reject(ctx, n, v1::PublishError::REASON_TOO_LARGE, std::nullopt,
                       "too many distinct topics in one publish");
    }
    if (auto admission = Admit(parsed, index)) {
      fail(admission->index, admission->reason, admission->message);
      continue;
    }
    store::PublishItem item;
    item.topic = parsed.topic;
    item.message_hash = parsed.message_hash;
    item.is_commit_or_proposal = parsed.is_commit_or_proposal;
    item.retention = RetentionOf(parsed);
    if (envelope.has_group_message()) {
      // Stored verbatim for the push dispatcher (PUSH); never a rejection ground.
      item.push_eligible = envelope.group_message().should_push();
      const auto& hmac = envelope.group_message().sender_hmac();
      if (hmac.size() == 32) {
        store::Hash h;
        std::copy(hmac.begin(), hmac.end(), reinterpret_cast<char*>(h.data()));
        item.sender_hmac = h;
      }
    } else if (envelope.has_welcome_message()) {
      item.push_eligible = true;
    }
    if (parsed.kind == validate::TopicKind::kIdentityUpdate) {
      item.identity_validated_head = 0;  // set below, from the history snapshot
      identity_updates.push_back(
          {.item = items.size(), .update = *std::move(parsed.identity_update)});
    }
    if (parsed.key_package.has_value()) {
      key_packages.push_back({.item = items.size(), .parsed = *std::move(parsed.key_package)});
    }
    item.payload = std::move(parsed.stored_bytes);
    item_of[index] = items.size();
    item_by_key.emplace(key, items.size());
    first_position.push_back(index);
    items.push_back(std::move(item));
  }
  // Key packages (STORE.md 3.1 steps 3-4): stored duplicates skip validation, the rest are
  // validated off the I/O thread. Skipped when an earlier parse failure decides the answer anyway.
  // publish.validate_publish: the signature and history checks of key packages and identity
  // updates (on the CPU pool), up to the commit.
  telemetry::Span validate_span =
      StartSpan(ctx, telemetry::Operation::kPublishValidatePublish, parent);
  if (!key_packages.empty() &&
      (!failure || first_position[key_packages.front().item] < failure->index)) {
    Status validated =
        co_await ValidateKeyPackages(ctx, items, first_position, std::move(key_packages));
    if (!validated.ok()) {
      ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                               static_cast<uint64_t>(n));
      co_return validated;
    }
    // API-223: with a parse failure pending, a lower-index invalid key package decides instead.
    if (failure) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (const auto& pending = items[i].pending_failure) {
          const auto detail = PublishErrorOf(*pending);
          fail(first_position[i],
               detail ? detail->reason() : v1::PublishError::REASON_INVALID_KEY_PACKAGE,
               pending->message());
        }
      }
    }
  }
  // Identity updates (VALIDATION.md 5.10, STORE.md 3.1 steps 3-4): stored duplicates skip
  // validation; the rest are validated against their inbox's whole history in one snapshot, off
  // the I/O thread, and carry that snapshot's head (API-232) and their projection changes.
  if (!identity_updates.empty() &&
      (!failure || first_position[identity_updates.front().item] < failure->index)) {
    Status validated = co_await AdmitIdentityUpdates(
        ctx, items, first_position, std::move(identity_updates), validate_span.context());
    if (!validated.ok()) {
      ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                               static_cast<uint64_t>(n));
      co_return validated;
    }
    // API-223: with a parse failure pending, a lower-index identity failure decides instead; a
    // retryable one there is UNAVAILABLE (VALIDATION.md 1.2 step 5, [open] precedence).
    if (failure) {
      for (size_t i = 0; i < items.size(); ++i) {
        const auto& pending = items[i].pending_failure;
        if (!pending || first_position[i] >= failure->index) {
          continue;
        }
        if (const auto detail = PublishErrorOf(*pending)) {
          fail(first_position[i], detail->reason(), pending->message());
        } else {
          ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                                   static_cast<uint64_t>(n));
          co_return *pending;
        }
      }
    }
  }
  // A parse or bound failure cannot be a stored duplicate: the request fails at the lowest
  // failing index, without touching the store.
  if (failure) {
    parse_span.SetError();
    co_return Reject(ctx, n, failure->reason, failure->index, failure->message);
  }
  parse_span.End();

  if (ctx.before_identity_commit &&
      std::any_of(items.begin(), items.end(), [](const store::PublishItem& i) {
        return !i.identity_changes.empty() || i.identity_validated_head.has_value();
      })) {
    co_await ctx.before_identity_commit();
  }
  validate_span.End();

  store::CommitPublishRequest commit;
  commit.items = std::move(items);
  commit.retention = store::RetentionSeconds{.group_message = ctx.retention.group_message_seconds,
                                             .welcome = ctx.retention.welcome_seconds,
                                             .key_package = ctx.retention.key_package_seconds};
  commit.max_identity_entries = limits.max_identity_entries;
  commit.deadline = store::Clock::now() + std::chrono::milliseconds(ctx.max_publish_duration_ms);
  const auto commit_started = store::Clock::now();
  auto result = co_await store::CommitPublishFrom(*ctx.store, *ctx.db, std::move(commit));
  const auto commit_ended = store::Clock::now();
  if (ctx.tracer != nullptr) {
    // publish.locks: from handing the commit to the store until its locks were held;
    // db.commit_publish: from then until the commit returned (the store reports the boundary).
    const auto* committed = std::get_if<store::CommitPublishResult>(&result);
    if (committed != nullptr && committed->locked_at != store::Clock::time_point{}) {
      ctx.tracer->Start(telemetry::Operation::kPublishLocks, parent, commit_started)
          .EndAt(committed->locked_at);
      ctx.tracer->Start(telemetry::Operation::kDbCommitPublish, parent, committed->locked_at)
          .EndAt(commit_ended);
    } else if (committed == nullptr) {
      telemetry::Span commit_span =
          ctx.tracer->Start(telemetry::Operation::kDbCommitPublish, parent, commit_started);
      commit_span.SetError();
      commit_span.EndAt(commit_ended);
    }
  }
  if (auto* error = std::get_if<store::StoreError>(&result)) {
    if (error->kind == store::ErrorKind::kAdmission &&
        error->admission.code() != StatusCode::kInvalidArgument) {
      // A retryable verifier failure (UNAVAILABLE, API-231) or a history that does not decode
      // (INTERNAL) at the lowest failing index.
      ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                               static_cast<uint64_t>(n));
      co_return error->admission;
    }
    if (error->kind == store::ErrorKind::kAdmission) {
      auto detail = PublishErrorOf(error->admission);
      const Reason reason =
          detail ? detail->reason() : v1::PublishError::REASON_INVALID_IDENTITY_UPDATE;
      co_return Reject(ctx, n, reason, first_position.at(error->item), error->admission.message());
    }
    ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                             static_cast<uint64_t>(n));
    co_return StoreErrorStatus(*error, ctx);
  }

  // implements: API-221 — one entry per request position, duplicates included.
  const auto& committed = std::get<store::CommitPublishResult>(result);
  v1::PublishResponse response;
  for (int i = 0; i < n; ++i) {
    const size_t item = item_of[static_cast<size_t>(i)];
    ToWire(committed.metas.at(item), response.add_envelope_metas());
    const bool stored_here =
        !committed.duplicate.at(item) && first_position[item] == static_cast<uint32_t>(i);
    ctx.metrics->api().publish_envelopes.Inc(stored_here ? telemetry::PublishOutcome::kStored
                                                         : telemetry::PublishOutcome::kDuplicate);
  }
  co_return response;
}

}  // namespace

void AddPublishService(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.backend.v1.PublishService/Publish", rpc::CallKind::kUnary,
             rpc::Unary<v1::PublishRequest, v1::PublishResponse>(
                 [&context](const v1::PublishRequest& request, rpc::Call& call) {
                   return Publish(context, request, call.trace_parent());
                 },
                 context.limits.max_response_bytes));
}

}  // namespace xb::api
