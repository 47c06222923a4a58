// What the server-streaming subscriptions share: xmtp.backend.v1 SubscribeStatic (API.md 3.9) and
// the V3 MlsApi.SubscribeGroupMessages / SubscribeWelcomeMessages (docs/v3-api.md 4.1, 4.2). One
// delivery loop around fanout::StreamSession (admission, catch-up then live, recovery and drain
// endings, backpressure), parameterized by what each protocol sends besides its rows. The endings
// are shared with the bidirectional Subscribe (api/stream_service.cc).
//
// Everything runs on the call's executor.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/context.h"
#include "base/status.h"
#include "fanout/stream_session.h"
#include "rpc/call.h"
#include "store/store.h"
#include "telemetry/metrics.h"

namespace xb::api {

// A stream's delivery limits from the enforced [limits] (API.md 3.12).
fanout::StreamLimits StreamLimitsOf(const ApiContext& ctx);

// OPS-006: refused while stream recovery runs (UNAVAILABLE).
fanout::Ending RecoveryRefusal();

// A stream cursor (exclusive) above INT64_MAX is INVALID_ARGUMENT (API.md 3.1).
Status CheckStreamCursor(uint64_t cursor);

// How a stream that we did not finish ended: the client went away, its deadline passed, or the
// drain ended it (OPS-007).
telemetry::StreamEndReason ExternalEndReason(const rpc::Call& call);

// Ends the stream and counts the ending. Recovery and shutdown end it at once, dropping queued
// frames the connection has not taken yet (OPS-006, OPS-007: the client resumes from what it
// received); every other ending keeps what is queued ahead of its status.
void EndStream(rpc::Call& call, fanout::Ending ending, telemetry::Metrics& metrics);

// What one kind of server stream sends around its rows.
struct StaticStreamProtocol {
  fanout::StreamWire wire;
  // The first response message, built from the catch-up targets once the topics are registered
  // (SubscribeStatic's Started). nullptr: none; the response headers then go out as soon as the
  // stream is admitted (Call::SendHeaders, docs/v3-api.md G4).
  std::function<std::string(const std::vector<fanout::CatchupTargetOut>&)> started;
  // Sent after streams.keepalive_interval_ms without a response message (SubscribeStatic's
  // Keepalive, API-255). Empty: none (the V3 schema has no keepalive message, G5).
  std::string keepalive;
};

// The topics of a server stream's request message (valid, distinct, possibly none), or the
// status that refuses it before any response message.
using StaticTopicsFn =
    std::function<Result<std::vector<store::TopicCursor>>(const std::string& request)>;

// Serves one server stream: reads its request message (INVALID_ARGUMENT "request is malformed"
// without one), takes its topics from `topics` (ending the call with its status when refused),
// then runs the stream until it ends: admission, registration, catch-up and live rows. Suspends.
boost::asio::awaitable<void> ServeStaticStream(const ApiContext& ctx,
                                               std::shared_ptr<rpc::Call> call,
                                               StaticStreamProtocol protocol,
                                               StaticTopicsFn topics);

}  // namespace xb::api
