#include "config/socket_address.h"

#include <array>

#include "base/ip_address.h"

namespace xb::config {
namespace {

bool ParsePort(std::string_view text, uint16_t* out) {
  if (text.empty() || text.size() > 5) {
    return false;
  }
  uint32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) {
    return false;
  }
  *out = static_cast<uint16_t>(value);
  return true;
}

Status NotNumeric() {
  return InvalidArgument("not a numeric socket address (IPv4:port or [IPv6]:port)");
}

}  // namespace

Result<SocketAddress> ParseSocketAddress(std::string_view text) {
  SocketAddress result;
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return NotNumeric();
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    std::array<uint8_t, 16> v6;
    if (!ParseIpv6(host, &v6)) {
      return NotNumeric();
    }
    result.family = SocketAddress::Family::kIpv6;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return NotNumeric();
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    std::array<uint8_t, 4> v4;
    if (!ParseIpv4(host, &v4)) {
      return NotNumeric();
    }
    result.family = SocketAddress::Family::kIpv4;
  }
  if (!ParsePort(port, &result.port)) {
    return NotNumeric();
  }
  result.host = std::string(host);
  return result;
}

}  // namespace xb::config
