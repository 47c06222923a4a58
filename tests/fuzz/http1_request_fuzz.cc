// libFuzzer target for HTTP/1.1 request parsing: xb::net::http1::Connection itself (its Boost.Beast
// request parser with the server's header limit, its body limit, chunked and content-length
// bodies, keep-alive, early answers and streaming answers), fed the fuzz input as the bytes of one
// TCP connection through an in-memory ByteStream, with a fake ExchangeFactory standing in for the
// gRPC layer.
//
// Input layout: byte 0 picks the body limit (the server's own, kMaxHttp1BodyBytes in
// server/server.cc, or a small one so the limit is reached); byte 1 steers how the fake exchanges
// answer (bits 0-1: at request end, at once (an early answer before the body), or after the first
// body bytes; bit 2: a streaming (chunked) answer; bit 3: a streaming answer left open until the
// peer goes away; bits 4-7: the answer's body size); byte 2 is how many bytes the listener had
// already read while sniffing for the HTTP/2 preface (the `initial` of Run, at most 64); then
// Input::ChunkSizes() cuts the rest into the reads the stream returns, and the rest is the
// connection's bytes, followed by end of stream.
//
// Invariants checked:
//  - no crash, no sanitizer report, and Run returns at end of stream whatever the bytes;
//  - the body bytes an exchange is given never exceed the body limit, and never exceed the bytes
//    of the connection;
//  - each exchange sees its events in order: body chunks, then one OnRequestEnd or OnReset (or
//    neither, after an early answer), then OnResponseComplete or OnReset; nothing after a reset,
//    and none is left without one or the other;
//  - a request head has a method, and only the headers the factory asked for, named in lower case;
//  - what is written back is HTTP/1.1 responses only;
//  - bounded memory: the heap the connection holds (beyond the input) stays under
//    kMaxLiveBytes at every read, whatever the header or body sizes declared.
#include <sanitizer/allocator_interface.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "net/byte_stream.h"
#include "net/exchange.h"
#include "net/http1/connection.h"

namespace {

namespace asio = boost::asio;
using xb::net::Exchange;
using xb::net::Header;
using xb::net::RequestHead;
using xb::net::ResponseHead;

// The server's body limit (server/server.cc, kMaxHttp1BodyBytes): a base64 text-mode request
// message of the transport ceiling.
constexpr uint64_t kServerBodyLimit = 26214400ULL / 3 * 4 + 4096;
constexpr uint64_t kBodyLimits[] = {kServerBodyLimit, 0, 1, 7, 100, 4096};

// The connection's own buffers (32 KiB read, 64 KiB body), the pending input (header limit 16 KiB
// plus one read), Beast's parser and the coroutine frames fit well under this; an input that made
// the connection buffer without bound would not.
constexpr size_t kMaxLiveBytes = 512 * 1024;

size_t LiveBytes() { return __sanitizer_get_current_allocated_bytes(); }

struct Budget {
  size_t baseline = 0;
  void Check() const {
    const size_t live = LiveBytes();
    XB_FUZZ_CHECK(live < baseline || live - baseline <= kMaxLiveBytes);
  }
};

// The connection's bytes, returned in the given read sizes, then end of stream. Whatever is
// written back is checked to be HTTP/1.1 responses and otherwise dropped.
class MemoryStream final : public xb::net::ByteStream {
 public:
  MemoryStream(asio::any_io_executor executor, std::vector<std::string_view> reads,
               const Budget& budget)
      : executor_(std::move(executor)), reads_(std::move(reads)), budget_(budget) {}

  asio::awaitable<size_t> ReadSome(asio::mutable_buffer buffer,
                                   boost::system::error_code& ec) override {
    budget_.Check();
    if (closed_) {
      ec = asio::error::operation_aborted;
      co_return 0;
    }
    while (next_ < reads_.size() && reads_[next_].empty()) {
      ++next_;  // an empty chunk: a read that returned nothing new, as a socket never does
    }
    if (next_ == reads_.size()) {
      ec = asio::error::eof;
      co_return 0;
    }
    std::string_view& chunk = reads_[next_];
    const size_t n = std::min(chunk.size(), buffer.size());
    std::memcpy(buffer.data(), chunk.data(), n);
    chunk.remove_prefix(n);
    co_return n;
  }

  asio::awaitable<void> WriteAll(asio::const_buffer buffer,
                                 boost::system::error_code& ec) override {
    XB_FUZZ_CHECK(!closed_);
    const std::string_view out(static_cast<const char*>(buffer.data()), buffer.size());
    // Each WriteAll of a content-length response is a whole response; a streaming one starts
    // with its head and continues with chunks.
    if (!in_stream_) {
      XB_FUZZ_CHECK(out.starts_with("HTTP/1.1 "));
      in_stream_ = out.find("transfer-encoding: chunked\r\n") != std::string_view::npos;
    }
    ec = {};
    co_return;
  }

  void Close() override { closed_ = true; }
  asio::any_io_executor executor() override { return executor_; }

 private:
  asio::any_io_executor executor_;
  std::vector<std::string_view> reads_;
  size_t next_ = 0;
  const Budget& budget_;
  bool closed_ = false;
  bool in_stream_ = false;
};

enum class AnswerAt { kRequestEnd, kAtOnce, kFirstBody };

struct AnswerPolicy {
  AnswerAt at = AnswerAt::kRequestEnd;
  bool streaming = false;
  bool stay_open = false;  // a streaming answer whose body never completes
  size_t body_bytes = 0;
};

class FakeExchange final : public Exchange {
 public:
  FakeExchange(AnswerPolicy policy, uint64_t body_limit, size_t input_bytes,
               asio::any_io_executor executor, xb::net::Waker wake)
      : policy_(policy),
        body_limit_(body_limit),
        input_bytes_(input_bytes),
        executor_(std::move(executor)),
        wake_(std::move(wake)) {
    if (policy_.at == AnswerAt::kAtOnce) {
      Answer();
    }
  }

  ~FakeExchange() override {
    // The connection ends every exchange it started: the response was sent, or it was reset.
    XB_FUZZ_CHECK(responded_ || reset_);
  }

  void OnRequestBody(std::string_view bytes) override {
    XB_FUZZ_CHECK(!ended_ && !reset_);
    body_bytes_ += bytes.size();
    XB_FUZZ_CHECK(body_bytes_ <= body_limit_);
    XB_FUZZ_CHECK(body_bytes_ <= input_bytes_);
    if (policy_.at == AnswerAt::kFirstBody && head_ == nullptr && !bytes.empty()) {
      Answer();
      asio::post(executor_, wake_);  // the rpc layer wakes from its own handler, never inline
    }
  }
  void OnRequestEnd() override {
    XB_FUZZ_CHECK(!ended_ && !reset_);
    ended_ = true;
    if (head_ == nullptr) {
      Answer();
    }
  }
  void OnReset() override {
    XB_FUZZ_CHECK(!reset_ && !responded_);
    reset_ = true;
  }
  void OnResponseComplete() override {
    XB_FUZZ_CHECK(!reset_ && !responded_ && head_ != nullptr && body_complete_ && pending_.empty());
    responded_ = true;
  }

  bool streaming() const override { return policy_.streaming; }
  const ResponseHead* head() const override { return head_.get(); }
  size_t PullBody(char* dst, size_t max) override {
    const size_t n = std::min(max, pending_.size());
    std::memcpy(dst, pending_.data(), n);
    pending_.erase(0, n);
    return n;
  }
  size_t pending_body() const override { return pending_.size(); }
  bool body_complete() const override { return body_complete_; }
  const std::vector<Header>& trailers() const override { return trailers_; }

 private:
  void Answer() {
    head_ = std::make_unique<ResponseHead>();
    head_->headers.push_back(Header{"content-type", "application/grpc-web+proto"});
    pending_.assign(policy_.body_bytes, 'x');
    body_complete_ = !(policy_.streaming && policy_.stay_open);
  }

  const AnswerPolicy policy_;
  const uint64_t body_limit_;
  const size_t input_bytes_;
  asio::any_io_executor executor_;
  xb::net::Waker wake_;
  std::unique_ptr<ResponseHead> head_;
  std::string pending_;
  bool body_complete_ = false;
  std::vector<Header> trailers_;
  uint64_t body_bytes_ = 0;
  bool ended_ = false;
  bool reset_ = false;
  bool responded_ = false;
};

class FakeFactory final : public xb::net::ExchangeFactory {
 public:
  FakeFactory(AnswerPolicy policy, uint64_t body_limit, size_t input_bytes)
      : policy_(policy), body_limit_(body_limit), input_bytes_(input_bytes) {}

  // The headers the gRPC dispatcher keeps (rpc/dispatcher.cc), so the same ones are copied.
  bool WantsHeader(std::string_view name) const override {
    for (char c : name) {
      XB_FUZZ_CHECK(!std::isupper(static_cast<unsigned char>(c)));
    }
    return name == "content-type" || name == "grpc-timeout" || name == "authorization" ||
           name == "origin" || name == "traceparent";
  }

  std::shared_ptr<Exchange> Start(RequestHead head, asio::any_io_executor executor,
                                  xb::net::Waker wake) override {
    XB_FUZZ_CHECK(head.version == xb::net::HttpVersion::kHttp1);
    XB_FUZZ_CHECK(!head.method.empty());
    for (const Header& h : head.headers) {
      XB_FUZZ_CHECK(WantsHeader(h.name));
    }
    ++exchanges_;
    return std::make_shared<FakeExchange>(policy_, body_limit_, input_bytes_, std::move(executor),
                                          std::move(wake));
  }

  size_t exchanges() const { return exchanges_; }

 private:
  const AnswerPolicy policy_;
  const uint64_t body_limit_;
  const size_t input_bytes_;
  size_t exchanges_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input input(data, size);
  const uint64_t body_limit = kBodyLimits[input.Byte() % std::size(kBodyLimits)];
  const uint8_t steer = input.Byte();
  const AnswerPolicy policy{.at = static_cast<AnswerAt>((steer & 3) % 3),
                            .streaming = (steer & 4) != 0,
                            .stay_open = (steer & 8) != 0,
                            .body_bytes = static_cast<size_t>(steer >> 4) * 37};
  size_t initial_bytes = input.Byte() % 65;
  const std::vector<size_t> sizes = input.ChunkSizes();
  std::string_view bytes = input.rest();
  initial_bytes = std::min(initial_bytes, bytes.size());
  std::string initial(bytes.substr(0, initial_bytes));
  bytes.remove_prefix(initial_bytes);

  std::vector<std::string_view> reads = xb::fuzz::Split(bytes, sizes);
  Budget budget;  // what the harness holds so far is not the connection's
  budget.baseline = LiveBytes();
  {
    asio::io_context io;
    FakeFactory factory(policy, body_limit, size);
    auto stream = std::make_unique<MemoryStream>(io.get_executor(), std::move(reads), budget);
    auto connection = std::make_shared<xb::net::http1::Connection>(
        std::move(stream), factory, xb::net::http1::Options{.max_body_bytes = body_limit});
    bool returned = false;
    asio::co_spawn(
        io,
        [connection, &initial, &returned]() -> asio::awaitable<void> {
          co_await connection->Run(std::move(initial));
          returned = true;
        },
        asio::detached);
    io.run();
    XB_FUZZ_CHECK(returned);
    // Every request needs at least "X / HTTP/1.1\r\n\r\n"-like bytes: no exchange from nothing.
    XB_FUZZ_CHECK(factory.exchanges() <= size / 4 + 1);
  }
  return 0;
}
