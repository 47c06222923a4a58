// Real loopback servers for net/http_client's tests: a test PKI made at run time with OpenSSL
// (a CA and a leaf for "localhost" and 127.0.0.1), an HTTP/1.1 server (Beast, plain or TLS) and
// an HTTP/2 server (nghttp2's server API, TLS with ALPN "h2", or plain h2c with prior knowledge).
// Both listen on 127.0.0.1:0, run on the test's io_context, count accepted connections and answer
// by path:
//   /hello     200 "hello"              /echo   200, the request body
//   /big       200, 64 KiB              /slow   never answers
//   /redirect  302 to /hello            /cut    a head that promises 100 bytes, then a close
// or, when given a Handler, by what it answers (push's provider fakes).
// Test-only code (linked into the tests, never into the server).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xb::net::testing {

struct TestPki {
  std::string ca_pem;
  std::string leaf_pem;  // SAN: DNS:localhost, IP:127.0.0.1, and the extra names asked for
  std::string key_pem;
  std::string ca_file;  // ca_pem written to a temporary file (removed with the object)
  ~TestPki();
};

// A fresh CA and leaf (P-256, SHA-256), valid from an hour ago for a day; the leaf also names
// `extra_dns_names` (e.g. the fixed provider hosts a pin sends to loopback).
std::unique_ptr<TestPki> MakeTestPki(const std::vector<std::string>& extra_dns_names = {});

// A server TLS context with the leaf, selecting `alpn` ("h2" or "http/1.1") when offered.
std::shared_ptr<boost::asio::ssl::context> ServerTls(const TestPki& pki, std::string alpn);

// What a scripted server saw (header names lower case) and what it answers.
struct ServedRequest {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // First value of header `name`, or "".
  std::string Header(std::string_view name) const;
};
struct ScriptedReply {
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers{};
  std::string body{};
  // HTTP/2: a trailer section after the body (gRPC's grpc-status).
  std::vector<std::pair<std::string, std::string>> trailers{};
  bool stall = false;       // send nothing at all (the client's deadline ends it)
  bool stall_body = false;  // send the head promising `body`, then nothing more
};
using Handler = std::function<ScriptedReply(const ServedRequest&)>;

// What the HTTP/2 server does besides answering (all off by default).
struct Http2Script {
  uint32_t max_concurrent_streams = 0;  // above 0: advertised in SETTINGS (0: none, unlimited)
  // The first this many requests of a connection are reset with RST_STREAM(REFUSED_STREAM)
  // unanswered (RFC 9113 8.7); kRefuseAll: every request.
  int refuse_first = 0;
  // Above 0: the server's first connection holds the requests it is not refusing until this many
  // have come, then sends GOAWAY naming the first one's stream as the last it processes and answers
  // only that one (the others are above the GOAWAY's last stream id: not processed).
  int goaway_after = 0;

  static constexpr int kRefuseAll = -1;
};

class LoopbackServer {
 public:
  enum class Protocol { kHttp1, kHttp2 };
  // `tls` null: plain HTTP/1.1, or h2c (prior knowledge) for kHttp2. A `handler` answers every
  // request; without one the fixed paths above answer. The handler runs on the io_context's thread.
  // HTTP/2 only: `script` (SETTINGS, refused streams, GOAWAY).
  LoopbackServer(boost::asio::io_context& io, Protocol protocol,
                 std::shared_ptr<boost::asio::ssl::context> tls, Handler handler = {},
                 Http2Script script = {});
  ~LoopbackServer();

  uint16_t port() const { return port_; }
  int accepted() const { return *accepted_; }
  // HTTP/2 requests received whole on every connection, refused and unanswered ones included.
  int h2_requests() const { return *h2_requests_; }

 private:
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::shared_ptr<int> accepted_ = std::make_shared<int>(0);
  std::shared_ptr<int> h2_requests_ = std::make_shared<int>(0);
};

}  // namespace xb::net::testing
