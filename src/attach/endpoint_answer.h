// What the HTTP credential sources (attach/http_sources.h) share: the fixed-word errors, reading a
// token file, the JSON credential answer of the container and instance endpoints, a generated
// role session name, and one request through ProviderContext::http that maps every failure to
// fixed words. Private to the attach/ HTTP sources; pure functions except SendRequest, which
// suspends.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "attach/credentials.h"
#include "net/http_client.h"

namespace xb::attach {

CredentialError Unavailable(std::string_view words);
CredentialError InvalidConfiguration(std::string_view words);

// The variable `name` when set and not empty.
std::optional<std::string> EnvValue(const ProviderContext& context, const std::string& name);

// The whole of a small local file (a token), or nullopt when it cannot be read or is larger than
// 64 KiB. Blocks briefly.
std::optional<std::string> ReadSmallFile(const std::string& path);

// A RoleSessionName when none is configured: "xmtp-backend-<unix seconds>" (botocore writes
// "botocore-session-<unix seconds>"; the shape [\w+=,.@-]{2,64} STS asks for).
std::string GeneratedSessionName(WallClock::time_point now);

// The JSON answer of the container and instance endpoints: AccessKeyId and SecretAccessKey
// (required, non-empty strings), Token (optional), Expiration (optional; ISO 8601 when present).
// Anything else fails kUnavailable with `unusable`.
CredentialResult ParseJsonCredentials(std::string_view body, std::string_view unusable);

// One request with a deadline `timeout` from now and a 64 KiB body cap. A transport failure is
// kUnavailable with `no_answer`; the response is returned whatever its status (the caller maps a
// non-2xx to its own fixed words). Suspends.
boost::asio::awaitable<Expected<net::HttpResponse, CredentialError>> SendRequest(
    net::HttpClient* http, net::HttpRequest request, std::chrono::milliseconds timeout,
    std::string_view no_answer);

inline bool IsSuccess(const net::HttpResponse& response) {
  return response.status >= 200 && response.status < 300;
}

}  // namespace xb::attach
