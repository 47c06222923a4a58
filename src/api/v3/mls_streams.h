// The server streams of xmtp.mls.api.v1.MlsApi (issue 33, docs/v3-api.md 4.1, 4.2):
// SubscribeGroupMessages (filters {group_id, id_cursor} on topics 0x00||group_id) and
// SubscribeWelcomeMessages (filters {installation_key, id_cursor} on 0x01||installation_key).
// Each is a static session of the xmtp.backend.v1 SubscribeStatic delivery engine
// (api/static_stream.h): catch-up from each filter's exclusive cursor then live rows, API-254
// order, API-261 fairness, OPS-006 recovery and OPS-007 drain as UNAVAILABLE, backpressure as
// RESOURCE_EXHAUSTED. What differs is the wire: response headers at admission (G4), no Started
// and no keepalive message (G5), and each row is one GroupMessage / WelcomeMessage response
// message (G3, api/v3/stream_rows.h).
//
// Request checks, before any response message: a filter id of the wrong length (16 / 32 bytes),
// an id_cursor above INT64_MAX or more filters than limits.max_static_topics are
// INVALID_ARGUMENT. A topic named twice registers once, from its lowest cursor. Zero filters:
// SubscribeGroupMessages stays open and silent (Q2); SubscribeWelcomeMessages answers
// INVALID_ARGUMENT "no valid filters provided" (as node-go).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api::v3 {

void AddMlsStreams(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api::v3
