// xmtp.identity.api.v1.IdentityApi, the V3 identity API of released XMTP SDKs (issue 33,
// docs/v3-api.md 3.10, 3.12, 3.13): GetInboxIds and VerifySmartContractWalletSignatures, served by
// the same work as xmtp.backend.v1.IdentityService (api/identity_service.h) with the V3 messages'
// own field numbers; PublishIdentityUpdate through Publish (the update rewrapped as one
// identity-update envelope, api/v3/publish_wrap.h), answering Publish's statuses.
// GetIdentityUpdates is not served yet (the router answers UNIMPLEMENTED "unknown method", as for
// any path it does not know).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api::v3 {

void AddIdentityApi(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api::v3
