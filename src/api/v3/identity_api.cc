#include "api/v3/identity_api.h"

#include <utility>

#include "api/identity_service.h"
#include "api/publish_service.h"
#include "api/request_bounds.h"
#include "api/v3/publish_wrap.h"
#include "identity/api/v1/identity.pb.h"
#include "rpc/unary.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;
namespace idv1 = xmtp::identity::api::v1;

namespace {

// 3.12: the request's fields are v1's (1 identifier, 2 kind); the response's kind and inbox id
// are numbered the other way round (2 inbox_id, 3 kind).
asio::awaitable<Result<idv1::GetInboxIdsResponse>> GetInboxIds(
    const ApiContext& ctx, const idv1::GetInboxIdsRequest& request) {
  v1::GetInboxIdsRequest lookup;
  for (const auto& r : request.requests()) {
    auto* out = lookup.add_requests();
    out->set_identifier(r.identifier());
    out->set_identifier_kind(r.identifier_kind());
  }
  XB_TRY_CO(v1::GetInboxIdsResponse found, co_await LookupInboxIds(ctx, lookup));
  idv1::GetInboxIdsResponse response;
  for (const auto& f : found.responses()) {
    auto* out = response.add_responses();
    out->set_identifier(f.identifier());
    out->set_identifier_kind(f.identifier_kind());
    if (f.has_inbox_id()) {
      out->set_inbox_id(f.inbox_id());
    }
  }
  co_return response;
}

// 3.13: a signature entry numbers hash 4 and signature 3 (v1: 3 and 4); the answers match v1's.
asio::awaitable<Result<idv1::VerifySmartContractWalletSignaturesResponse>> VerifyScw(
    const ApiContext& ctx, const idv1::VerifySmartContractWalletSignaturesRequest& request,
    telemetry::SpanContext parent) {
  v1::VerifySmartContractWalletSignaturesRequest checks;
  for (const auto& s : request.signatures()) {
    auto* out = checks.add_signatures();
    out->set_account_id(s.account_id());
    if (s.has_block_number()) {
      out->set_block_number(s.block_number());
    }
    out->set_hash(s.hash());
    out->set_signature(s.signature());
  }
  XB_TRY_CO(v1::VerifySmartContractWalletSignaturesResponse verdicts,
            co_await VerifySmartContractWallets(ctx, checks, parent));
  idv1::VerifySmartContractWalletSignaturesResponse response;
  for (const auto& v : verdicts.responses()) {
    auto* out = response.add_responses();
    out->set_is_valid(v.is_valid());
    if (v.has_block_number()) {
      out->set_block_number(v.block_number());
    }
    if (v.has_error()) {
      out->set_error(v.error());
    }
  }
  co_return response;
}

// 3.10: the IdentityUpdate (field 1) is published as one identity-update envelope.
asio::awaitable<Result<idv1::PublishIdentityUpdateResponse>> PublishIdentityUpdate(
    const ApiContext& ctx, std::string request, telemetry::SpanContext parent) {
  const std::optional<std::string_view> update = LastMessageField(request, 1);
  if (!update) {
    co_return InvalidArgument("request is malformed");
  }
  std::string wrapped = OneEnvelopeRequest(kEnvelopeIdentityUpdate, *update);
  XB_TRY_CO(auto published, co_await PublishEncoded(ctx, std::move(wrapped), parent));
  (void)published;
  co_return idv1::PublishIdentityUpdateResponse();
}

}  // namespace

// implements: API-270, API-271 for the V3 IdentityApi (issue 33)
void AddIdentityApi(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate", rpc::CallKind::kUnary,
             rpc::UnaryBytes<idv1::PublishIdentityUpdateResponse>(
                 [&context](std::string request, rpc::Call& call) {
                   return PublishIdentityUpdate(context, std::move(request), call.trace_parent());
                 },
                 context.limits.max_response_bytes));
  router.Add(
      "/xmtp.identity.api.v1.IdentityApi/GetInboxIds", rpc::CallKind::kUnary,
      rpc::Unary<idv1::GetInboxIdsRequest, idv1::GetInboxIdsResponse>(
          [&context](const idv1::GetInboxIdsRequest& request, rpc::Call&) {
            return GetInboxIds(context, request);
          },
          context.limits.max_response_bytes,
          AtMost(1, context.limits.max_lookup_identifiers, "too many identifiers in one lookup")));
  router.Add(
      "/xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures",
      rpc::CallKind::kUnary,
      rpc::Unary<idv1::VerifySmartContractWalletSignaturesRequest,
                 idv1::VerifySmartContractWalletSignaturesResponse>(
          [&context](const idv1::VerifySmartContractWalletSignaturesRequest& request,
                     rpc::Call& call) { return VerifyScw(context, request, call.trace_parent()); },
          context.limits.max_response_bytes,
          AtMost(1, context.limits.max_scw_signatures, "too many signatures in one verification")));
}

}  // namespace xb::api::v3
