#include "api/identity_admission.h"

#include <map>
#include <optional>
#include <utility>

#include "api/publish_error.h"
#include "api/scw_verifier.h"
#include "api/store_status.h"
#include "validate/identity_validator.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;
using validate::IdentityError;
using validate::IdentityFailure;

namespace {

using Verdicts = std::map<validate::ScwCheck, std::variant<bool, IdentityError>>;

// Step 4 and the verdicts of step 6 for one prepared update: the freshness probes of the new
// update first, then its deferred decoding failure (step 5), then every ERC-6492 call of the log
// (cached where a block is given).
asio::awaitable<std::optional<IdentityError>> ResolveScw(const ApiContext& ctx,
                                                         const validate::PreparedIdentityUpdate& p,
                                                         Verdicts& verdicts,
                                                         const telemetry::SpanContext& parent) {
  if (p.scw_checks.empty() && p.fresh_blocks.empty()) {
    co_return p.decoding_failure;
  }
  if (ctx.scw == nullptr) {
    co_return IdentityError{IdentityFailure::kUnavailable, "signature verifier unavailable"};
  }
  if (!p.fresh_blocks.empty()) {
    if (auto stale = co_await ctx.scw->CheckFreshness(p.fresh_blocks)) {
      co_return stale;
    }
  }
  if (p.decoding_failure) {
    co_return p.decoding_failure;
  }
  for (const validate::ScwCheck& check : p.scw_checks) {
    // implements: OPS-019 — a chain verification at publish time is a scw.verify span too
    telemetry::Span span = StartSpan(ctx, telemetry::Operation::kScwVerify, parent);
    auto verdict = co_await ctx.scw->Verify(check);
    if (auto* e = std::get_if<IdentityError>(&verdict)) {
      span.SetError();
      verdicts.emplace(check, *e);
    } else {
      verdicts.emplace(check, std::get<ScwVerdict>(verdict).valid);
    }
  }
  co_return std::nullopt;
}

std::vector<store::IdentifierChange> ToStore(std::vector<validate::ProjectionChange> changes) {
  std::vector<store::IdentifierChange> out;
  out.reserve(changes.size());
  for (auto& c : changes) {
    out.push_back(store::IdentifierChange{.identifier = std::move(c.identifier),
                                          .identifier_kind = c.identifier_kind,
                                          .added = c.added});
  }
  return out;
}

}  // namespace

Status IdentityFailureStatus(const IdentityError& error, uint32_t index) {
  switch (error.kind) {
    case IdentityFailure::kMalformed:
      return PublishRejected(v1::PublishError::REASON_MALFORMED_PAYLOAD, index, error.message);
    case IdentityFailure::kInvalidSignature:
      return PublishRejected(v1::PublishError::REASON_INVALID_SIGNATURE, index, error.message);
    case IdentityFailure::kInvalidUpdate:
      return PublishRejected(v1::PublishError::REASON_INVALID_IDENTITY_UPDATE, index,
                             error.message);
    case IdentityFailure::kTooLarge:
      return PublishRejected(v1::PublishError::REASON_TOO_LARGE, index, error.message);
    case IdentityFailure::kUnavailable:
      // implements: API-231 — a verifier failure is never a verdict
      return Unavailable("signature verifier unavailable");
    case IdentityFailure::kInternal:
      break;
  }
  return Internal(error.message);
}

namespace {

// Steps 1-6 for one update that is not a stored duplicate: reads its inbox's history, validates
// on the CPU pool with the ERC-6492 verdicts it needs, then sets the item's validated head and
// changes, or its pending failure. Non-OK only when the store read fails or the CPU pool refuses.
// `item` is an element of the caller's items, which outlive this call. Suspends.
asio::awaitable<Status> AdmitOne(const ApiContext& ctx, store::PublishItem& item, uint32_t index,
                                 xmtp::identity::associations::IdentityUpdate update,
                                 validate::IdentityLimits limits, telemetry::SpanContext parent) {
  // Step 1: the whole identity topic in one snapshot; its last id is the validated head.
  auto history_job = [store = ctx.store, topic = item.topic] { return store->History(topic); };
  auto history = co_await ctx.db->Run(std::move(history_job));
  if (!history.ok()) {
    co_return StoreErrorStatus(history.error(), ctx);
  }
  auto& rows = history.value();
  item.identity_validated_head = rows.empty() ? 0 : rows.back().meta.sequence_id;
  std::vector<std::string> payloads;
  payloads.reserve(rows.size());
  for (auto& row : rows) {
    payloads.push_back(std::move(row.payload));
  }

  auto prepare_job = [payloads = std::move(payloads), update = std::move(update), limits] {
    return validate::PrepareIdentityUpdate(payloads, update, limits);
  };
  auto prepared_or = co_await ctx.cpu->Run(std::move(prepare_job));
  if (!prepared_or.has_value()) {
    co_return Unavailable("signature verifier unavailable");
  }
  if (auto* e = std::get_if<IdentityError>(&*prepared_or)) {
    item.pending_failure = IdentityFailureStatus(*e, index);
    co_return Status::Ok();
  }
  auto prepared = std::get<validate::PreparedIdentityUpdate>(std::move(*prepared_or));

  Verdicts verdicts;
  if (auto e = co_await ResolveScw(ctx, prepared, verdicts, parent)) {
    item.pending_failure = IdentityFailureStatus(*e, index);
    co_return Status::Ok();
  }
  auto finish_job = [prepared = std::move(prepared), verdicts = std::move(verdicts)] {
    const validate::ScwVerdictFn lookup =
        [&verdicts](const validate::ScwCheck& c) -> std::variant<bool, IdentityError> {
      auto it = verdicts.find(c);
      if (it == verdicts.end()) {
        return IdentityError{IdentityFailure::kUnavailable, "signature verifier unavailable"};
      }
      return it->second;
    };
    return validate::FinishIdentityUpdate(prepared, lookup);
  };
  auto outcome = co_await ctx.cpu->Run(std::move(finish_job));
  if (!outcome.has_value()) {
    co_return Unavailable("signature verifier unavailable");
  }
  if (auto* e = std::get_if<IdentityError>(&*outcome)) {
    item.pending_failure = IdentityFailureStatus(*e, index);
    co_return Status::Ok();
  }
  item.identity_changes = ToStore(std::move(std::get<validate::IdentityOutcome>(*outcome).changes));
  co_return Status::Ok();
}

}  // namespace

// implements: IDENT-005, API-232, API-234 (VALIDATION.md 5.10)
asio::awaitable<Status> AdmitIdentityUpdates(const ApiContext& ctx,
                                             std::vector<store::PublishItem>& items,
                                             const std::vector<uint32_t>& first_position,
                                             std::vector<PendingIdentityUpdate> pending,
                                             telemetry::SpanContext parent) {
  std::vector<std::pair<std::string, store::Hash>> keys;
  keys.reserve(pending.size());
  for (const PendingIdentityUpdate& p : pending) {
    keys.emplace_back(items[p.item].topic, items[p.item].message_hash);
  }
  auto duplicates_job = [store = ctx.store, keys = std::move(keys)] {
    return store->FindDuplicates(keys);
  };
  auto duplicates = co_await ctx.db->Run(std::move(duplicates_job));
  if (!duplicates.ok()) {
    co_return StoreErrorStatus(duplicates.error(), ctx);
  }
  const auto stored = duplicates.value();
  const validate::IdentityLimits limits{.max_identity_entries = ctx.limits.max_identity_entries,
                                        .max_scw_signatures = ctx.limits.max_scw_signatures};

  for (size_t i = 0; i < pending.size(); ++i) {
    store::PublishItem& item = items[pending[i].item];
    if (stored.at(i).has_value()) {
      item.identity_validated_head = 0;  // API-222: a duplicate skips every check
      continue;
    }
    Status admitted = co_await AdmitOne(ctx, item, first_position[pending[i].item],
                                        std::move(pending[i].update), limits, parent);
    if (!admitted.ok()) {
      co_return admitted;
    }
  }
  co_return Status::Ok();
}

}  // namespace xb::api
