#include "net/listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>

#include "net/http1/connection.h"
#include "net/http2/connection.h"
#include "net/tcp_stream.h"
#include "net/tls_stream.h"

namespace xb::net {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Reads until the first bytes tell HTTP/2 prior knowledge from HTTP/1.1, then serves.
template <typename C>
asio::awaitable<void> RunTracked(std::shared_ptr<C> conn, ConnectionSet& set, std::string initial) {
  set.Add(conn);
  co_await conn->Run(std::move(initial));
  set.Remove(conn.get());
}

asio::awaitable<void> Serve(std::unique_ptr<ByteStream> stream, ExchangeFactory& factory,
                            ConnectionSet& set, ListenerOptions options) {
  std::string initial;
  char buf[64];
  // With ALPN the protocol is already known; the preface is still checked below for h2.
  while (stream->alpn() != "http/1.1") {
    const size_t have = std::min(initial.size(), kHttp2Preface.size());
    if (std::string_view(initial).substr(0, have) != kHttp2Preface.substr(0, have)) {
      break;  // diverged from the preface: HTTP/1.1
    }
    if (initial.size() >= kHttp2Preface.size()) {
      break;  // full preface
    }
    boost::system::error_code ec;
    const size_t n = co_await stream->ReadSome(asio::buffer(buf), ec);
    if (ec) {
      co_return;
    }
    initial.append(buf, n);
  }
  if (initial.starts_with(kHttp2Preface)) {
    auto conn = std::make_shared<http2::Connection>(
        std::move(stream), factory,
        http2::Options{.max_concurrent_streams = options.max_http2_streams});
    co_await RunTracked(std::move(conn), set, std::move(initial));
  } else {
    auto conn = std::make_shared<http1::Connection>(
        std::move(stream), factory, http1::Options{.max_body_bytes = options.max_http1_body_bytes});
    co_await RunTracked(std::move(conn), set, std::move(initial));
  }
}

asio::awaitable<void> ServeTls(tcp::socket socket, Worker worker, ListenerOptions options) {
  auto stream = std::make_unique<TlsStream>(std::move(socket), *options.tls);
  if (!co_await stream->Handshake()) {
    stream->Close();
    co_return;
  }
  co_await Serve(std::move(stream), *worker.factory, *worker.connections, options);
}

}  // namespace

Result<std::unique_ptr<Listener>> Listener::Create(asio::io_context& accept_io,
                                                   std::vector<Worker> workers,
                                                   const std::string& host, uint16_t port,
                                                   ListenerOptions options) {
  const std::string where =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    return Unavailable("cannot bind " + where + " (not a numeric address)");
  }
  tcp::acceptor acceptor(accept_io);
  const tcp::endpoint endpoint(address, port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Unavailable("cannot bind " + where + " (" + ec.message() + ")");
  }
  auto listener =
      std::unique_ptr<Listener>(new Listener(std::move(acceptor), std::move(workers), options));
  listener->port_ = listener->acceptor_.local_endpoint().port();
  return listener;
}

Listener::Listener(tcp::acceptor acceptor, std::vector<Worker> workers, ListenerOptions options)
    : acceptor_(std::move(acceptor)), workers_(std::move(workers)), options_(options) {}

void Listener::Start() {
  asio::co_spawn(
      acceptor_.get_executor(),
      [this]() -> asio::awaitable<void> {
        while (acceptor_.is_open()) {
          Worker& worker = workers_[next_worker_];
          next_worker_ = (next_worker_ + 1) % workers_.size();
          boost::system::error_code ec;
          tcp::socket socket = co_await acceptor_.async_accept(
              *worker.io, asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
              co_return;
            }
            continue;  // e.g. EMFILE: keep accepting
          }
          if (options_.tls) {
            asio::co_spawn(*worker.io, ServeTls(std::move(socket), worker, options_),
                           asio::detached);
          } else {
            auto stream = std::make_unique<TcpStream>(std::move(socket));
            asio::co_spawn(*worker.io,
                           Serve(std::move(stream), *worker.factory, *worker.connections, options_),
                           asio::detached);
          }
        }
      },
      asio::detached);
}

void Listener::StopAccepting() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void Listener::CloseAll() {
  asio::post(acceptor_.get_executor(), [this] { StopAccepting(); });
  for (auto& worker : workers_) {
    asio::post(*worker.io, [set = worker.connections] { set->CloseAll(); });
  }
}

}  // namespace xb::net
