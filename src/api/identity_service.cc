#include "api/identity_service.h"

#include <cctype>

#include "api/request_bounds.h"
#include "api/scw_verifier.h"
#include "api/store_status.h"
#include "base/url.h"
#include "rpc/unary.h"
#include "validate/identity_update.h"
#include "validate/identity_validator.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;
namespace pb = xmtp::identity::associations;

namespace {

bool IsHex(std::string_view s) {
  if (s.size() % 2 != 0) {
    return false;
  }
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

// implements: API-270 (VALIDATION.md 6: normalization by kind, order and echo, limits)
}  // namespace

asio::awaitable<Result<v1::GetInboxIdsResponse>> LookupInboxIds(
    const ApiContext& ctx, const v1::GetInboxIdsRequest& request) {
  if (static_cast<size_t>(request.requests_size()) > ctx.limits.max_lookup_identifiers) {
    co_return InvalidArgument("too many identifiers in one lookup");
  }
  std::vector<store::IdentifierKey> keys;
  keys.reserve(static_cast<size_t>(request.requests_size()));
  for (const auto& r : request.requests()) {
    switch (r.identifier_kind()) {
      case pb::IDENTIFIER_KIND_UNSPECIFIED:
      case pb::IDENTIFIER_KIND_ETHEREUM:
        // [ref] not validated, only ASCII-lower-cased: a malformed address finds nothing.
        keys.push_back({AsciiLower(r.identifier()), validate::kProjectedEthereum});
        break;
      case pb::IDENTIFIER_KIND_PASSKEY:
        if (!IsHex(r.identifier())) {
          co_return InvalidArgument("malformed identifier");
        }
        keys.push_back({AsciiLower(r.identifier()), validate::kProjectedPasskey});
        break;
      default:
        co_return InvalidArgument("unknown identifier kind");
    }
  }
  auto job = [store = ctx.store, keys = std::move(keys)] { return store->InboxIds(keys); };
  auto found = co_await ctx.db->Run(std::move(job));
  if (!found.ok()) {
    co_return StoreErrorStatus(found.error(), ctx);
  }
  const auto& inboxes = found.value();
  v1::GetInboxIdsResponse response;
  for (int i = 0; i < request.requests_size(); ++i) {
    auto* out = response.add_responses();
    out->set_identifier(request.requests(i).identifier());
    out->set_identifier_kind(request.requests(i).identifier_kind());
    if (const auto& inbox = inboxes.at(static_cast<size_t>(i))) {
      out->set_inbox_id(LowerHex(*inbox));
    }
  }
  co_return response;
}

// implements: API-271, API-231 (VALIDATION.md 7)
// `parent` is the rpc.* span: each chain verification gets a scw.verify span under it (OPS-019).
asio::awaitable<Result<v1::VerifySmartContractWalletSignaturesResponse>> VerifySmartContractWallets(
    const ApiContext& ctx, const v1::VerifySmartContractWalletSignaturesRequest& request,
    telemetry::SpanContext parent) {
  if (static_cast<size_t>(request.signatures_size()) > ctx.limits.max_scw_signatures) {
    co_return InvalidArgument("too many signatures in one verification");
  }
  // Every entry is checked before any chain call.
  std::vector<validate::ScwCheck> checks;
  for (const auto& s : request.signatures()) {
    auto account = validate::ParseCaip10(s.account_id());
    if (!account) {
      co_return InvalidArgument("malformed account id");
    }
    // [open] VALIDATION.md 7 item: a shape-valid id that is not a canonical eip155 account is
    // answered INVALID_ARGUMENT after the 5.9.1 form check (the reference finds no route and
    // answers UNAVAILABLE).
    if (!validate::Eip155ChainId(*account)) {
      co_return InvalidArgument("malformed account id");
    }
    if (s.hash().size() != 32) {
      co_return InvalidArgument("hash is not 32 bytes");
    }
    checks.push_back(validate::ScwCheck{
        .chain = account->chain,
        .address = account->address,
        .hash = s.hash(),
        .signature = s.signature(),
        .block_number =
            s.has_block_number() ? std::optional<uint64_t>(s.block_number()) : std::nullopt});
  }
  if (ctx.scw == nullptr && !checks.empty()) {
    co_return Unavailable("signature verifier unavailable");
  }
  v1::VerifySmartContractWalletSignaturesResponse response;
  for (auto& check : checks) {
    telemetry::Span span = StartSpan(ctx, telemetry::Operation::kScwVerify, parent);
    auto verdict = co_await ctx.scw->Verify(std::move(check));
    if (auto* e = std::get_if<validate::IdentityError>(&verdict)) {
      span.SetError();
      if (e->kind == validate::IdentityFailure::kUnavailable) {
        co_return Unavailable("signature verifier unavailable");
      }
      co_return InvalidArgument(e->message);
    }
    const auto& v = std::get<ScwVerdict>(verdict);
    auto* out = response.add_responses();
    out->set_is_valid(v.valid);
    out->set_block_number(v.block_number);
  }
  co_return response;
}

void AddIdentityService(rpc::Router& router, const ApiContext& context) {
  router.Add(
      "/xmtp.backend.v1.IdentityService/GetInboxIds", rpc::CallKind::kUnary,
      rpc::Unary<v1::GetInboxIdsRequest, v1::GetInboxIdsResponse>(
          [&context](const v1::GetInboxIdsRequest& request, rpc::Call&) {
            return LookupInboxIds(context, request);
          },
          context.limits.max_response_bytes,
          AtMost(1, context.limits.max_lookup_identifiers, "too many identifiers in one lookup")));
  router.Add(
      "/xmtp.backend.v1.IdentityService/VerifySmartContractWalletSignatures", rpc::CallKind::kUnary,
      rpc::Unary<v1::VerifySmartContractWalletSignaturesRequest,
                 v1::VerifySmartContractWalletSignaturesResponse>(
          [&context](const v1::VerifySmartContractWalletSignaturesRequest& request,
                     rpc::Call& call) {
            return VerifySmartContractWallets(context, request, call.trace_parent());
          },
          context.limits.max_response_bytes,
          AtMost(1, context.limits.max_scw_signatures, "too many signatures in one verification")));
}

}  // namespace xb::api
