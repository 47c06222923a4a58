#include "net/http_client.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>

#include "base/url.h"
#include "net/http_client_h2.h"
#include "net/tls_client.h"

namespace xb::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using http_client_detail::H2ClientConnection;
using http_client_detail::H2Outcome;
using http_client_detail::TlsStream;

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

HttpError Timeout() { return HttpError{HttpErrorKind::kTimeout, "the deadline passed"}; }

}  // namespace

std::string_view HttpErrorKindName(HttpErrorKind kind) {
  switch (kind) {
    case HttpErrorKind::kInvalidRequest:
      return "invalid_request";
    case HttpErrorKind::kResolve:
      return "resolve";
    case HttpErrorKind::kVetoed:
      return "vetoed";
    case HttpErrorKind::kConnect:
      return "connect";
    case HttpErrorKind::kTls:
      return "tls";
    case HttpErrorKind::kTimeout:
      return "timeout";
    case HttpErrorKind::kBodyTooLarge:
      return "body_too_large";
    case HttpErrorKind::kProtocol:
      return "protocol";
    case HttpErrorKind::kClosed:
      return "closed";
    case HttpErrorKind::kRedirect:
      return "redirect";
  }
  return "unknown";
}

namespace {

const std::string* FindHeader(const std::vector<Header>& headers, std::string_view name) {
  for (const auto& h : headers) {
    if (h.name == name) {
      return &h.value;
    }
  }
  return nullptr;
}

}  // namespace

const std::string* HttpHead::Find(std::string_view name) const { return FindHeader(headers, name); }

const std::string* HttpResponse::Find(std::string_view name) const {
  return FindHeader(headers, name);
}

struct HttpClient::Origin {
  bool tls = false;
  std::string host;       // as written; an IPv6 literal without brackets
  uint16_t port = 0;      // the URL's, or 443 / 80
  std::string authority;  // host[:port] as Host / :authority carry it
  std::string path;       // path and query, "/" at least

  std::string Key() const { return (tls ? "https://" : "http://") + authority; }
};

namespace {

// The origin and request target of an http(s) URL with a host.
Expected<HttpClient::Origin, HttpError> ParseTarget(std::string_view text) {
  auto url = ParseUrl(text);
  if (!url.ok() || !IsHttpUrlWithHost(*url) || url->has_userinfo) {
    return HttpError{HttpErrorKind::kInvalidRequest, "the URL is not an http(s) URL with a host"};
  }
  HttpClient::Origin origin;
  origin.tls = EqualsIgnoreCase(url->scheme, "https");
  origin.host = url->host;
  origin.port = url->port.value_or(origin.tls ? 443 : 80);
  origin.authority = HostHeader(*url);
  origin.path = RequestTarget(text);
  return origin;
}

// The resolve hook's verdict on `addresses` (all of them when there is no hook).
Expected<ResolvedAddresses, HttpError> ApplyResolveHook(const ResolveHook& hook,
                                                        std::string_view host,
                                                        ResolvedAddresses addresses) {
  if (!hook) {
    return addresses;
  }
  auto chosen = hook(host, std::move(addresses));
  if (!chosen.ok()) {
    return HttpError{HttpErrorKind::kVetoed, std::move(chosen).error()};
  }
  if (chosen->empty()) {
    return HttpError{HttpErrorKind::kVetoed, "no address was left to connect to"};
  }
  return std::move(chosen).value();
}

// Resolves `origin` within `deadline` (a timer cancels the resolver), or takes its fixed address
// from options.static_hosts, and applies the hook.
asio::awaitable<Expected<ResolvedAddresses, HttpError>> Resolve(const HttpClient::Origin& origin,
                                                                const HttpClientOptions& options,
                                                                Clock::time_point deadline) {
  if (auto fixed = options.static_hosts.find(origin.host); fixed != options.static_hosts.end()) {
    co_return ApplyResolveHook(options.resolve_hook, origin.host, {fixed->second});
  }
  auto executor = co_await asio::this_coro::executor;
  auto resolver = std::make_shared<tcp::resolver>(executor);
  asio::steady_timer guard(executor);
  guard.expires_at(deadline);
  guard.async_wait([weak = std::weak_ptr<tcp::resolver>(resolver)](boost::system::error_code ec) {
    if (auto r = weak.lock(); !ec && r != nullptr) {
      r->cancel();
    }
  });
  auto [ec, results] = co_await resolver->async_resolve(origin.host, std::to_string(origin.port),
                                                        tcp::resolver::numeric_service, kNoThrow);
  guard.cancel();
  if (Clock::now() >= deadline) {
    co_return Timeout();
  }
  if (ec || results.empty()) {
    co_return HttpError{HttpErrorKind::kResolve, "the host did not resolve"};
  }
  ResolvedAddresses addresses;
  for (const auto& entry : results) {
    addresses.push_back(entry.endpoint());
  }
  co_return ApplyResolveHook(options.resolve_hook, origin.host, std::move(addresses));
}

HttpError FromIoError(boost::system::error_code ec, HttpErrorKind otherwise,
                      std::string_view words) {
  if (ec == beast::error::timeout) {
    return Timeout();
  }
  return HttpError{otherwise, std::string(words)};
}

}  // namespace

// A kept HTTP/1.1 connection: plain or TLS, and the bytes read past the last response.
struct H1Connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<TlsStream> tls;
  beast::flat_buffer buffer;
  Clock::time_point idle_since;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  // An idle connection the server closed (or wrote to unasked) is not one to send on.
  bool PeerClosed() {
    char byte;
    const ssize_t n = ::recv(lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  }
};

// A connection attempt that may come up HTTP/2. Requests to its origin that start while it runs
// wait for it rather than open connections of their own: a burst to a fresh HTTP/2 origin (a
// push dispatcher's hundreds in flight to APNs) then costs one TLS handshake, not one each.
struct ConnectAttempt {
  bool done = false;
  bool shared = false;  // it came up HTTP/2 and joined its pool
  // Each waiter's deadline timer, cancelled to wake it; a waiter that timed out is gone.
  std::vector<std::weak_ptr<asio::steady_timer>> waiters;

  void Finish(bool joined_pool) {
    done = true;
    shared = joined_pool;
    for (auto& waiter : waiters) {
      if (auto timer = waiter.lock(); timer != nullptr) {
        timer->cancel();
      }
    }
    waiters.clear();
  }
};

struct HttpClient::Pool {
  std::vector<std::unique_ptr<H1Connection>> idle;      // most recent last
  std::vector<std::shared_ptr<H2ClientConnection>> h2;  // open ones; the first with room serves
  std::shared_ptr<ConnectAttempt> connecting;           // at most one at a time (see ConnectFor)
  bool chose_http1 = false;  // the last TLS connection chose HTTP/1.1: no attempt is waited for

  // The kept HTTP/2 connections still open (the others are dropped: they end on their own).
  size_t OpenH2() {
    std::erase_if(h2, [](const auto& connection) { return !connection->open(); });
    return h2.size();
  }
  // An open HTTP/2 connection below the server's stream limit, or null.
  std::shared_ptr<H2ClientConnection> H2WithRoom() {
    OpenH2();
    for (const auto& connection : h2) {
      if (connection->usable()) {
        return connection;
      }
    }
    return nullptr;
  }
  // A kept HTTP/1.1 connection still fit to send on, or null.
  std::unique_ptr<H1Connection> TakeIdle(std::chrono::seconds idle_timeout) {
    while (!idle.empty()) {
      auto connection = std::move(idle.back());
      idle.pop_back();
      if (Clock::now() - connection->idle_since <= idle_timeout && !connection->PeerClosed()) {
        return connection;
      }
    }
    return nullptr;
  }
};

namespace {

// A new connection: HTTP/1.1, or HTTP/2 when ALPN chose it.
struct Connected {
  std::unique_ptr<H1Connection> h1;
  std::shared_ptr<H2ClientConnection> h2;
  bool kept = false;  // h2 joined its origin's pool (else it serves one request and is closed)
};

asio::awaitable<Expected<Connected, HttpError>> Connect(const HttpClient::Origin& origin,
                                                        const HttpClientOptions& options,
                                                        asio::ssl::context& tls,
                                                        Clock::time_point deadline) {
  XB_TRY_CO(ResolvedAddresses addresses, co_await Resolve(origin, options, deadline));
  auto executor = co_await asio::this_coro::executor;
  beast::tcp_stream tcp_stream(executor);
  tcp_stream.expires_at(deadline);
  auto [cec, endpoint] = co_await tcp_stream.async_connect(addresses, kNoThrow);
  (void)endpoint;
  if (cec) {
    co_return FromIoError(cec, HttpErrorKind::kConnect, "no address accepted a connection");
  }
  Connected connected;
  if (!origin.tls && options.http2_only) {  // h2c with prior knowledge (RFC 9113 3.3)
    connected.h2 =
        H2ClientConnection::Start(std::make_unique<beast::tcp_stream>(std::move(tcp_stream)));
    if (connected.h2 == nullptr) {
      co_return HttpError{HttpErrorKind::kProtocol, "the HTTP/2 session cannot be set up"};
    }
    co_return connected;
  }
  connected.h1 = std::make_unique<H1Connection>();
  if (!origin.tls) {
    connected.h1->plain = std::make_unique<beast::tcp_stream>(std::move(tcp_stream));
    co_return connected;
  }
  auto stream = std::make_unique<TlsStream>(std::move(tcp_stream), tls);
  if (!SetTlsPeerName(stream->native_handle(), origin.host)) {
    co_return HttpError{HttpErrorKind::kTls, "the host cannot be verified"};
  }
  auto [hec] = co_await stream->async_handshake(asio::ssl::stream_base::client, kNoThrow);
  if (hec) {
    co_return FromIoError(hec, HttpErrorKind::kTls, "the TLS handshake failed");
  }
  const unsigned char* alpn = nullptr;
  unsigned alpn_size = 0;
  SSL_get0_alpn_selected(stream->native_handle(), &alpn, &alpn_size);
  if (std::string_view(reinterpret_cast<const char*>(alpn), alpn_size) == "h2") {
    connected.h2 = H2ClientConnection::Start(std::move(stream));
    if (connected.h2 == nullptr) {
      co_return HttpError{HttpErrorKind::kProtocol, "the HTTP/2 session cannot be set up"};
    }
    connected.h1.reset();
    co_return connected;
  }
  if (options.http2_only) {
    co_return HttpError{HttpErrorKind::kProtocol, "the server did not choose HTTP/2"};
  }
  connected.h1->tls = std::move(stream);
  co_return connected;
}

// Waits until `attempt` ends (kTimeout when `deadline` passes first). Suspends.
asio::awaitable<Expected<void, HttpError>> WaitFor(std::shared_ptr<ConnectAttempt> attempt,
                                                   Clock::time_point deadline) {
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor, deadline);
  attempt->waiters.push_back(timer);
  auto [ec] = co_await timer->async_wait(kNoThrow);  // cancelled by Finish, or the deadline
  (void)ec;
  if (!attempt->done || Clock::now() >= deadline) {
    co_return Timeout();
  }
  co_return Expected<void, HttpError>::Ok();
}

// A new connection for a request to `pool`'s origin. When it may come up HTTP/2 and no other
// attempt runs, it becomes pool.connecting, which requests starting meanwhile wait for. An
// HTTP/2 connection joins the pool while the origin has fewer than max_http2_per_origin open.
asio::awaitable<Expected<Connected, HttpError>> ConnectFor(HttpClient::Pool& pool,
                                                           const HttpClient::Origin& origin,
                                                           const HttpClientOptions& options,
                                                           asio::ssl::context& tls,
                                                           Clock::time_point deadline) {
  std::shared_ptr<ConnectAttempt> attempt;
  const bool may_be_h2 =
      options.http2_only || (origin.tls && options.offer_http2 && !pool.chose_http1);
  if (may_be_h2 && pool.connecting == nullptr) {
    attempt = std::make_shared<ConnectAttempt>();
    pool.connecting = attempt;
  }
  auto made = co_await Connect(origin, options, tls, deadline);
  if (made.ok() && origin.tls) {
    pool.chose_http1 = made->h2 == nullptr;
  }
  if (made.ok() && made->h2 != nullptr && pool.OpenH2() < options.max_http2_per_origin) {
    pool.h2.push_back(made->h2);
    made->kept = true;
  }
  if (attempt != nullptr) {
    pool.connecting.reset();  // this attempt: no other is registered while one runs
    attempt->Finish(/*joined_pool=*/made.ok() && made->kept);
  }
  co_return made;
}

// What an HTTP/1.1 exchange left: the response or an error, whether the connection may serve
// another request, and whether the request may go again on a new one (nothing came back on a
// kept connection the server had meanwhile closed).
struct H1Outcome {
  Expected<HttpResponse, HttpError> result;
  bool keep = false;
  bool retry = false;
};

HttpError ReadError(boost::system::error_code ec) {
  if (ec == beast::error::timeout) {
    return Timeout();
  }
  if (ec == http::error::body_limit) {
    return HttpError{HttpErrorKind::kBodyTooLarge, "the response body is over its limit"};
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::ssl::error::stream_truncated) {
    return HttpError{HttpErrorKind::kClosed,
                     "the server closed the connection before the response was complete"};
  }
  return HttpError{HttpErrorKind::kProtocol, "the server's answer is not valid HTTP"};
}

HttpHead HeadOf(const http::response<http::string_body>& message) {
  HttpHead head{.status = message.result_int()};
  for (const auto& field : message) {
    head.headers.push_back(Header{AsciiLower(field.name_string()), std::string(field.value())});
  }
  return head;
}

template <typename Stream>
asio::awaitable<H1Outcome> H1Exchange(Stream& stream, H1Connection& connection,
                                      const HttpRequest& request, const HttpClient::Origin& origin,
                                      size_t max_header_bytes) {
  connection.lowest().expires_at(request.deadline);
  http::request<http::string_body> out;
  out.method_string(request.method);
  out.target(origin.path);
  out.version(11);
  out.set(http::field::host, origin.authority);
  for (const auto& header : request.headers) {
    out.set(header.name, header.value);
  }
  out.body() = request.body;
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    out.prepare_payload();
  }
  auto [wec, written] = co_await http::async_write(stream, out, kNoThrow);
  (void)written;
  if (wec) {
    co_return H1Outcome{FromIoError(wec, HttpErrorKind::kClosed, "the request could not be sent"),
                        false, wec != beast::error::timeout};
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(request.max_body_bytes);
  parser.header_limit(static_cast<uint32_t>(max_header_bytes));
  parser.skip(request.method == "HEAD");
  auto [rec, read] = co_await http::async_read(stream, connection.buffer, parser, kNoThrow);
  (void)read;
  if (rec) {
    const bool nothing_came = !parser.got_some() && rec != beast::error::timeout;
    HttpError error = ReadError(rec);
    // Beast counts the head done before it checks a declared length against body_limit, so an
    // over-long Content-Length comes back with its head too.
    if (parser.is_header_done()) {
      error.head = HeadOf(parser.get());
    }
    co_return H1Outcome{std::move(error), false, nothing_came};
  }
  HttpHead head = HeadOf(parser.get());
  HttpResponse response;
  response.status = head.status;
  response.headers = std::move(head.headers);
  response.body = std::move(parser.get().body());
  co_return H1Outcome{std::move(response), parser.get().keep_alive()};
}

asio::awaitable<H1Outcome> H1Send(H1Connection& connection, const HttpRequest& request,
                                  const HttpClient::Origin& origin, size_t max_header_bytes) {
  if (connection.tls) {
    co_return co_await H1Exchange(*connection.tls, connection, request, origin, max_header_bytes);
  }
  co_return co_await H1Exchange(*connection.plain, connection, request, origin, max_header_bytes);
}

// Whether a request the server did not process may go again (RFC 9113 8.7): within its deadline
// and while `retries_left` allows.
bool MayGoAgain(const H2Outcome& outcome, const HttpRequest& request, int retries_left) {
  return outcome.unprocessed && retries_left > 0 && Clock::now() < request.deadline;
}

// The request on `h2`, sent there again while the server did not process it, the connection
// stays open and MayGoAgain (each time takes one of `retries_left`). Suspends.
// RFC 9113 8.7: the same connection first; nghttp2 holds the new stream until the server's
// SETTINGS_MAX_CONCURRENT_STREAMS allows it (a connection that allowed one stream at first, as
// APNs's do, refused the others of a burst sent before its SETTINGS arrived).
asio::awaitable<H2Outcome> SendOnH2(std::shared_ptr<H2ClientConnection> h2,
                                    const HttpRequest& request, const HttpClient::Origin& origin,
                                    int& retries_left) {
  while (true) {
    // A named local, not a braced temporary: GCC 12 frees such an argument of a co_await-ed
    // call twice.
    http_client_detail::H2Request on_h2{&request, origin.authority, origin.path};
    H2Outcome outcome = co_await h2->Send(std::move(on_h2));
    if (!MayGoAgain(outcome, request, retries_left) || !h2->open()) {
      co_return outcome;
    }
    --retries_left;
  }
}

// The request on a kept HTTP/1.1 connection or a new connection (HTTP/1.1 or HTTP/2; only an
// HTTP/2 outcome is ever unprocessed).
asio::awaitable<H2Outcome> SendOnNewOrIdle(HttpClient::Pool& pool, const HttpClient::Origin& origin,
                                           const HttpRequest& request,
                                           const HttpClientOptions& options,
                                           asio::ssl::context& tls, int& retries_left) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<H1Connection> connection = pool.TakeIdle(options.idle_timeout);
    const bool reused = connection != nullptr;
    if (!reused) {
      auto made = co_await ConnectFor(pool, origin, options, tls, request.deadline);
      if (!made.ok()) {
        co_return H2Outcome{std::move(made).error()};
      }
      if (made->h2 != nullptr) {
        H2Outcome outcome = co_await SendOnH2(made->h2, request, origin, retries_left);
        if (!made->kept) {
          made->h2->Close();  // over max_http2_per_origin: used once
        }
        co_return outcome;
      }
      connection = std::move(made->h1);
    }
    H1Outcome outcome = co_await H1Send(*connection, request, origin, options.max_header_bytes);
    if (!outcome.result.ok() && reused && outcome.retry) {
      continue;  // a kept connection the server had closed: once more on a new one
    }
    if (outcome.result.ok()) {
      outcome.result->reused_connection = reused;
      if (outcome.keep && pool.idle.size() < options.max_idle_per_origin) {
        connection->lowest().expires_never();
        connection->idle_since = Clock::now();
        pool.idle.push_back(std::move(connection));
      }
    }
    co_return H2Outcome{std::move(outcome.result)};
  }
  co_return H2Outcome{HttpError{HttpErrorKind::kClosed, "the server closed the connection"}};
}

// One try of the request through `pool`: a kept HTTP/2 connection with room, the attempt in
// progress, a kept HTTP/1.1 connection or a new one. Suspends.
asio::awaitable<H2Outcome> SendOnPool(HttpClient::Pool& pool, const HttpClient::Origin& origin,
                                      const HttpRequest& request, const HttpClientOptions& options,
                                      asio::ssl::context& tls, int& retries_left) {
  bool may_wait = true;
  while (true) {
    if (auto h2 = pool.H2WithRoom(); h2 != nullptr) {
      H2Outcome outcome = co_await SendOnH2(h2, request, origin, retries_left);
      if (outcome.result.ok()) {
        outcome.result->reused_connection = true;
      }
      co_return outcome;
    }
    if (!may_wait || pool.connecting == nullptr) {
      break;
    }
    auto attempt = pool.connecting;
    if (auto waited = co_await WaitFor(attempt, request.deadline); !waited.ok()) {
      co_return H2Outcome{std::move(waited).error()};
    }
    // Came up HTTP/2 but full by our turn: the next attempt (a second connection) is worth
    // waiting for too. Came up HTTP/1.1, failed, or was not kept: our own connection, as before.
    may_wait = attempt->shared;
  }
  co_return co_await SendOnNewOrIdle(pool, origin, request, options, tls, retries_left);
}

bool IsRedirect(unsigned status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

Expected<std::unique_ptr<HttpClient>, std::string> HttpClient::Create(
    asio::any_io_executor executor, HttpClientOptions options) {
  if (options.tls_context != nullptr) {
    auto shared = options.tls_context;
    return std::unique_ptr<HttpClient>(
        new HttpClient(std::move(executor), std::move(options), std::move(shared)));
  }
  TlsClientOptions tls{.ca_file = options.ca_file, .alpn = {"http/1.1"}};
  if (options.http2_only) {
    tls.alpn = {"h2"};
  } else if (options.offer_http2) {
    tls.alpn.insert(tls.alpn.begin(), "h2");
  }
  XB_TRY(auto context, MakeClientTlsContext(tls));
  return std::unique_ptr<HttpClient>(
      new HttpClient(std::move(executor), std::move(options), std::move(context)));
}

HttpClient::HttpClient(asio::any_io_executor executor, HttpClientOptions options,
                       std::shared_ptr<asio::ssl::context> tls)
    : executor_(std::move(executor)), options_(std::move(options)), tls_(std::move(tls)) {}

HttpClient::~HttpClient() {
  for (auto& [key, pool] : pools_) {
    for (auto& h2 : pool->h2) {
      h2->Close();
    }
  }
}

size_t HttpClient::kept_connections() const {
  size_t n = 0;
  for (const auto& [key, pool] : pools_) {
    n += pool->idle.size();
    for (const auto& h2 : pool->h2) {
      n += h2->open() ? 1 : 0;
    }
  }
  return n;
}

asio::awaitable<Expected<HttpResponse, HttpError>> HttpClient::Send(HttpRequest request) {
  for (int hop = 0;; ++hop) {
    XB_TRY_CO(HttpResponse response, co_await SendOnce(request));
    const std::string* location = response.Find("location");
    if (!IsRedirect(response.status) || request.redirects == RedirectPolicy::kReturn ||
        location == nullptr) {
      co_return response;
    }
    if (request.redirects == RedirectPolicy::kRefuse) {
      co_return HttpError{HttpErrorKind::kRedirect, "the server answered with a redirect"};
    }
    if (hop >= request.max_redirects) {
      co_return HttpError{HttpErrorKind::kRedirect, "the server redirected too many times"};
    }
    XB_TRY_CO(Origin origin, ParseTarget(request.url));
    if (location->starts_with("/") && !location->starts_with("//")) {
      request.url = origin.Key() + *location;
    } else if (ParseTarget(*location).ok()) {
      request.url = *location;
    } else {
      co_return HttpError{HttpErrorKind::kRedirect, "the redirect location is not usable"};
    }
    // RFC 9110 15.4: 303 asks for a GET; 301 and 302 turn a POST into one in practice.
    if (response.status == 303 ||
        ((response.status == 301 || response.status == 302) && request.method == "POST")) {
      request.method = "GET";
      request.body.clear();
    }
  }
}

asio::awaitable<Expected<HttpResponse, HttpError>> HttpClient::SendOnce(
    const HttpRequest& request) {
  XB_TRY_CO(Origin origin, ParseTarget(request.url));
  auto& slot = pools_[origin.Key()];
  if (slot == nullptr) {
    slot = std::make_unique<Pool>();
  }
  Pool& pool = *slot;  // pools are never erased while the client lives
  // RFC 9113 8.7: a request the server did not process goes again by itself, a bounded number of
  // times; on its connection while that stays open (SendOnH2), else through the pool again: a
  // kept connection, the attempt in progress, or a new one.
  int retries_left = options_.max_refused_retries;
  while (true) {
    H2Outcome outcome = co_await SendOnPool(pool, origin, request, options_, *tls_, retries_left);
    if (!MayGoAgain(outcome, request, retries_left)) {
      co_return std::move(outcome.result);
    }
    --retries_left;
  }
}

}  // namespace xb::net
