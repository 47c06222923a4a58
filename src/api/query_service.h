// xmtp.backend.v1.QueryService: Query (API 3.5, current store), QueryNewest (API 3.6, may read
// the replica) and Get (API 3.7, compatibility, current store).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api {

void AddQueryService(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api
