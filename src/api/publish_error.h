// The publish INVALID_ARGUMENT detail (API-223, API.md 1.3 and example 4.4): a google.rpc.Status
// with one Any holding a PublishError, carried in grpc-status-details-bin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

// INVALID_ARGUMENT with `message`, and the detail naming `index` (absent for a request-level
// bound) and `reason`.
Status PublishRejected(xmtp::backend::v1::PublishError::Reason reason,
                       std::optional<uint32_t> index, std::string message);

// The PublishError carried by a status made above; nullopt when it has none.
std::optional<xmtp::backend::v1::PublishError> PublishErrorOf(const Status& status);

}  // namespace xb::api
