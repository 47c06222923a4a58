// One HTTP/1.1 server connection: requests parsed by Boost.Beast's parser fed from a ByteStream,
// one request at a time (keep-alive, no pipelining overlap). Used for gRPC-Web and CORS preflight.
// A streaming exchange is answered with chunked transfer coding as frames are produced; any other
// exchange is answered once complete, with content-length.
//
// Threading: runs on the stream's executor only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "net/byte_stream.h"
#include "net/connection.h"
#include "net/exchange.h"
#include "net/limits.h"

namespace xb::net::http1 {

struct Options {
  uint64_t max_body_bytes = 0;  // request bodies above this end the connection
  ConnectionLimits limits;
  // The first request head must have arrived by then (the handshake timeout, counted from
  // accept); later heads get limits.header_read_timeout from their first byte, and the wait for
  // that byte limits.idle_timeout.
  std::chrono::steady_clock::time_point first_request_deadline =
      std::chrono::steady_clock::time_point::max();
  Observer* observer = nullptr;  // not owned; required
  PeerAddress peer = {};         // copied into each request head
};

class Connection final : public ServerConnection, public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::unique_ptr<ByteStream> stream, ExchangeFactory& factory, Options options);

  // Serves requests until the peer closes or asks to. `initial` holds bytes already read while
  // sniffing. Suspends.
  boost::asio::awaitable<void> Run(std::string initial);
  void Close();
  void GracefulClose() override;

 private:
  struct Request;  // one request's parser (connection.cc)
  enum class HeadRead { kDone, kFailed, kTooLarge };
  enum class BodyRead { kDone, kEarly, kFailed };

  // Reads more input into input_; false at end of stream or once closed. Suspends.
  boost::asio::awaitable<bool> ReadMore();
  // Arms the deadline of a request head whose first byte is in.
  void ArmForHead();
  // Parses a request head from input_ and the stream, under the head deadlines (armed here; the
  // caller disarms). kTooLarge: past limits.max_header_list_bytes. Suspends.
  boost::asio::awaitable<HeadRead> ReadHead(Request& request);
  // Hands the parsed head to the factory; the exchange's waker wakes this connection.
  std::shared_ptr<Exchange> StartExchange(const Request& request);
  // Streams the request body into `exchange`. kEarly: its response completed first. Suspends.
  boost::asio::awaitable<BodyRead> ReadBody(Request& request, Exchange& exchange);
  // Serves the request whose head was read: body, response, completion. True when the
  // connection may read a next request. Suspends.
  boost::asio::awaitable<bool> Serve(Request& request);
  boost::asio::awaitable<void> WaitForWake();
  boost::asio::awaitable<bool> WriteResponse(Exchange& exchange, bool keep_alive);
  // While a request head is awaited: closes the connection at `at`, reporting `reason`.
  void ArmDeadline(std::chrono::steady_clock::time_point at, ConnectionEnd reason);
  void DisarmDeadline();

  std::unique_ptr<ByteStream> stream_;
  ExchangeFactory& factory_;
  Options options_;
  boost::asio::steady_timer wake_timer_;
  boost::asio::steady_timer deadline_timer_;
  std::chrono::steady_clock::time_point deadline_;
  ConnectionEnd deadline_reason_ = ConnectionEnd::kHandshakeTimeout;
  bool deadline_armed_ = false;
  bool wake_pending_ = false;
  bool closed_ = false;
  bool closing_ = false;         // close after the response in progress
  bool busy_ = false;            // a request is being served
  bool peer_gone_ = false;       // the peer closed during a streaming response
  Exchange* current_ = nullptr;  // the exchange being served; kept alive by Run while set
  // Run's buffers: input read but not parsed yet, and the read and body chunks.
  std::string input_;
  std::vector<char> read_buffer_;
  std::vector<char> body_buffer_;
  bool first_request_ = true;  // no request head has been read yet
};

}  // namespace xb::net::http1
