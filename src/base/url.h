// A strict RFC 3986 reader for the URLs the backend is configured with or fetches (OTLP endpoint,
// JWKS URL, chain RPC URLs, attachment base URL and storage endpoint; net/http_client). It splits
// and validates; it never normalises, resolves or fetches anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb {

struct Url {
  enum class HostKind { kRegName, kIpv4, kIpv6 };

  std::string scheme;  // as written (RFC 3986 schemes compare case-insensitively)
  bool has_userinfo = false;
  HostKind host_kind = HostKind::kRegName;
  std::string host;  // as written; an IPv6 literal without its brackets
  bool host_has_percent_encoding = false;
  std::optional<uint16_t> port;  // absent also for an empty port ("host:")
  std::string path;              // path-abempty, may be ""
  bool has_query = false;
  bool has_fragment = false;
};

// Parses an absolute URI with an authority ("scheme://authority path [?query] [#fragment]") by
// the RFC 3986 grammar: every character in its class, every '%' followed by two hex digits, an
// IP-literal a valid IPv6 address (IPvFuture and zone ids refused), a port of at most 65535.
// The host may be empty; callers decide. Errors are fixed text that never repeats the input.
Result<Url> ParseUrl(std::string_view text);

// True when the scheme is `http` or `https` (case-insensitive) and the host is not empty: the
// form OPS-022 asks of an OTLP endpoint and CONF 2.8 of a chain RPC URL.
bool IsHttpUrlWithHost(const Url& url);

// True for the host `localhost` (any case), an IPv4 address in 127.0.0.0/8, or ::1 in any form.
bool IsLoopbackHost(const Url& url);

// ASCII case-insensitive equality.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// `text` with ASCII A-Z in lower case (header names, host names, config keys).
std::string AsciiLower(std::string_view text);

// host[:port] as a Host header or :authority carries it: an IPv6 literal in brackets, the port only
// when the URL writes one.
std::string HostHeader(const Url& url);

// The request target of `text`, a URL ParseUrl accepted: its path and query, "/" at least, without
// the fragment.
std::string RequestTarget(std::string_view text);

}  // namespace xb
