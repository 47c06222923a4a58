// http1::Connection over an in-memory byte stream: requests parsed one after another from the
// bytes already read, bodies streamed into the exchange, the answers of the head checks.
#include "net/http1/connection.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

namespace xb::net::http1 {
namespace {

namespace asio = boost::asio;

// Hands out `input` in reads of at most `chunk` bytes, then end of stream; keeps what is written.
class MemoryStream final : public ByteStream {
 public:
  MemoryStream(asio::any_io_executor executor, std::string input, size_t chunk, std::string* output)
      : executor_(std::move(executor)), input_(std::move(input)), chunk_(chunk), output_(output) {}

  asio::awaitable<size_t> ReadSome(asio::mutable_buffer buffer,
                                   boost::system::error_code& ec) override {
    const size_t n = std::min({buffer.size(), chunk_, input_.size() - at_});
    if (closed_ || n == 0) {
      ec = asio::error::eof;
      co_return 0;
    }
    input_.copy(static_cast<char*>(buffer.data()), n, at_);
    at_ += n;
    ec = {};
    co_return n;
  }
  asio::awaitable<void> WriteAll(asio::const_buffer buffer,
                                 boost::system::error_code& ec) override {
    output_->append(static_cast<const char*>(buffer.data()), buffer.size());
    ec = {};
    co_return;
  }
  void Close() override { closed_ = true; }
  asio::any_io_executor executor() override { return executor_; }

 private:
  asio::any_io_executor executor_;
  std::string input_;
  size_t at_ = 0;
  size_t chunk_;
  std::string* output_;
  bool closed_ = false;
};

// Answers "<path> <body bytes>" once the request ends; "/early" answers before its body is read.
class EchoExchange final : public Exchange {
 public:
  EchoExchange(std::string path, int* resets) : path_(std::move(path)), resets_(resets) {
    if (path_ == "/early") {
      Answer("refused");
    }
  }
  void OnRequestBody(std::string_view bytes) override { received_ += bytes.size(); }
  void OnRequestEnd() override { Answer(path_ + " " + std::to_string(received_)); }
  void OnReset() override { ++*resets_; }
  void OnResponseComplete() override {}
  bool streaming() const override { return false; }
  const ResponseHead* head() const override { return ready_ ? &head_ : nullptr; }
  size_t PullBody(char* dst, size_t max) override {
    const size_t n = std::min(max, body_.size());
    body_.copy(dst, n);
    body_.erase(0, n);
    return n;
  }
  size_t pending_body() const override { return body_.size(); }
  bool body_complete() const override { return ready_; }
  const std::vector<Header>& trailers() const override { return trailers_; }

 private:
  void Answer(std::string body) {
    head_.status = 200;
    body_ = std::move(body);
    ready_ = true;
  }

  std::string path_;
  int* resets_;
  size_t received_ = 0;
  bool ready_ = false;
  ResponseHead head_;
  std::string body_;
  std::vector<Header> trailers_;
};

class EchoFactory final : public ExchangeFactory {
 public:
  bool WantsHeader(std::string_view) const override { return true; }
  std::shared_ptr<Exchange> Start(RequestHead head, asio::any_io_executor, Waker) override {
    paths.push_back(head.path);
    return std::make_shared<EchoExchange>(head.path, &resets);
  }
  std::vector<std::string> paths;
  int resets = 0;
};

struct Served {
  std::string output;
  std::vector<std::string> paths;
  int resets = 0;
};

// Runs one connection over `input` (the first `initial` bytes as if read while sniffing).
Served Serve(std::string input, size_t chunk = 1 << 20, size_t initial = 0,
             uint32_t max_header_list_bytes = 32768) {
  asio::io_context io;
  EchoFactory factory;
  NullObserver observer;
  Served served;
  std::string sniffed = input.substr(0, initial);
  auto stream = std::make_unique<MemoryStream>(io.get_executor(), input.substr(initial), chunk,
                                               &served.output);
  ConnectionLimits limits;
  limits.max_header_list_bytes = max_header_list_bytes;
  Options options{.max_body_bytes = 1 << 20,
                  .limits = limits,
                  .first_request_deadline = std::chrono::steady_clock::time_point::max(),
                  .observer = &observer};
  auto connection = std::make_shared<Connection>(std::move(stream), factory, options);
  asio::co_spawn(io, connection->Run(std::move(sniffed)), asio::detached);
  io.run();
  served.paths = factory.paths;
  served.resets = factory.resets;
  return served;
}

std::string Response(const std::string& body, bool close = false) {
  return "HTTP/1.1 200 OK\r\ncontent-length: " + std::to_string(body.size()) +
         (close ? "\r\nconnection: close\r\n\r\n" : "\r\n\r\n") + body;
}

TEST(Http1Connection, PipelinedRequestsAreServedInOrder) {
  const std::string request_a = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc";
  const std::string request_b = "POST /b HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n";
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{1} << 20}) {
    Served served = Serve(request_a + request_b, chunk);
    EXPECT_EQ(served.paths, (std::vector<std::string>{"/a", "/b"})) << chunk;
    EXPECT_EQ(served.output, Response("/a 3") + Response("/b 0")) << chunk;
    EXPECT_EQ(served.resets, 0) << chunk;
  }
}

TEST(Http1Connection, BytesReadWhileSniffingStartTheFirstRequest) {
  const std::string request = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi";
  Served served = Serve(request, 5, /*initial=*/10);
  EXPECT_EQ(served.output, Response("/a 2"));
}

TEST(Http1Connection, LargeBodyIsStreamedIntoTheExchangeWhole) {
  const std::string body(200000, 'x');  // several body chunks
  Served served = Serve("POST /big HTTP/1.1\r\nhost: x\r\ncontent-length: 200000\r\n\r\n" + body);
  EXPECT_EQ(served.output, Response("/big 200000"));
}

TEST(Http1Connection, ConnectionCloseEndsAfterTheResponse) {
  const std::string request =
      "POST /a HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
  Served served = Serve(request + request);
  EXPECT_EQ(served.paths.size(), 1u);
  EXPECT_EQ(served.output, Response("/a 0", /*close=*/true));
}

TEST(Http1Connection, EarlyResponseClosesWithoutReadingTheBody) {
  const std::string request =
      "POST /early HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\n\r\nbody"
      "POST /b HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n";
  Served served = Serve(request);
  EXPECT_EQ(served.paths, std::vector<std::string>{"/early"});
  EXPECT_EQ(served.output, Response("refused", /*close=*/true));
}

TEST(Http1Connection, HeadPastTheHeaderListLimitGets431) {
  const std::string request =
      "POST /a HTTP/1.1\r\nhost: x\r\nx-big: " + std::string(4096, 'v') + "\r\n\r\n";
  Served served = Serve(request, 1 << 20, 0, /*max_header_list_bytes=*/1024);
  EXPECT_TRUE(served.paths.empty());
  EXPECT_EQ(served.output,
            "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: "
            "close\r\n\r\n");
}

TEST(Http1Connection, MalformedHeadClosesWithoutAnswer) {
  Served served = Serve("NOT HTTP\r\n\r\n");
  EXPECT_TRUE(served.paths.empty());
  EXPECT_EQ(served.output, "");
}

TEST(Http1Connection, TruncatedBodyResetsTheExchange) {
  Served served = Serve("POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nabc");
  EXPECT_EQ(served.paths, std::vector<std::string>{"/a"});
  EXPECT_EQ(served.resets, 1);
  EXPECT_EQ(served.output, "");
}

}  // namespace
}  // namespace xb::net::http1
