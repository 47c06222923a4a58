// A status with one typed detail: a google.rpc.Status holding one Any, carried in
// grpc-status-details-bin (the PublishError of API-223, the RetryInfo of a quota refusal).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::api {

// `code` with `message`, and the detail `value` (a serialized message) of type `type_url`.
Status StatusWithDetail(StatusCode code, std::string message, std::string_view type_url,
                        std::string value);

// The serialized detail of type `type_url` of a status made above; nullopt when it has none.
std::optional<std::string> DetailOf(const Status& status, std::string_view type_url);

}  // namespace xb::api
