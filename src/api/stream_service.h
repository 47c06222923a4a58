// The stream RPCs of xmtp.backend.v1.QueryService: Subscribe (bidirectional, API.md 3.8) and
// SubscribeStatic (server streaming, API.md 3.9). The wire protocol lives here (Started, Update
// validation, Applied, Ping/Pong, keepalive, frame buckets); delivery lives in
// fanout::StreamSession.
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api {

void AddStreamService(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api
