#include "auth/jwks_fetch.h"

#include <boost/asio/this_coro.hpp>

#include "auth/jwks.h"
#include "base/url.h"
#include "net/http_client.h"
#include "net/tls_client.h"

namespace xb::auth {

namespace asio = boost::asio;

namespace {

constexpr uint32_t kMaxHeaderBytes = 16384;

// The words for a failed exchange: fixed text, never the URL or the body (AUTH-027).
Status FetchFailure(net::HttpErrorKind kind) {
  switch (kind) {
    case net::HttpErrorKind::kResolve:
    case net::HttpErrorKind::kVetoed:
      return Unavailable("the JWKS host does not resolve");
    case net::HttpErrorKind::kTimeout:
      return Unavailable("the JWKS fetch timed out");
    case net::HttpErrorKind::kConnect:
      return Unavailable("the JWKS host cannot be reached");
    case net::HttpErrorKind::kTls:
      return Unavailable("the JWKS TLS handshake failed");
    case net::HttpErrorKind::kInvalidRequest:
      return Internal("the JWKS host cannot be verified");
    default:
      return Unavailable("the JWKS response could not be read");
  }
}

}  // namespace

Result<JwksSource> ParseJwksSource(std::string_view text) {
  auto url = ParseUrl(text);
  if (!url.ok() || url->host.empty()) {
    return InvalidArgument("auth.jwks_url does not parse");
  }
  JwksSource source;
  source.tls = EqualsIgnoreCase(url->scheme, "https");
  if (!source.tls && !(EqualsIgnoreCase(url->scheme, "http") && IsLoopbackHost(*url))) {
    return InvalidArgument("auth.jwks_url must be https, or http to a loopback host");
  }
  source.host = url->host;
  source.host_is_ip = url->host_kind != Url::HostKind::kRegName;
  source.port = url->port ? std::to_string(*url->port) : (source.tls ? "443" : "80");
  source.host_header = HostHeader(*url);
  source.target = RequestTarget(text);
  return source;
}

Result<std::shared_ptr<asio::ssl::context>> MakeJwksTlsContext() {
  auto context = net::MakeClientTlsContext({.alpn = {"http/1.1"}});
  if (!context.ok()) {
    return Internal(context.error() == "the TLS trust store cannot be loaded"
                        ? "the TLS trust store cannot be loaded"
                        : "the TLS client cannot be set up");
  }
  return std::move(context).value();
}

asio::awaitable<Result<std::string>> FetchJwks(JwksSource source,
                                               std::shared_ptr<asio::ssl::context> tls,
                                               std::chrono::steady_clock::time_point deadline) {
  net::HttpClientOptions options;
  options.tls_context = std::move(tls);
  options.max_header_bytes = kMaxHeaderBytes;
  options.max_idle_per_origin = 0;  // one fetch, one connection
  auto client = net::HttpClient::Create(co_await asio::this_coro::executor, std::move(options));
  if (!client.ok()) {
    co_return Internal("the TLS client cannot be set up");
  }
  // implements: AUTH-015 (request): a GET with no credential.
  net::HttpRequest request;
  request.url = (source.tls ? "https://" : "http://") + source.host_header + source.target;
  request.headers.push_back(net::Header{"accept", "application/json"});
  request.headers.push_back(net::Header{"connection", "close"});
  // implements: AUTH-033 (time): resolve, connect, TLS and the body share one deadline.
  request.deadline = deadline;
  // implements: AUTH-033 (size): a declared or actual larger body fails the fetch.
  request.max_body_bytes = kMaxJwksBodyBytes;
  auto response = co_await (*client)->Send(std::move(request));
  if (!response.ok()) {
    co_return FetchFailure(response.error().kind);
  }
  // implements: AUTH-015 (no redirect is followed: a 3xx fails like any other non-2xx)
  if (response->status < 200 || response->status > 299) {
    co_return Unavailable("the JWKS answer is not a 2xx");
  }
  co_return std::move(response->body);
}

}  // namespace xb::auth
