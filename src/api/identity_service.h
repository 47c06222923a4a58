// xmtp.backend.v1.IdentityService (API.md 3.10, 3.11; VALIDATION.md 6, 7): GetInboxIds over the
// identifier projection on the read database (OPS-009), and VerifySmartContractWalletSignatures
// over the configured chains.
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api {

void AddIdentityService(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api
