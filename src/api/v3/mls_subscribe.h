// xmtp.mls.api.v1.MlsApi/Subscribe: the XIP-83 bidirectional subscription (docs/v3-api.md 4.3,
// G10). The wire protocol lives here (Started, Mutate checks, Ping/Pong, TopicsLive and
// CatchupComplete, the history-only sync that ends when the client half-closed); the waves and
// live delivery live in fanout::StreamSession (StreamWire::Waves).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api::v3 {

void AddMlsSubscribe(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api::v3
