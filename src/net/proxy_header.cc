#include "net/proxy_header.h"

#include <algorithm>

namespace xb::net {

namespace {

constexpr std::string_view kSignature("\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A", 12);
constexpr uint8_t kVersion2 = 0x2;
constexpr uint8_t kCommandLocal = 0x0;
constexpr uint8_t kCommandProxy = 0x1;
constexpr uint8_t kFamilyInet = 0x1;
constexpr uint8_t kFamilyInet6 = 0x2;
constexpr uint8_t kTransportStream = 0x1;
constexpr size_t kInetBlockBytes = 12;   // source, destination, two ports
constexpr size_t kInet6BlockBytes = 36;  // the same with 16-byte addresses

uint8_t Byte(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

}  // namespace

// implements: server.proxy_protocol (issue 32: quotas.address behind a balancer)
ProxyHeaderFixed ParseProxyHeaderFixed(std::string_view fixed) {
  ProxyHeaderFixed out;
  if (fixed.size() != kProxyHeaderFixedBytes || !fixed.starts_with(kSignature)) {
    return out;
  }
  const uint8_t version = Byte(fixed, 12) >> 4;
  const uint8_t command = Byte(fixed, 12) & 0x0F;
  if (version != kVersion2 || (command != kCommandLocal && command != kCommandProxy)) {
    return out;
  }
  const size_t length = (size_t{Byte(fixed, 14)} << 8) | Byte(fixed, 15);
  if (kProxyHeaderFixedBytes + length > kProxyHeaderMaxBytes) {
    return out;
  }
  out.valid = true;
  out.total_bytes = kProxyHeaderFixedBytes + length;
  return out;
}

ProxyHeader ParseProxyHeader(std::string_view header) {
  ProxyHeader out;
  const ProxyHeaderFixed fixed = ParseProxyHeaderFixed(header.substr(0, kProxyHeaderFixedBytes));
  if (!fixed.valid || header.size() != fixed.total_bytes) {
    return out;
  }
  const std::string_view block = header.substr(kProxyHeaderFixedBytes);
  const uint8_t command = Byte(header, 12) & 0x0F;
  const uint8_t family = Byte(header, 13) >> 4;
  const uint8_t transport = Byte(header, 13) & 0x0F;
  out.valid = true;
  // LOCAL (the balancer's own connection) and families other than TCP over IP carry no client
  // address to use: the socket's peer stands.
  if (command != kCommandProxy || transport != kTransportStream ||
      (family != kFamilyInet && family != kFamilyInet6)) {
    return out;
  }
  const size_t needed = family == kFamilyInet ? kInetBlockBytes : kInet6BlockBytes;
  if (block.size() < needed) {
    out.valid = false;  // says TCP over IP but has no room for the addresses
    return out;
  }
  if (family == kFamilyInet) {
    // IPv4 mapped into IPv6, as PeerAddress holds every address (::ffff:a.b.c.d).
    out.source.bytes[10] = 0xFF;
    out.source.bytes[11] = 0xFF;
    std::copy_n(block.begin(), 4, out.source.bytes.begin() + 12);
  } else {
    std::copy_n(block.begin(), 16, out.source.bytes.begin());
  }
  out.source.known = true;
  return out;
}

}  // namespace xb::net
