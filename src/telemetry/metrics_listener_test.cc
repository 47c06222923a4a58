#include "telemetry/metrics_listener.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/dynamic_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <string>
#include <thread>
#include <vector>

namespace xb::telemetry {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Runs an io_context on its own thread for the duration of a test.
class IoThread {
 public:
  IoThread() : guard_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~IoThread() {
    guard_.reset();
    io_.stop();
    thread_.join();
  }
  asio::io_context& io() { return io_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

// A blocking HTTP/1.1 client whose reads give up after 5 s, so a broken server fails the test
// instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    beast::error_code ec;
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
    timeval tv{5, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }

  http::response<http::string_body> Send(http::verb method, std::string_view target,
                                         beast::error_code* ec) {
    http::request<http::string_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.prepare_payload();
    http::write(socket_, req, *ec);
    http::response<http::string_body> res;
    if (!*ec) {
      http::read(socket_, buffer_, res, *ec);
    }
    return res;
  }

  http::response<http::string_body> Get(std::string_view target) {
    beast::error_code ec;
    auto res = Send(http::verb::get, target, &ec);
    EXPECT_FALSE(ec) << ec.message();
    return res;
  }

  tcp::socket& socket() { return socket_; }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

TEST(MetricsListenerTest, ServesMetricsAndKeepsTheConnection) {
  Metrics metrics("9.9.9");
  IoThread io;
  auto listener = MetricsListener::Create(io.io(), "127.0.0.1", 0, metrics);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  ASSERT_NE((*listener)->port(), 0);

  Client client((*listener)->port());
  auto res = client.Get("/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(res.body().find("xmtp_backend_info{version=\"9.9.9\"} 1\n"), std::string::npos);
  EXPECT_TRUE(res.keep_alive());

  // Same connection, fresh values.
  metrics.SetReady(true);
  res = client.Get("/metrics?name[]=x");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_NE(res.body().find("\nxmtp_backend_ready 1\n"), std::string::npos);

  res = client.Get("/");
  EXPECT_EQ(res.result(), http::status::not_found);
  res = client.Get("/metrics/extra");
  EXPECT_EQ(res.result(), http::status::not_found);

  beast::error_code ec;
  res = client.Send(http::verb::post, "/metrics", &ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result(), http::status::method_not_allowed);
}

TEST(MetricsListenerTest, OversizedRequestHeadIsRefused) {
  Metrics metrics("v");
  IoThread io;
  auto listener = MetricsListener::Create(io.io(), "127.0.0.1", 0, metrics);
  ASSERT_TRUE(listener.ok());
  Client client((*listener)->port());
  http::request<http::string_body> req(http::verb::get, "/metrics", 11);
  req.set("x-padding", std::string(16 * 1024, 'a'));
  beast::error_code ec;
  http::write(client.socket(), req, ec);
  // The server may close before reading everything; either a 431 or a closed connection is fine,
  // but the request must never be answered with the exposition.
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(client.socket(), buffer, res, ec);
  if (!ec) {
    EXPECT_EQ(res.result(), http::status::request_header_fields_too_large);
    EXPECT_FALSE(res.keep_alive());
  }
}

TEST(MetricsListenerTest, ConnectionsBeyondTheCapAreClosed) {
  Metrics metrics("v");
  IoThread io;
  auto listener = MetricsListener::Create(io.io(), "127.0.0.1", 0, metrics);
  ASSERT_TRUE(listener.ok());
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 64; ++i) {  // each answered once, so each is registered
    clients.push_back(std::make_unique<Client>((*listener)->port()));
    ASSERT_EQ(clients.back()->Get("/metrics").result(), http::status::ok);
  }
  Client extra((*listener)->port());
  beast::error_code ec;
  extra.Send(http::verb::get, "/metrics", &ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == http::error::end_of_stream ||
              ec == asio::error::connection_reset)
      << ec.message();

  clients.pop_back();  // a slot frees up once the server sees the close
  for (int attempt = 0; attempt < 100; ++attempt) {
    Client again((*listener)->port());
    auto res = again.Send(http::verb::get, "/metrics", &ec);
    if (!ec) {
      EXPECT_EQ(res.result(), http::status::ok);
      return;
    }
  }
  ADD_FAILURE() << "no slot freed after a client left";
}

// verifies: OPS-022 (a metrics address that cannot be bound is refused, naming the address)
TEST(MetricsListenerTest, BindFailureNamesTheAddress) {
  Metrics metrics("v");
  IoThread io;
  auto first = MetricsListener::Create(io.io(), "127.0.0.1", 0, metrics);
  ASSERT_TRUE(first.ok());
  const uint16_t port = (*first)->port();

  auto second = MetricsListener::Create(io.io(), "127.0.0.1", port, metrics);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << second.status().message();
}

TEST(MetricsListenerTest, StopClosesTheAcceptorAndOpenConnections) {
  Metrics metrics("v");
  IoThread io;
  auto listener = MetricsListener::Create(io.io(), "127.0.0.1", 0, metrics);
  ASSERT_TRUE(listener.ok());
  const uint16_t port = (*listener)->port();
  Client client(port);
  EXPECT_EQ(client.Get("/metrics").result(), http::status::ok);

  (*listener)->Stop();
  // The idle keep-alive connection is closed by the server: the read sees end of file (not the
  // 5 s receive timeout).
  char byte;
  beast::error_code ec;
  asio::read(client.socket(), asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, asio::error::eof) << ec.message();

  // And nothing accepts on the port any more.
  asio::io_context probe_io;
  tcp::socket probe(probe_io);
  probe.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace xb::telemetry
