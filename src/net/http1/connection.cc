#include "net/http1/connection.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <cctype>

namespace xb::net::http1 {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr size_t kReadChunk = 32 * 1024;
constexpr size_t kBodyChunk = 64 * 1024;
constexpr std::string_view kHeaderListTooLarge =
    "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: "
    "close\r\n\r\n";

using Clock = std::chrono::steady_clock;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Status";
  }
}

void AppendHead(std::string& out, const ResponseHead& head) {
  out += "HTTP/1.1 ";
  out += std::to_string(head.status);
  out += ' ';
  out += ReasonPhrase(head.status);
  out += "\r\n";
  for (const auto& h : head.headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
}

char HexDigit(size_t v) { return "0123456789abcdef"[v & 15]; }

void AppendChunkSize(std::string& out, size_t n) {
  char buf[20];
  int len = 0;
  do {
    buf[len++] = HexDigit(n);
    n >>= 4;
  } while (n != 0);
  while (len > 0) {
    out.push_back(buf[--len]);
  }
  out += "\r\n";
}

}  // namespace

Connection::Connection(std::unique_ptr<ByteStream> stream, ExchangeFactory& factory,
                       Options options)
    : stream_(std::move(stream)),
      factory_(factory),
      options_(options),
      wake_timer_(stream_->executor()),
      deadline_timer_(stream_->executor()) {}

void Connection::Close() {
  closed_ = true;
  stream_->Close();
  wake_timer_.cancel();
  DisarmDeadline();
}

void Connection::ArmDeadline(Clock::time_point at, ConnectionEnd reason) {
  deadline_ = at;
  deadline_reason_ = reason;
  deadline_armed_ = true;
  deadline_timer_.expires_at(at);
  deadline_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    auto c = weak.lock();
    // A wait that completed after the deadline moved or was disarmed is stale.
    if (c == nullptr || !c->deadline_armed_ || c->closed_ || Clock::now() < c->deadline_) {
      return;
    }
    c->deadline_armed_ = false;
    c->options_.observer->ConnectionEnded(c->deadline_reason_);
    c->Close();
  });
}

void Connection::DisarmDeadline() {
  if (deadline_armed_) {
    deadline_armed_ = false;
    deadline_timer_.cancel();
  }
}

void Connection::GracefulClose() {
  closing_ = true;
  if (!busy_) {
    Close();
  }
}

asio::awaitable<void> Connection::WaitForWake() {
  if (!wake_pending_) {
    wake_timer_.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await wake_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  wake_pending_ = false;
}

asio::awaitable<bool> Connection::WriteResponse(Exchange& exchange, bool keep_alive) {
  while (exchange.head() == nullptr && !closed_) {
    co_await WaitForWake();
  }
  if (closed_) {
    co_return false;
  }
  std::string out;
  boost::system::error_code ec;
  if (!exchange.streaming()) {
    while (!exchange.body_complete() && !closed_) {
      co_await WaitForWake();
    }
    if (closed_) {
      co_return false;
    }
    AppendHead(out, *exchange.head());
    const size_t n = exchange.pending_body();
    out += "content-length: ";
    out += std::to_string(n);
    out += keep_alive ? "\r\n\r\n" : "\r\nconnection: close\r\n\r\n";
    const size_t at = out.size();
    out.resize(at + n);
    exchange.PullBody(out.data() + at, n);
    co_await stream_->WriteAll(asio::buffer(out), ec);
    co_return !ec;
  }
  // A streaming response (a server stream) is the last on its connection: while it runs, a
  // reader watches for the peer going away so the exchange is reset at once, not at the next
  // write; nothing may be pipelined behind it.
  (void)keep_alive;
  AppendHead(out, *exchange.head());
  out += "transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
  peer_gone_ = false;
  asio::co_spawn(
      stream_->executor(),
      [self = shared_from_this()]() -> asio::awaitable<void> {
        char sink[512];
        boost::system::error_code read_ec;
        while (!self->closed_) {
          co_await self->stream_->ReadSome(asio::buffer(sink), read_ec);
          if (read_ec) {
            break;
          }
        }
        self->peer_gone_ = true;
        self->wake_pending_ = true;
        self->wake_timer_.cancel();
      },
      asio::detached);
  while (true) {
    const size_t n = exchange.pending_body();
    if (n > 0) {
      AppendChunkSize(out, n);
      const size_t at = out.size();
      out.resize(at + n);
      exchange.PullBody(out.data() + at, n);
      out += "\r\n";
    }
    const bool done = exchange.body_complete() && exchange.pending_body() == 0;
    if (done) {
      out += "0\r\n\r\n";
    }
    if (!out.empty()) {
      co_await stream_->WriteAll(asio::buffer(out), ec);
      out.clear();
      if (ec) {
        co_return false;
      }
    }
    if (done) {
      co_return true;
    }
    if (closed_ || peer_gone_) {
      co_return false;
    }
    co_await WaitForWake();
  }
}

// One request's parser; the body is read into the connection's body buffer.
struct Connection::Request {
  http::request_parser<http::buffer_body> parser;
};

asio::awaitable<void> Connection::Run(std::string initial) {
  auto self = shared_from_this();
  input_ = std::move(initial);
  read_buffer_.resize(kReadChunk);
  body_buffer_.resize(kBodyChunk);
  while (!closed_) {
    Request request;
    request.parser.header_limit(options_.limits.max_header_list_bytes);
    request.parser.body_limit(options_.max_body_bytes);
    request.parser.eager(true);
    const HeadRead head = co_await ReadHead(request);
    DisarmDeadline();
    if (head == HeadRead::kTooLarge) {
      // RFC 9110 15.5 / RFC 6585 5: 431, then close: the rest of the head is not read, so the
      // stream cannot be resynchronised for a next request.
      boost::system::error_code ec;
      co_await stream_->WriteAll(asio::buffer(kHeaderListTooLarge), ec);
      break;
    }
    if (head == HeadRead::kFailed) {
      break;
    }
    first_request_ = false;
    if (!co_await Serve(request)) {
      break;
    }
  }
  DisarmDeadline();
  stream_->Close();
}

asio::awaitable<bool> Connection::ReadMore() {
  boost::system::error_code ec;
  const size_t n = co_await stream_->ReadSome(asio::buffer(read_buffer_), ec);
  if (ec || closed_) {
    co_return false;
  }
  input_.append(read_buffer_.data(), n);
  co_return true;
}

// implements: issue 28 (5). The first request head must be in by the handshake deadline; a
// later one gets the idle timeout to start and the header read timeout, from its first byte,
// to finish (so a head trickled a byte at a time cannot hold the connection).
void Connection::ArmForHead() {
  Clock::time_point at = Clock::now() + options_.limits.header_read_timeout;
  ConnectionEnd reason = ConnectionEnd::kHeaderReadTimeout;
  if (first_request_ && options_.first_request_deadline < at) {
    at = options_.first_request_deadline;
    reason = ConnectionEnd::kHandshakeTimeout;
  }
  ArmDeadline(at, reason);
}

asio::awaitable<Connection::HeadRead> Connection::ReadHead(Request& request) {
  auto& parser = request.parser;
  bool head_started = !input_.empty();
  if (head_started) {
    ArmForHead();
  } else if (first_request_) {
    ArmDeadline(options_.first_request_deadline, ConnectionEnd::kHandshakeTimeout);
  } else {
    ArmDeadline(Clock::now() + options_.limits.idle_timeout, ConnectionEnd::kIdleTimeout);
  }
  while (!parser.is_header_done()) {
    if (input_.empty() && !co_await ReadMore()) {
      co_return HeadRead::kFailed;
    }
    if (!head_started) {
      head_started = true;
      ArmForHead();
    }
    boost::beast::error_code pec;
    const size_t used = parser.put(asio::buffer(input_), pec);
    input_.erase(0, used);
    if (pec == http::error::need_more) {
      if (!co_await ReadMore()) {
        co_return HeadRead::kFailed;
      }
      continue;
    }
    if (pec == http::error::need_buffer && parser.is_header_done()) {
      break;  // the body follows; it is read below into a buffer
    }
    if (pec == http::error::header_limit) {
      co_return HeadRead::kTooLarge;  // limits.max_header_list_bytes
    }
    if (pec) {
      co_return HeadRead::kFailed;
    }
  }
  co_return HeadRead::kDone;
}

std::shared_ptr<Exchange> Connection::StartExchange(const Request& request) {
  RequestHead head;
  head.version = HttpVersion::kHttp1;
  head.connection = this;
  head.peer = options_.peer;
  const auto& req = request.parser.get();
  head.method = std::string(req.method_string());
  head.path = std::string(req.target());
  for (const auto& field : req) {
    std::string name = Lower(field.name_string());
    if (factory_.WantsHeader(name)) {
      head.headers.push_back(Header{std::move(name), std::string(field.value())});
    }
  }
  std::weak_ptr<Connection> weak = weak_from_this();
  return factory_.Start(std::move(head), stream_->executor(), [weak] {
    if (auto c = weak.lock()) {
      if (c->current_ != nullptr && c->current_->cancelled()) {
        c->Close();  // HTTP/1.1 cannot reset one response: the connection goes
        return;
      }
      c->wake_pending_ = true;
      c->wake_timer_.cancel();
    }
  });
}

// Body: streamed into the exchange in chunks. A response that completes early (an error found
// in the first frame) is sent at once and the connection closed after it.
asio::awaitable<Connection::BodyRead> Connection::ReadBody(Request& request, Exchange& exchange) {
  auto& parser = request.parser;
  while (!parser.is_done()) {
    if (exchange.head() != nullptr && exchange.body_complete()) {
      co_return BodyRead::kEarly;
    }
    auto& body = parser.get().body();
    body.data = body_buffer_.data();
    body.size = body_buffer_.size();
    boost::beast::error_code pec;
    size_t used = 0;
    if (!input_.empty()) {
      used = parser.put(asio::buffer(input_), pec);
      input_.erase(0, used);
    } else {
      pec = http::error::need_more;
    }
    const size_t got = body_buffer_.size() - parser.get().body().size;
    if (got > 0) {
      exchange.OnRequestBody(std::string_view(body_buffer_.data(), got));
    }
    if (pec == http::error::need_buffer) {
      continue;
    }
    if (pec == http::error::need_more) {
      if (!co_await ReadMore()) {
        co_return BodyRead::kFailed;
      }
      continue;
    }
    if (pec) {
      co_return BodyRead::kFailed;  // includes body_limit: the connection cannot continue
    }
  }
  co_return BodyRead::kDone;
}

asio::awaitable<bool> Connection::Serve(Request& request) {
  busy_ = true;
  const bool keep_alive = request.parser.get().keep_alive();
  std::shared_ptr<Exchange> exchange = StartExchange(request);
  current_ = exchange.get();
  const BodyRead body = co_await ReadBody(request, *exchange);
  if (body == BodyRead::kFailed) {
    current_ = nullptr;
    exchange->OnReset();
    co_return false;
  }
  const bool early = body == BodyRead::kEarly;
  if (!early) {
    exchange->OnRequestEnd();
  }
  const bool ok = co_await WriteResponse(*exchange, keep_alive && !early);
  if (!ok) {
    current_ = nullptr;
    exchange->OnReset();
    co_return false;
  }
  exchange->OnResponseComplete();
  current_ = nullptr;
  busy_ = false;
  co_return keep_alive && !early && !closing_ && !exchange->streaming();
}

}  // namespace xb::net::http1
