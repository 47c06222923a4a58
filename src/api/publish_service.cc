#include "api/publish_service.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "api/envelope_codec.h"
#include "api/identity_admission.h"
#include "api/publish_error.h"
#include "api/publish_parse.h"
#include "api/store_status.h"
#include "base/thread_priority.h"
#include "rpc/unary.h"
#include "store/commit_publish.h"
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
  if (!duplicates.ok()) {
    co_return StoreErrorStatus(duplicates.error(), ctx);
  }
  const auto& stored = duplicates.value();
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
      OfferPoolThreadTurn();  // a batch of signature checks takes turns with the I/O threads
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

// A failed publish: every position counts as rejected; the request answers `status`.
Status RejectAll(const ApiContext& ctx, int positions, Status status) {
  ctx.metrics->api().publish_envelopes.Add(telemetry::PublishOutcome::kRejected,
                                           static_cast<uint64_t>(positions));
  return status;
}

// A failed publish with a PublishError detail: RejectAll, and the request counted once by its
// reason.
Status Reject(const ApiContext& ctx, int positions, Reason reason, std::optional<uint32_t> index,
              std::string message) {
  ctx.metrics->api().publish_rejections.Inc(ReasonLabel(reason));
  return RejectAll(ctx, positions, PublishRejected(reason, index, std::move(message)));
}

// Keeps the failure at the lowest request index (API-223).
void LowerFailure(std::optional<PendingFailure>& failure, uint32_t index, Reason reason,
                  std::string message) {
  if (!failure || index < failure->index) {
    failure = PendingFailure{index, reason, std::move(message)};
  }
}

// Requests larger than this are read on the CPU pool, not on the I/O thread (issue 28).
constexpr size_t kParseOnPoolBytes = 64 * 1024;

// Steps 1-2 of the publish (publish_parse.h), off the I/O thread for a large request. nullopt when
// the CPU pool is full.
asio::awaitable<std::optional<ParsedPublish>> ReadPublish(const ApiContext& ctx,
                                                          std::string request) {
  if (request.size() <= kParseOnPoolBytes) {
    co_return ParsePublish(request, ctx.limits);
  }
  auto job = [request = std::move(request), limits = ctx.limits] {
    return ParsePublish(request, limits);
  };
  co_return co_await ctx.cpu->Run(std::move(job));
}

// The validation stage (STORE.md 3.1 steps 3-4) of a parsed publish: key packages, then identity
// updates, each skipped when an earlier parse failure decides the answer anyway. Stored
// duplicates skip validation; the rest are validated off the I/O thread and carry their pending
// failures to the store, or lower read.failure (API-223). A non-OK status ends the publish (its
// positions already counted as rejected). `parent`: the publish.validate_publish span.
asio::awaitable<Status> ValidatePublish(const ApiContext& ctx, ParsedPublish& read,
                                        telemetry::SpanContext parent) {
  const int n = read.positions;
  std::vector<store::PublishItem>& items = read.items;
  const std::vector<uint32_t>& first_position = read.first_position;
  std::optional<PendingFailure>& failure = read.failure;
  if (!read.key_packages.empty() &&
      (!failure || first_position[read.key_packages.front().item] < failure->index)) {
    Status validated =
        co_await ValidateKeyPackages(ctx, items, first_position, std::move(read.key_packages));
    if (!validated.ok()) {
      co_return RejectAll(ctx, n, std::move(validated));
    }
    // API-223: with a parse failure pending, a lower-index invalid key package decides instead.
    if (failure) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (const auto& pending = items[i].pending_failure) {
          const auto detail = PublishErrorOf(*pending);
          LowerFailure(failure, first_position[i],
                       detail ? detail->reason() : v1::PublishError::REASON_INVALID_KEY_PACKAGE,
                       pending->message());
        }
      }
    }
  }
  // Identity updates (VALIDATION.md 5.10): validated against their inbox's whole history in one
  // snapshot, and carry that snapshot's head (API-232) and their projection changes.
  if (!read.identity_updates.empty() &&
      (!failure || first_position[read.identity_updates.front().item] < failure->index)) {
    Status validated = co_await AdmitIdentityUpdates(ctx, items, first_position,
                                                     std::move(read.identity_updates), parent);
    if (!validated.ok()) {
      co_return RejectAll(ctx, n, std::move(validated));
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
          LowerFailure(failure, first_position[i], detail->reason(), pending->message());
        } else {
          co_return RejectAll(ctx, n, *pending);
        }
      }
    }
  }
  co_return Status::Ok();
}

// Hands `items` to the store and records the publish.locks and db.commit_publish spans under
// `parent` (the store reports when its locks were held).
asio::awaitable<store::StoreResult<store::CommitPublishResult>> CommitItems(
    const ApiContext& ctx, std::vector<store::PublishItem> items, telemetry::SpanContext parent) {
  store::CommitPublishRequest commit;
  commit.items = std::move(items);
  commit.retention = store::RetentionSeconds{.group_message = ctx.retention.group_message_seconds,
                                             .welcome = ctx.retention.welcome_seconds,
                                             .key_package = ctx.retention.key_package_seconds};
  commit.max_identity_entries = ctx.limits.max_identity_entries;
  commit.deadline = store::Clock::now() + std::chrono::milliseconds(ctx.max_publish_duration_ms);
  const auto commit_started = store::Clock::now();
  auto result = co_await store::CommitPublishFrom(*ctx.store, *ctx.db, std::move(commit));
  const auto commit_ended = store::Clock::now();
  if (ctx.tracer != nullptr) {
    // publish.locks: from handing the commit to the store until its locks were held;
    // db.commit_publish: from then until the commit returned (the store reports the boundary).
    const store::CommitPublishResult* committed = result.ok() ? &result.value() : nullptr;
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
  co_return result;
}

// The answer to a publish of `n` positions whose commit failed with `error`.
Status CommitFailureStatus(const ApiContext& ctx, int n, const store::StoreError& error,
                           const std::vector<uint32_t>& first_position) {
  if (error.kind != store::ErrorKind::kAdmission) {
    return RejectAll(ctx, n, StoreErrorStatus(error, ctx));
  }
  if (error.admission.code() != StatusCode::kInvalidArgument) {
    // A retryable verifier failure (UNAVAILABLE, API-231) or a history that does not decode
    // (INTERNAL) at the lowest failing index.
    return RejectAll(ctx, n, error.admission);
  }
  auto detail = PublishErrorOf(error.admission);
  const Reason reason =
      detail ? detail->reason() : v1::PublishError::REASON_INVALID_IDENTITY_UPDATE;
  return Reject(ctx, n, reason, first_position.at(error.item), error.admission.message());
}

// implements: API-221 — one entry per request position, duplicates included.
v1::PublishResponse Respond(const ApiContext& ctx, const store::CommitPublishResult& committed,
                            const std::vector<size_t>& item_of,
                            const std::vector<uint32_t>& first_position) {
  v1::PublishResponse response;
  for (int i = 0; i < static_cast<int>(item_of.size()); ++i) {
    const size_t item = item_of[static_cast<size_t>(i)];
    ToWire(committed.metas.at(item), response.add_envelope_metas());
    const bool stored_here =
        !committed.duplicate.at(item) && first_position[item] == static_cast<uint32_t>(i);
    ctx.metrics->api().publish_envelopes.Inc(stored_here ? telemetry::PublishOutcome::kStored
                                                         : telemetry::PublishOutcome::kDuplicate);
  }
  return response;
}

// `ctx` outlives the process's calls. `parent` is the rpc.publish span: the publish stage spans of
// the span catalogue go under it (OPS-019).
asio::awaitable<Result<v1::PublishResponse>> Publish(const ApiContext& ctx, std::string request,
                                                     PublishOrigin origin) {
  const telemetry::SpanContext parent = origin.parent;
  telemetry::Span parse_span = StartSpan(ctx, telemetry::Operation::kPublishParsePublish, parent);
  std::optional<ParsedPublish> read = co_await ReadPublish(ctx, std::move(request));
  if (!read) {
    parse_span.SetError();
    co_return Unavailable("the server is busy; retry later");
  }
  const int n = read->positions;
  parse_span.Set(telemetry::IntAttribute::kEnvelopes, n);
  if (read->rejected) {
    parse_span.SetError();
    co_return *read->rejected;
  }
  // implements: issue 32 (quotas) — charged per envelope once they are counted, before the
  // validation they would cost; a refused request stores nothing.
  if (ctx.quotas != nullptr) {
    if (Status charged = ctx.quotas->ChargePublish(origin.caller, static_cast<uint32_t>(n));
        !charged.ok()) {
      parse_span.SetError();
      co_return RejectAll(ctx, n, std::move(charged));
    }
  }
  if (read->too_large) {
    parse_span.SetError();
    co_return Reject(ctx, n, v1::PublishError::REASON_TOO_LARGE, std::nullopt, *read->too_large);
  }
  // publish.validate_publish: the signature and history checks of key packages and identity
  // updates (on the CPU pool), up to the commit.
  telemetry::Span validate_span =
      StartSpan(ctx, telemetry::Operation::kPublishValidatePublish, parent);
  XB_RETURN_IF_ERROR_CO(co_await ValidatePublish(ctx, *read, validate_span.context()));
  // A parse or bound failure cannot be a stored duplicate: the request fails at the lowest
  // failing index, without touching the store.
  if (const std::optional<PendingFailure>& failure = read->failure) {
    parse_span.SetError();
    co_return Reject(ctx, n, failure->reason, failure->index, failure->message);
  }
  parse_span.End();

  std::vector<store::PublishItem>& items = read->items;
  if (ctx.before_identity_commit &&
      std::any_of(items.begin(), items.end(), [](const store::PublishItem& i) {
        return !i.identity_changes.empty() || i.identity_validated_head.has_value();
      })) {
    co_await ctx.before_identity_commit();
  }
  validate_span.End();

  auto result = co_await CommitItems(ctx, std::move(items), parent);
  if (!result.ok()) {
    co_return CommitFailureStatus(ctx, n, result.error(), read->first_position);
  }
  co_return Respond(ctx, result.value(), read->item_of, read->first_position);
}

}  // namespace

PublishOrigin OriginOf(const ApiContext& ctx, const rpc::Call& call) {
  return PublishOrigin{
      .parent = call.trace_parent(),
      .caller = ctx.quotas != nullptr ? ctx.quotas->CallerOf(call) : QuotaCaller{},
  };
}

asio::awaitable<Result<v1::PublishResponse>> PublishEncoded(const ApiContext& ctx,
                                                            std::string request,
                                                            PublishOrigin origin) {
  return Publish(ctx, std::move(request), std::move(origin));
}

void AddPublishService(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.backend.v1.PublishService/Publish", rpc::CallKind::kUnary,
             rpc::UnaryBytes<v1::PublishResponse>(
                 [&context](std::string request, rpc::Call& call) {
                   return Publish(context, std::move(request), OriginOf(context, call));
                 },
                 context.limits.max_response_bytes));
}

}  // namespace xb::api
