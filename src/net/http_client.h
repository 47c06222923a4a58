// HttpClient: the one outbound HTTP client (chain RPC, JWKS fetch; push and attachments next).
// HTTP/1.1 (Boost.Beast) and HTTP/2 (nghttp2, client mode), chosen by ALPN over TLS ("h2" first,
// then "http/1.1"); plain http:// is HTTP/1.1, or HTTP/2 with prior knowledge (h2c, RFC 9113 3.3)
// in a client made http2_only (a gRPC channel: the OTLP exporter's).
//
// What every request gets:
// - TLS trusting the system roots through OpenSSL's default verify paths (SSL_CERT_FILE /
//   SSL_CERT_DIR work), or a caller-supplied CA file; the peer's name checked (SNI + X509 host
//   check; an IP-literal host is checked as an IP address). See net/tls_client.h.
// - One deadline for the whole exchange: resolve, connect, TLS, write and read, body included.
// - A response-body cap (a declared or actual larger body fails with kBodyTooLarge).
// - No redirect followed unless the request asks: by default a 3xx is returned as a response
//   like any other status; RedirectPolicy::kRefuse makes it a kRedirect error, kFollow follows
//   up to max_redirects hops (absolute http(s) or absolute-path Location only, each hop through
//   the resolver hook again).
// - Kept connections per origin (scheme, host, port): an HTTP/1.1 connection goes back to its
//   origin's idle list after a complete keep-alive exchange and serves the next request there;
//   an HTTP/2 connection is shared by every request to its origin at once (multiplexed), up to
//   the server's SETTINGS_MAX_CONCURRENT_STREAMS; when every kept one is full, a request opens
//   another (kept while the origin has fewer than max_http2_per_origin, else used once).
// - One connection attempt at a time per origin where HTTP/2 may be chosen (TLS with "h2"
//   offered, and the origin's last connection did not choose HTTP/1.1): requests that start while
//   it runs wait for it, each within its own deadline. If it comes up HTTP/2 and is kept they
//   share it; if it comes up HTTP/1.1 or fails, each goes on to a connection of its own.
// - A request the server did not process (RFC 9113 8.7: an HTTP/2 stream reset with
//   REFUSED_STREAM before any response, above a GOAWAY's last stream id, or never sent before the
//   connection failed) is sent again by the client, up to max_refused_retries times and within its
//   deadline: on the same connection while it stays open (nghttp2 holds a stream over the server's
//   SETTINGS_MAX_CONCURRENT_STREAMS until one ends), else through the pool again. When the
//   retries run out it fails with kClosed ("the server did not process the request", or the
//   connection's failure).
// - A resolver hook that sees the addresses a name resolved to and may replace (pin) or refuse
//   (veto) them before anything connects (push's SSRF rules). IP-literal hosts go through it too.
//
// Errors are values (HttpError): a kind and plain words that never carry the URL, a header, the
// body or an address (OPS-014), so a caller may log them as they are. An error that came after
// the response head had arrived (the body timed out, was too large, was cut) also hands back that
// head, so a caller can still act on its status and headers (push keeps a Retry-After).
//
// Threading: an HttpClient is created, used and destroyed on one executor (a strand or a
// single-threaded io_context), like a net/ connection. Send suspends; requests may overlap. The
// client must outlive every Send it started; destroying it closes the kept connections.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "net/exchange.h"

namespace xb::net {

enum class HttpErrorKind {
  kInvalidRequest,  // the URL is not http(s) with a host, or the method or a header is unusable
  kResolve,         // the host did not resolve
  kVetoed,          // the resolver hook refused the addresses
  kConnect,         // no address accepted a connection
  kTls,             // handshake or certificate (trust, name) failed
  kTimeout,         // the deadline passed first
  kBodyTooLarge,    // the response body is over max_body_bytes
  kProtocol,        // the server's answer is not valid HTTP
  kClosed,          // the server closed the connection or stream before the response was
                    // complete, or did not process the request (RFC 9113 8.7) however often
                    // it went again (max_refused_retries)
  kRedirect,        // a 3xx refused (kRefuse), or too many or unusable redirects (kFollow)
};

// "resolve", "connect", ... (for metrics labels and tests).
std::string_view HttpErrorKindName(HttpErrorKind kind);

// A response's status and header fields, without its body.
struct HttpHead {
  unsigned status = 0;
  std::vector<Header> headers{};  // names lower case

  // First value of the header `name` (lower case), or nullptr.
  const std::string* Find(std::string_view name) const;
};

struct HttpError {
  HttpErrorKind kind;
  std::string message;  // plain words; never the URL, a header, the body or an address
  // Set when the failure came after the whole head of the final response had arrived (a 1xx head
  // does not count), on HTTP/1.1 and HTTP/2 alike: the body then timed out (kTimeout), was over
  // max_body_bytes, declared or actual (kBodyTooLarge), was cut (kClosed) or was not valid
  // (kProtocol). Data from the server, not words: never logged (OPS-014).
  std::optional<HttpHead> head{};
};

enum class RedirectPolicy { kReturn, kRefuse, kFollow };

struct HttpRequest {
  std::string method = "GET";
  std::string url{};              // http:// or https://, with a host; a fragment is not sent
  std::vector<Header> headers{};  // names lower case; Host / :authority and content-length are set
  std::string body{};
  std::chrono::steady_clock::time_point deadline{};  // the whole exchange
  size_t max_body_bytes = 1 << 20;
  RedirectPolicy redirects = RedirectPolicy::kReturn;
  int max_redirects = 5;  // with kFollow
};

struct HttpResponse {
  unsigned status = 0;
  std::vector<Header> headers{};  // names lower case
  std::string body{};
  // HTTP/2: the fields of the trailer section (a HEADERS frame after the final head, as gRPC's
  // grpc-status), names lower case, kept apart from `headers`. HTTP/1.1: always empty.
  std::vector<Header> trailers{};
  HttpVersion version = HttpVersion::kHttp1;
  bool reused_connection = false;  // served on a connection kept from an earlier request

  // First value of the header `name` (lower case), or nullptr.
  const std::string* Find(std::string_view name) const;
};

using ResolvedAddresses = std::vector<boost::asio::ip::tcp::endpoint>;
// Sees the host as written in the URL and what it resolved to (in resolver order); returns the
// addresses to try (the same, fewer, or others: a pin), or plain words refusing them (kVetoed;
// the words must not carry the address). A host that did not resolve is shown with no addresses:
// the hook may pin it, and returning none (or the empty list it got) keeps the kResolve error.
// Not called when the deadline passed while resolving. Called on the client's executor; must not
// block.
using ResolveHook = std::function<Expected<ResolvedAddresses, std::string>(
    std::string_view host, ResolvedAddresses addresses)>;

struct HttpClientOptions {
  std::string
      ca_file{};  // PEM CA bundle to trust instead of the system roots (tests); empty: system
  // A context made by MakeClientTlsContext (net/tls_client.h) to share between clients (made once,
  // not per client); ca_file is then unused. Its ALPN list decides HTTP/2.
  std::shared_ptr<boost::asio::ssl::context> tls_context{};
  ResolveHook resolve_hook{};  // empty: every resolved address is used
  // Hosts answered from this table instead of DNS (like curl's --resolve), before resolve_hook:
  // the URL, the Host header, SNI and the certificate name check stay the host's. The shipped
  // binary sets none; its test build points fixed provider hosts at loopback fakes.
  std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> static_hosts{};
  bool offer_http2 = true;  // ALPN offers "h2" before "http/1.1"
  // HTTP/2 on every connection (gRPC): with prior knowledge over plain http:// (h2c), ALPN "h2"
  // alone over TLS; a TLS server that does not choose "h2" fails the request (kProtocol).
  bool http2_only = false;
  size_t max_header_bytes = 16384;
  size_t max_idle_per_origin = 4;         // kept HTTP/1.1 connections per origin
  std::chrono::seconds idle_timeout{30};  // a kept connection idle longer is closed, not reused
  size_t max_http2_per_origin = 4;        // kept HTTP/2 connections per origin (see above)
  // How many more times a request the server did not process (see above) is sent, at most.
  int max_refused_retries = 3;
};

class HttpClient {
 public:
  // Fails (plain words) when the TLS context cannot be made (trust store, CA file).
  static Expected<std::unique_ptr<HttpClient>, std::string> Create(
      boost::asio::any_io_executor executor, HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One request and its response (any status), or an error. Suspends.
  boost::asio::awaitable<Expected<HttpResponse, HttpError>> Send(HttpRequest request);

  // Connections kept open for reuse (idle HTTP/1.1 and open HTTP/2), for tests.
  size_t kept_connections() const;

  struct Origin;  // scheme, host and port (http_client.cc)
  struct Pool;    // one origin's kept connections and its connection attempt (http_client.cc)

 private:
  HttpClient(boost::asio::any_io_executor executor, HttpClientOptions options,
             std::shared_ptr<boost::asio::ssl::context> tls);
  boost::asio::awaitable<Expected<HttpResponse, HttpError>> SendOnce(const HttpRequest& request);

  // Const after construction.
  const boost::asio::any_io_executor executor_;
  const HttpClientOptions options_;
  const std::shared_ptr<boost::asio::ssl::context> tls_;

  std::map<std::string, std::unique_ptr<Pool>> pools_;  // by origin key
};

}  // namespace xb::net
