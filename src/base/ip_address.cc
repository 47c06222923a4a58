#include "base/ip_address.h"

#include <arpa/inet.h>

#include <cstring>
#include <string>

namespace xb {

bool ParseIpv4(std::string_view text, std::array<uint8_t, 4>* out) {
  std::array<uint8_t, 4> bytes{};
  size_t pos = 0;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (pos >= text.size() || text[pos] != '.') {
        return false;
      }
      ++pos;
    }
    size_t start = pos;
    unsigned value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 3) {
      value = value * 10 + static_cast<unsigned>(text[pos] - '0');
      ++pos;
    }
    size_t digits = pos - start;
    if (digits == 0 || value > 255 || (digits > 1 && text[start] == '0')) {
      return false;
    }
    bytes[octet] = static_cast<uint8_t>(value);
  }
  if (pos != text.size()) {
    return false;
  }
  *out = bytes;
  return true;
}

bool ParseIpv6(std::string_view text, std::array<uint8_t, 16>* out) {
  // inet_pton implements RFC 4291 section 2.2 and refuses zone ids; it needs a C string, so a
  // text with an embedded NUL (or one too long to be an address) is refused first.
  if (text.empty() || text.size() > 45 || text.find('\0') != std::string_view::npos) {
    return false;
  }
  std::string copy(text);
  in6_addr address;
  if (inet_pton(AF_INET6, copy.c_str(), &address) != 1) {
    return false;
  }
  std::memcpy(out->data(), &address, 16);
  return true;
}

bool IsLoopbackIpv4(const std::array<uint8_t, 4>& address) { return address[0] == 127; }

bool IsLoopbackIpv6(const std::array<uint8_t, 16>& address) {
  for (size_t i = 0; i < 15; ++i) {
    if (address[i] != 0) {
      return false;
    }
  }
  return address[15] == 1;
}

}  // namespace xb
