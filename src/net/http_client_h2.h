// One HTTP/2 client connection (RFC 9113) on nghttp2 in client mode, for net/http_client only:
// requests from any number of callers are multiplexed on it, each waiting for its own stream.
// The connection reads in a coroutine of its own and writes whatever nghttp2 has to send from
// another, both on the connection's executor; it lives as long as either runs or a holder keeps it.
//
// Threading: everything on the executor of the stream it was started with. Internal to xb_net
// (the only place that includes nghttp2).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "net/http_client.h"

struct nghttp2_session;

namespace xb::net::http_client_detail {

using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
using PlainStream = boost::beast::tcp_stream;

struct H2Request {
  const HttpRequest* request;  // method, headers, body, deadline, body cap; outlives Send
  std::string authority;       // host[:port]
  std::string path;            // path and query
};

// What one request on a stream came to: the response or an error, and whether the server did not
// process it (RFC 9113 8.7), so that it may be sent again: its stream was reset with
// REFUSED_STREAM before any response came, was above a GOAWAY's last stream id (nghttp2 closes
// those with REFUSED_STREAM too), or its HEADERS never left before the connection failed.
struct H2Outcome {
  Expected<HttpResponse, HttpError> result;
  bool unprocessed = false;
};

class H2ClientConnection : public std::enable_shared_from_this<H2ClientConnection> {
 public:
  // Takes a TLS stream whose handshake chose "h2", or a plain one to speak HTTP/2 on with prior
  // knowledge (h2c, RFC 9113 3.3); starts reading. Null when nghttp2 cannot be set up.
  static std::shared_ptr<H2ClientConnection> Start(std::unique_ptr<TlsStream> stream);
  static std::shared_ptr<H2ClientConnection> Start(std::unique_ptr<PlainStream> stream);
  ~H2ClientConnection();

  // Open and not told to go away: a new request may be sent on it.
  bool open() const;
  // open() and below the server's SETTINGS_MAX_CONCURRENT_STREAMS (taken as 100 until the
  // server's first SETTINGS arrive, nghttp2's default; streams over a limit the server lowered
  // later wait in nghttp2 for a free slot, within their deadlines).
  bool usable() const;
  // Ends every open stream with kClosed and closes the socket.
  void Close();

  // One request on a new stream; the response, or an error. Suspends until the response ends,
  // the connection fails or the request's deadline passes (the stream is then reset). A request
  // over the server's SETTINGS_MAX_CONCURRENT_STREAMS waits in nghttp2 (nghttp2_submit_request
  // queues it) until a stream ends, within its deadline. Not sent again here: the caller decides.
  boost::asio::awaitable<H2Outcome> Send(H2Request request);

  struct Stream;  // one request's state (http_client_h2.cc)

  // nghttp2 callbacks (static, called only inside mem_recv / mem_send / submit).
  void OnStreamEnd(Stream& stream);
  void FailStream(int32_t id, Stream& stream, HttpError error, bool reset);
  void Forget(int32_t id) { streams_.erase(id); }

 private:
  H2ClientConnection(std::unique_ptr<TlsStream> tls, std::unique_ptr<PlainStream> plain);
  static std::shared_ptr<H2ClientConnection> Begin(std::shared_ptr<H2ClientConnection> c);
  PlainStream& lowest();
  boost::asio::any_io_executor executor();
  // Submits the request on a new stream: its id, or negative when nghttp2 refuses it.
  int32_t Submit(const H2Request& request, Stream& stream);
  boost::asio::awaitable<void> ReadLoop(std::shared_ptr<H2ClientConnection> self);
  boost::asio::awaitable<void> WriteLoop(std::shared_ptr<H2ClientConnection> self);
  // Starts the write loop unless it runs.
  void Flush();
  // Ends every open stream with `error` and closes the connection.
  void FailAll(const HttpError& error);

  std::unique_ptr<TlsStream> tls_;      // one of the two is set
  std::unique_ptr<PlainStream> plain_;  // h2c
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::shared_ptr<Stream>> streams_;
  std::string out_;  // the write loop's buffer
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace xb::net::http_client_detail
