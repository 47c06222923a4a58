#include "api/notification_service.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "api/request_bounds.h"
#include "api/store_status.h"
#include "crypto/sha256.h"
#include "push/destination.h"
#include "push/shape.h"
#include "rpc/unary.h"
#include "store/push.h"
#include "validate/wire_fields.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;

namespace {

// PUSH.md 10: Register's resolution of a webhook host is bounded to 10 s.
constexpr std::chrono::seconds kRegistrationResolveBound{10};
constexpr int64_t kNanosPerSecond = 1000000000;

Status Malformed() { return InvalidArgument("request is malformed"); }
Status NotRegistered() { return NotFound("recipient is not registered"); }
Status SecretNotValid() {
  return Status(StatusCode::kPermissionDenied, "recipient secret is not valid");
}
Status TopicLimit() {
  return Status(StatusCode::kResourceExhausted, "recipient topic limit reached");
}

store::Hash SecretHash(const std::string& secret) {
  const crypto::Sha256Digest digest = crypto::Sha256(secret);
  store::Hash hash;
  std::copy(digest.begin(), digest.end(), hash.begin());
  return hash;
}

uint64_t TtlSeconds(const ApiContext& ctx) {
  return ctx.push ? ctx.push->recipient_ttl_seconds : config::PushConfig{}.recipient_ttl_seconds;
}

// PUSH.md 4.2 step 3: expires_at_ns = renewal time + ttl, INTERNAL when it does not fit int64 ns.
Result<v1::RecipientState> StateOf(const ApiContext& ctx, const store::RecipientState& state) {
  const auto ttl_ns = static_cast<int64_t>(TtlSeconds(ctx)) * kNanosPerSecond;
  int64_t expires_at_ns = 0;
  if (__builtin_add_overflow(state.renewed_ns, ttl_ns, &expires_at_ns)) {
    return Internal("recipient expiry cannot be represented");
  }
  v1::RecipientState out;
  out.set_topic_count(state.topic_count);
  out.set_channel(static_cast<v1::Channel>(state.channel));
  out.set_expires_at_ns(expires_at_ns);
  return out;
}

// PUSH.md 4.1 row 3, and row 2 when `must_exist` (Unregister's and UpdateSubscriptions' rows):
// what the stored secret hash says, on the primary.
asio::awaitable<Status> CheckOwner(const ApiContext& ctx, std::string recipient_id,
                                   store::Hash hash, bool must_exist, rpc::Call& call) {
  auto job = [push = ctx.store->push(), id = std::move(recipient_id), hash] {
    return push->CheckRecipient(id, hash);
  };
  auto stored = co_await ctx.db->Run(std::move(job), call.ended_flag());
  if (!stored.ok()) {
    co_return StoreErrorStatus(stored.error(), ctx);
  }
  if (must_exist && stored.value() == store::RecipientCheck::kAbsent) {
    co_return NotRegistered();
  }
  if (stored.value() == store::RecipientCheck::kSecretMismatch) {
    co_return SecretNotValid();
  }
  co_return Status::Ok();
}

// Rows 4a-4e of Register for the delivery the request names: the stored row, or the row's status.
asio::awaitable<Result<store::PushRecipient>> DeliveryOf(const ApiContext& ctx,
                                                         const v1::RegisterRequest& request) {
  store::PushRecipient recipient;
  switch (request.delivery_case()) {
    case v1::RegisterRequest::kApns:
      recipient.channel = 1;
      recipient.delivery = request.apns().token();
      break;
    case v1::RegisterRequest::kFcm:
      recipient.channel = 2;
      recipient.delivery = request.fcm().token();
      break;
    case v1::RegisterRequest::kHttp:
      recipient.channel = 3;
      recipient.delivery = request.http().url();
      recipient.signing_key = request.http().signing_key();
      break;
    default:
      co_return Malformed();  // 4a
  }
  // implements: PUSH-210 (row 4b: no [push] table, or no block for this channel)
  const bool configured = ctx.push && ((recipient.channel == 1 && ctx.push->apns) ||
                                       (recipient.channel == 2 && ctx.push->fcm) ||
                                       (recipient.channel == 3 && ctx.push->http));
  if (!configured) {
    co_return Status(StatusCode::kFailedPrecondition, "channel is not configured");
  }
  if (recipient.channel == 3) {
    // implements: PUSH-256 (at registration, row 4c)
    push::DestinationRules rules{
        .allowed_domains = ctx.push->http->allowed_domains.value_or(std::vector<std::string>{}),
        .allow_private_addresses = ctx.push->http->allow_private_addresses};
    const auto deadline = std::chrono::steady_clock::now() + kRegistrationResolveBound;
    const bool allowed =
        co_await push::RegistrationAllowed(recipient.delivery, std::move(rules), deadline);
    if (!allowed) {
      co_return InvalidArgument("webhook url is not allowed");
    }
    XB_RETURN_IF_ERROR_CO(push::CheckSigningKey(*recipient.signing_key));  // 4d
  }
  XB_RETURN_IF_ERROR_CO(push::CheckDeliveryText(recipient.delivery));  // 4e
  co_return recipient;
}

// implements: PUSH-253, PUSH-255 (Register)
asio::awaitable<Result<v1::RecipientState>> Register(const ApiContext& ctx,
                                                     const v1::RegisterRequest& request,
                                                     rpc::Call& call) {
  XB_RETURN_IF_ERROR_CO(
      push::CheckRecipientCredentials(request.recipient_id(), request.recipient_secret()));
  const store::Hash hash = SecretHash(request.recipient_secret());
  XB_RETURN_IF_ERROR_CO(co_await CheckOwner(ctx, request.recipient_id(), hash, false, call));
  auto recipient = co_await DeliveryOf(ctx, request);
  if (!recipient.ok()) {
    co_return recipient.status();
  }
  recipient->recipient_id = request.recipient_id();
  recipient->secret_hash = hash;
  auto job = [push = ctx.store->push(), r = std::move(recipient).value()] {
    return push->RegisterRecipient(r);
  };
  auto registered = co_await ctx.db->Run(std::move(job), call.ended_flag());
  if (!registered.ok()) {
    co_return StoreErrorStatus(registered.error(), ctx);
  }
  if (registered->verdict != store::PushVerdict::kOk) {
    co_return SecretNotValid();  // a concurrent first Register with another secret won (4.1)
  }
  auto state = StateOf(ctx, registered->value);
  if (state.ok()) {
    ctx.metrics->push().recipients.Inc(telemetry::PushRecipientAction::kRegistered);
  }
  co_return state;
}

// implements: PUSH-207, PUSH-253 (Unregister)
asio::awaitable<Result<v1::UnregisterResponse>> Unregister(const ApiContext& ctx,
                                                           const v1::UnregisterRequest& request,
                                                           rpc::Call& call) {
  XB_RETURN_IF_ERROR_CO(
      push::CheckRecipientCredentials(request.recipient_id(), request.recipient_secret()));
  auto job = [push = ctx.store->push(), id = request.recipient_id(),
              hash = SecretHash(request.recipient_secret())] {
    return push->UnregisterRecipient(id, hash);
  };
  auto verdict = co_await ctx.db->Run(std::move(job), call.ended_flag());
  if (!verdict.ok()) {
    co_return StoreErrorStatus(verdict.error(), ctx);
  }
  switch (verdict.value()) {
    case store::PushVerdict::kOk:
      ctx.metrics->push().recipients.Inc(telemetry::PushRecipientAction::kUnregistered);
      co_return v1::UnregisterResponse();
    case store::PushVerdict::kNotFound:
      co_return NotRegistered();
    default:
      co_return SecretNotValid();
  }
}

// The request's adds and removes as the shape rules and the store take them.
struct SubscriptionRequest {
  std::vector<push::SubscriptionInput> adds;
  std::vector<std::string> removes;
};

SubscriptionRequest SubscriptionsOf(const v1::UpdateSubscriptionsRequest& request) {
  SubscriptionRequest out;
  out.adds.reserve(static_cast<size_t>(request.adds_size()));
  for (const v1::Subscription& s : request.adds()) {
    out.adds.push_back(push::SubscriptionInput{
        .topic = s.topic(),
        .hmac_epoch_base = s.hmac_epoch_base(),
        .hmac_keys = std::vector<std::string>(s.hmac_keys().begin(), s.hmac_keys().end()),
        .include_commits = s.include_commits()});
  }
  out.removes.assign(request.removes().begin(), request.removes().end());
  return out;
}

std::vector<store::SubscriptionAdd> StoreAdds(std::vector<push::SubscriptionInput> adds) {
  std::vector<store::SubscriptionAdd> out;
  out.reserve(adds.size());
  for (push::SubscriptionInput& a : adds) {
    out.push_back(store::SubscriptionAdd{.topic = std::move(a.topic),
                                         .hmac_epoch_base = a.hmac_epoch_base,
                                         .hmac_keys = std::move(a.hmac_keys),
                                         .include_commits = a.include_commits});
  }
  return out;
}

Status VerdictStatus(store::PushVerdict verdict) {
  switch (verdict) {
    case store::PushVerdict::kNotFound:
      return NotRegistered();
    case store::PushVerdict::kPermissionDenied:
      return SecretNotValid();
    case store::PushVerdict::kTopicLimit:
      return TopicLimit();
    default:
      return Status::Ok();
  }
}

// implements: PUSH-215, PUSH-216, PUSH-217, PUSH-253, PUSH-255 (UpdateSubscriptions)
asio::awaitable<Result<v1::RecipientState>> UpdateSubscriptions(
    const ApiContext& ctx, const v1::UpdateSubscriptionsRequest& request, rpc::Call& call) {
  XB_RETURN_IF_ERROR_CO(
      push::CheckRecipientCredentials(request.recipient_id(), request.recipient_secret()));
  const store::Hash hash = SecretHash(request.recipient_secret());
  XB_RETURN_IF_ERROR_CO(co_await CheckOwner(ctx, request.recipient_id(), hash, true, call));
  SubscriptionRequest subscriptions = SubscriptionsOf(request);
  XB_RETURN_IF_ERROR_CO(push::CheckSubscriptions(subscriptions.adds, subscriptions.removes));
  auto job = [push = ctx.store->push(), id = request.recipient_id(), hash,
              adds = StoreAdds(std::move(subscriptions.adds)),
              removes = std::move(subscriptions.removes), max = ctx.limits.max_push_topics] {
    return push->UpdateSubscriptions(id, hash, adds, removes, max);
  };
  auto changed = co_await ctx.db->Run(std::move(job), call.ended_flag());
  if (!changed.ok()) {
    co_return StoreErrorStatus(changed.error(), ctx);
  }
  XB_RETURN_IF_ERROR_CO(VerdictStatus(changed->verdict));
  auto state = StateOf(ctx, changed->value.state);
  if (state.ok()) {
    auto& subscriptions_total = ctx.metrics->push().subscriptions;
    subscriptions_total.Add(telemetry::PushSubscriptionAction::kAdded, changed->value.added);
    subscriptions_total.Add(telemetry::PushSubscriptionAction::kRemoved, changed->value.removed);
  }
  co_return state;
}

// Issue 28's rule for repeated fields, checked on the bytes before the parse: more adds than
// limits.max_push_topics can never be applied (the result holds every added topic), so such a
// request is answered row 4g's status at once; removes are bounded by the same number (our
// choice: docs/push.md).
rpc::RequestCheck SubscriptionBounds(uint64_t max_topics) {
  constexpr uint32_t kAdds = 3;
  constexpr uint32_t kRemoves = 4;
  return [max_topics](std::string_view bytes) -> Status {
    const auto adds = validate::CountField(bytes, kAdds, static_cast<size_t>(max_topics));
    if (!adds) {
      return Malformed();
    }
    if (*adds > max_topics) {
      return TopicLimit();
    }
    return CheckAtMost(bytes, kRemoves, max_topics, "too many removes in one request");
  };
}

}  // namespace

void AddNotificationService(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.backend.v1.NotificationService/Register", rpc::CallKind::kUnary,
             rpc::Unary<v1::RegisterRequest, v1::RecipientState>(
                 [&context](const v1::RegisterRequest& request, rpc::Call& call) {
                   return Register(context, request, call);
                 },
                 context.limits.max_response_bytes));
  router.Add("/xmtp.backend.v1.NotificationService/Unregister", rpc::CallKind::kUnary,
             rpc::Unary<v1::UnregisterRequest, v1::UnregisterResponse>(
                 [&context](const v1::UnregisterRequest& request, rpc::Call& call) {
                   return Unregister(context, request, call);
                 },
                 context.limits.max_response_bytes));
  router.Add(
      "/xmtp.backend.v1.NotificationService/UpdateSubscriptions", rpc::CallKind::kUnary,
      rpc::Unary<v1::UpdateSubscriptionsRequest, v1::RecipientState>(
          [&context](const v1::UpdateSubscriptionsRequest& request, rpc::Call& call) {
            return UpdateSubscriptions(context, request, call);
          },
          context.limits.max_response_bytes, SubscriptionBounds(context.limits.max_push_topics)));
}

}  // namespace xb::api
