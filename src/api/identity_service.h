// xmtp.backend.v1.IdentityService (API.md 3.10, 3.11; VALIDATION.md 6, 7): GetInboxIds over the
// identifier projection on the read database (OPS-009), and VerifySmartContractWalletSignatures
// over the configured chains.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/context.h"
#include "rpc/router.h"
#include "telemetry/trace_context.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

void AddIdentityService(rpc::Router& router, const ApiContext& context);

// The two methods' work, shared with the V3 IdentityApi (api/v3/identity_api.h), which converts
// its messages to and from these. Suspend.
boost::asio::awaitable<Result<xmtp::backend::v1::GetInboxIdsResponse>> LookupInboxIds(
    const ApiContext& ctx, const xmtp::backend::v1::GetInboxIdsRequest& request);
// `parent`: the rpc.* span each scw.verify span goes under (OPS-019).
boost::asio::awaitable<Result<xmtp::backend::v1::VerifySmartContractWalletSignaturesResponse>>
VerifySmartContractWallets(
    const ApiContext& ctx,
    const xmtp::backend::v1::VerifySmartContractWalletSignaturesRequest& request,
    telemetry::SpanContext parent);

}  // namespace xb::api
