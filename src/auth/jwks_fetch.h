// One JWKS fetch (AUTH section 7.2): a GET of auth.jwks_url over HTTPS (or HTTP to a loopback
// host), no redirects, a 2xx answer, at most 262144 body bytes, all within a deadline, through
// net/http_client (HTTP/1.1, one connection per fetch). Nothing here logs: errors are fixed text
// that never carries the URL or the body (AUTH-027); the caller names the host.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::auth {

struct JwksSource {
  bool tls = true;
  std::string host;         // as written; an IPv6 literal without brackets
  bool host_is_ip = false;  // certificate checked against an IP SAN rather than a DNS name
  std::string port;         // "443"/"80" when the URL has none
  std::string host_header;  // host[:port] as the Host header carries it
  std::string target;       // path and query, "/" at least
};

// Reads a checked auth.jwks_url (AUTH-015 at startup has already accepted it).
Result<JwksSource> ParseJwksSource(std::string_view url);

// A TLS client context that verifies peers against the default trust store (OpenSSL's default
// paths; SSL_CERT_FILE / SSL_CERT_DIR select another CA bundle): net::MakeClientTlsContext, made
// once per refresher. Error when it cannot be made.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeJwksTlsContext();

// The response body of one fetch, or an error when anything fails or `deadline` passes first
// (AUTH-033). Suspends; runs on the caller's executor.
boost::asio::awaitable<Result<std::string>> FetchJwks(
    JwksSource source, std::shared_ptr<boost::asio::ssl::context> tls,
    std::chrono::steady_clock::time_point deadline);

}  // namespace xb::auth
