// Textual IP address literals as RFC 3986 section 3.2.2 writes them, for socket addresses and
// URL hosts. Pure functions; no name resolution.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace xb {

// Dotted-quad IPv4 ("dec-octet" x4: 0-255, no leading zeros, no other forms).
bool ParseIpv4(std::string_view text, std::array<uint8_t, 4>* out);

// Any RFC 4291 textual IPv6 form, including an embedded IPv4 tail; no zone id, no brackets.
bool ParseIpv6(std::string_view text, std::array<uint8_t, 16>* out);

// 127.0.0.0/8.
bool IsLoopbackIpv4(const std::array<uint8_t, 4>& address);

// ::1 (in whatever form it was written).
bool IsLoopbackIpv6(const std::array<uint8_t, 16>& address);

}  // namespace xb
