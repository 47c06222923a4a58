// xmtp.backend.v1.PublishService/Publish (API 3.4, STORE.md 3.1): parse and bound every
// envelope, collapse in-request duplicates, look up stored duplicates, validate the rest, then one
// atomic, idempotent commit on the current store.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "api/context.h"
#include "api/quotas.h"
#include "rpc/router.h"
#include "telemetry/trace_context.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

void AddPublishService(rpc::Router& router, const ApiContext& context);

// Who publishes: the rpc.publish span (the parent of the publish stage spans) and the keys the
// publish quotas charge (issue 32).
struct PublishOrigin {
  telemetry::SpanContext parent;
  QuotaCaller caller;
};
PublishOrigin OriginOf(const ApiContext& ctx, const rpc::Call& call);

// The whole of Publish for the encoded PublishRequest `request`, shared with the V3 sends
// (api/v3/), whose requests are, or are rewrapped into, PublishRequest bytes. The publish quotas
// are charged once the request is parsed, before validation (its envelopes count). Suspends.
boost::asio::awaitable<Result<xmtp::backend::v1::PublishResponse>> PublishEncoded(
    const ApiContext& ctx, std::string request, PublishOrigin origin);

}  // namespace xb::api
