#include "auth/jwks_fetch.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "auth/jwks.h"
#include "base/url.h"

namespace xb::auth {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr uint32_t kMaxHeaderBytes = 16384;

// Exchanges one request on a connected stream (plain or TLS).
template <class Stream>
asio::awaitable<Result<std::string>> GetOn(Stream& stream, const JwksSource& source) {
  boost::system::error_code ec;
  // implements: AUTH-015 (request): a GET with no credential.
  http::request<http::empty_body> request{http::verb::get, source.target, 11};
  request.set(http::field::host, source.host_header);
  request.set(http::field::accept, "application/json");
  request.set(http::field::connection, "close");
  co_await http::async_write(stream, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return Unavailable("the JWKS request could not be sent");
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  // implements: AUTH-033 (size): a declared or actual larger body fails the fetch.
  parser.body_limit(kMaxJwksBodyBytes);
  parser.header_limit(kMaxHeaderBytes);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return Unavailable("the JWKS response could not be read");
  }
  // implements: AUTH-015 (no redirect is followed: a 3xx fails like any other non-2xx)
  const unsigned status = parser.get().result_int();
  if (status < 200 || status > 299) {
    co_return Unavailable("the JWKS answer is not a 2xx");
  }
  co_return std::move(parser.get().body());
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
  const std::string bracketed =
      url->host_kind == Url::HostKind::kIpv6 ? "[" + url->host + "]" : url->host;
  source.host_header = url->port ? bracketed + ":" + std::to_string(*url->port) : bracketed;
  // The target is the text after the authority, up to a fragment.
  const size_t authority = text.find("://") + 3;
  size_t start = text.find_first_of("/?#", authority);
  std::string_view rest = start == std::string_view::npos ? "" : text.substr(start);
  rest = rest.substr(0, rest.find('#'));
  source.target = rest.empty() || rest.front() != '/' ? "/" + std::string(rest) : std::string(rest);
  return source;
}

Result<std::shared_ptr<asio::ssl::context>> MakeJwksTlsContext() {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  boost::system::error_code ec;
  context->set_default_verify_paths(ec);
  if (ec) {
    return Internal("the TLS trust store cannot be loaded");
  }
  context->set_verify_mode(asio::ssl::verify_peer, ec);
  if (ec) {
    return Internal("the TLS client cannot be set up");
  }
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  return context;
}

asio::awaitable<Result<std::string>> FetchJwks(JwksSource source,
                                               std::shared_ptr<asio::ssl::context> tls,
                                               std::chrono::steady_clock::time_point deadline) {
  auto executor = co_await asio::this_coro::executor;
  boost::system::error_code ec;
  tcp::resolver resolver(executor);
  auto endpoints =
      co_await resolver.async_resolve(source.host, source.port, tcp::resolver::numeric_service,
                                      asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return Unavailable("the JWKS host does not resolve");
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    co_return Unavailable("the JWKS fetch timed out");
  }
  // implements: AUTH-033 (time): every step below shares one deadline, body included.
  beast::tcp_stream tcp_stream(executor);
  tcp_stream.expires_at(deadline);
  co_await tcp_stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return Unavailable("the JWKS host cannot be reached");
  }
  if (!source.tls) {
    co_return co_await GetOn(tcp_stream, source);
  }
  beast::ssl_stream<beast::tcp_stream&> stream(tcp_stream, *tls);
  SSL* ssl = stream.native_handle();
  if (source.host_is_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), source.host.c_str()) != 1) {
      co_return Internal("the JWKS host cannot be verified");
    }
  } else {
    if (SSL_set_tlsext_host_name(ssl, source.host.c_str()) != 1 ||
        SSL_set1_host(ssl, source.host.c_str()) != 1) {
      co_return Internal("the JWKS host cannot be verified");
    }
  }
  co_await stream.async_handshake(asio::ssl::stream_base::client,
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return Unavailable("the JWKS TLS handshake failed");
  }
  co_return co_await GetOn(stream, source);
}

}  // namespace xb::auth
