// The gRPC port's acceptor: accepts on one executor, hands each connection to the next worker
// io_context round robin, sniffs the HTTP/2 client preface and runs the matching HTTP layer.
// Many connections and streams at once, no thread per connection.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "net/connection.h"
#include "net/exchange.h"
#include "net/limits.h"

namespace xb::net {

struct Worker {
  boost::asio::io_context* io = nullptr;
  ExchangeFactory* factory = nullptr;    // used only on `io`
  ConnectionSet* connections = nullptr;  // used only on `io`
};

struct ListenerOptions {
  uint32_t max_http2_streams = 100;
  uint64_t max_http1_body_bytes = 0;
  // When set, every connection is TLS with ALPN h2/http1.1 ([server.tls]).
  std::shared_ptr<boost::asio::ssl::context> tls;
  // server.max_connections: a connection accepted while this many are open is closed at once.
  uint64_t max_connections = 10000;
  // server.proxy_protocol: every connection begins with a PROXY protocol v2 header (before TLS),
  // whose client address is the connection's peer; one without a valid header is closed.
  bool proxy_protocol = false;
  ConnectionLimits limits;
  // Not owned; null reports nothing. See Observer for its lifetime.
  Observer* observer = nullptr;
};

class Listener {
 public:
  // Binds host:port (port 0 = ephemeral) on `accept_io`. Failure names the address.
  static Result<std::unique_ptr<Listener>> Create(boost::asio::io_context& accept_io,
                                                  std::vector<Worker> workers,
                                                  const std::string& host, uint16_t port,
                                                  ListenerOptions options);
  // Starts accepting. Call once.
  void Start();
  // Stops accepting (a backoff wait included); open connections are left to finish.
  void StopAccepting();
  // Tells every open connection that the server is draining (ServerConnection::NotifyShutdown;
  // posted to each worker). Accepting goes on: a new connection is answered as the drain says.
  void NotifyShutdown();
  // Stops accepting and gracefully closes every open connection (posted to each worker).
  void CloseAll();
  uint16_t port() const { return port_; }

 private:
  Listener(boost::asio::ip::tcp::acceptor acceptor, std::vector<Worker> workers,
           ListenerOptions options);
  boost::asio::awaitable<void> AcceptLoop();
  // Counts a failed accept and reports it at most once per interval.
  void ReportAcceptFailure(AcceptFailure failure);
  // Starts serving `socket` on `worker`, or closes it at once when the server is full.
  void Admit(boost::asio::ip::tcp::socket socket, Worker& worker);

  // Touched only on the accept executor, except open_connections_ (see below).
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  std::vector<Worker> workers_;
  ListenerOptions options_;
  NullObserver null_observer_;
  Observer* observer_;
  uint16_t port_ = 0;
  size_t next_worker_ = 0;
  // Failures not yet reported by AcceptFailing, by AcceptFailure, and when it last reported.
  std::array<uint64_t, 2> unreported_failures_{};
  std::chrono::steady_clock::time_point last_failure_report_{};
  bool failure_reported_ = false;
  // Open connections: incremented here, decremented on the workers when a connection ends
  // (shared, since a connection can outlive the listener in an io_context's destructor).
  std::shared_ptr<std::atomic<uint64_t>> open_connections_;
};

}  // namespace xb::net
