// Bounds on repeated fields checked on a request's bytes before it is parsed (issue 28): parsing
// materializes one message object per element, so 13 million empty elements in a 26 MB request
// once cost ~2 GiB before the count bound was looked at. Each check counts without decoding and
// refuses with the same status the bound check after the parse gives.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "rpc/unary.h"

namespace xb::api {

// At most `max` top-level occurrences of field `number`, else INVALID_ARGUMENT `too_many`.
rpc::RequestCheck AtMost(uint32_t number, uint64_t max, std::string too_many);

// The same check on the bytes of one message (a stream frame) rather than a unary request.
Status CheckAtMost(std::string_view message, uint32_t number, uint64_t max,
                   std::string_view too_many);

// A SubscribeRequest frame: its Update's adds and removes (each Update occurrence merges into
// one, so they are counted over all of them) against their bounds.
Status CheckSubscribeFrame(std::string_view frame, uint64_t max_adds, uint64_t max_removes);

// The same for an xmtp.mls.api.v1 SubscribeRequest frame (XIP-83): its v1.mutate's adds and
// removes.
Status CheckMutateFrame(std::string_view frame, uint64_t max_adds, uint64_t max_removes);

}  // namespace xb::api
