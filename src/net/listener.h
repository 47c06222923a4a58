// The gRPC port's acceptor: accepts on one executor, hands each connection to the next worker
// io_context round robin, sniffs the HTTP/2 client preface and runs the matching HTTP layer.
// Many connections and streams at once, no thread per connection.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "net/connection.h"
#include "net/exchange.h"

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
  // Stops accepting; open connections are left to finish.
  void StopAccepting();
  // Stops accepting and gracefully closes every open connection (posted to each worker).
  void CloseAll();
  uint16_t port() const { return port_; }

 private:
  Listener(boost::asio::ip::tcp::acceptor acceptor, std::vector<Worker> workers,
           ListenerOptions options);

  boost::asio::ip::tcp::acceptor acceptor_;
  std::vector<Worker> workers_;
  ListenerOptions options_;
  uint16_t port_ = 0;
  size_t next_worker_ = 0;
};

}  // namespace xb::net
