// grpc-timeout header (gRPC over HTTP/2): up to 8 ASCII digits and a unit H M S m u n.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace xb::rpc {

// nullopt when the value is malformed.
std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value);

}  // namespace xb::rpc
