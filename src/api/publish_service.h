// xmtp.backend.v1.PublishService/Publish (API 3.4, STORE.md 3.1): parse and bound every
// envelope, collapse in-request duplicates, look up stored duplicates, validate the rest, then one
// atomic, idempotent commit on the current store.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "api/context.h"
#include "rpc/router.h"
#include "telemetry/trace_context.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

void AddPublishService(rpc::Router& router, const ApiContext& context);

// The whole of Publish for the encoded PublishRequest `request`, shared with the V3 sends
// (api/v3/), whose requests are, or are rewrapped into, PublishRequest bytes. `parent`: the
// rpc.publish span. Suspends.
boost::asio::awaitable<Result<xmtp::backend::v1::PublishResponse>> PublishEncoded(
    const ApiContext& ctx, std::string request, telemetry::SpanContext parent);

}  // namespace xb::api
