// A numeric socket address as server.listen and telemetry.metrics_listen take it (spec/CONF.md
// sections 2.1 and 2.2): `IPv4:port` or `[IPv6]:port`. Host names are refused, so binding never
// needs a resolver.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::config {

struct SocketAddress {
  enum class Family { kIpv4, kIpv6 };
  Family family = Family::kIpv4;
  std::string host;   // the address as written, without brackets ("0.0.0.0", "::1")
  uint16_t port = 0;  // 0 asks the kernel for an ephemeral port (tests)
};

// Parses `IPv4:port` (dotted quad, no leading zeros) or `[IPv6]:port` (no zone id); the port is
// 0 to 65535 in decimal. Errors are kInvalidArgument with a fixed message that never repeats
// the input, so a caller may wrap it under its key.
Result<SocketAddress> ParseSocketAddress(std::string_view text);

}  // namespace xb::config
