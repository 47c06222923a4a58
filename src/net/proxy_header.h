// The PROXY protocol's version 2 header (HAProxy's "PROXY protocol" specification, section 2.2):
// a balancer that passes connections on (HAProxy `send-proxy-v2`, AWS NLB, ...) writes it first,
// before TLS or the HTTP/2 preface, carrying the client's address. With server.proxy_protocol on,
// that address is the connection's peer (quotas.address). Version 1 (text) is not accepted: every
// balancer that speaks it also speaks version 2, which has no text to parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/exchange.h"

namespace xb::net {

// The fixed part: the 12-byte signature, version/command, family/protocol, length.
inline constexpr size_t kProxyHeaderFixedBytes = 16;
// A longer header is refused: the addresses take at most 216 bytes (two AF_UNIX paths) and the
// TLVs balancers add (ALPN, authority, a unique id, a VPC endpoint id) a few hundred more.
inline constexpr size_t kProxyHeaderMaxBytes = 4096;

struct ProxyHeaderFixed {
  bool valid = false;
  size_t total_bytes = 0;  // the whole header: the fixed part and what its length field says
};

// Checks the fixed part (exactly kProxyHeaderFixedBytes): the signature, version 2, a known
// command and a length within kProxyHeaderMaxBytes.
ProxyHeaderFixed ParseProxyHeaderFixed(std::string_view fixed);

struct ProxyHeader {
  bool valid = false;
  // The client's address when the header carries one (command PROXY over TCP on IPv4 or IPv6);
  // unknown (LOCAL, a health check of the balancer's own, or another family): the caller keeps
  // the socket's peer.
  PeerAddress source;
};

// Parses a whole header (exactly the total_bytes its fixed part gave). The TLVs after the
// addresses are skipped unread.
ProxyHeader ParseProxyHeader(std::string_view header);

}  // namespace xb::net
