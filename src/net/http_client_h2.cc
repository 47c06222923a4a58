#include "net/http_client_h2.h"

#include <nghttp2/nghttp2.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstring>

namespace xb::net::http_client_detail {

namespace asio = boost::asio;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

struct H2ClientConnection::Stream {
  explicit Stream(asio::any_io_executor executor) : waiter(executor) {}

  const HttpRequest* request = nullptr;
  size_t body_sent = 0;
  HttpResponse response;
  bool head_done = false;           // the final (non-1xx) head arrived whole
  bool declared_too_large = false;  // its content-length is over the body cap
  bool headers_sent = false;        // nghttp2 handed its HEADERS out to be written
  bool unprocessed = false;         // see H2Outcome
  bool done = false;
  std::optional<HttpError> error;
  asio::steady_timer waiter;  // expires at the deadline; cancelled to wake the request
};

namespace {

H2ClientConnection* Self(void* user_data) { return static_cast<H2ClientConnection*>(user_data); }

H2ClientConnection::Stream* StreamOf(nghttp2_session* session, int32_t id) {
  return static_cast<H2ClientConnection::Stream*>(
      nghttp2_session_get_stream_user_data(session, id));
}

HttpError TooLarge() {
  return HttpError{HttpErrorKind::kBodyTooLarge, "the response body is over its limit"};
}

int OnHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
             size_t namelen, const uint8_t* value, size_t valuelen, uint8_t /*flags*/,
             void* /*user_data*/) {
  auto* stream = StreamOf(session, frame->hd.stream_id);
  if (stream == nullptr || stream->done || frame->hd.type != NGHTTP2_HEADERS) {
    return 0;
  }
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (stream->head_done) {  // a trailer section (gRPC's grpc-status): kept apart from the head
    stream->response.trailers.push_back(Header{std::string(n), std::string(v)});
    return 0;
  }
  if (n == ":status") {
    unsigned status = 0;
    std::from_chars(v.data(), v.data() + v.size(), status);
    stream->response.status = status;
    stream->response.headers.clear();  // a 1xx head is followed by the final one
    stream->declared_too_large = false;
    return 0;
  }
  if (n == "content-length") {
    uint64_t length = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), length);
    // Failed once the whole head is in (OnFrameRecv), so that the error carries it.
    stream->declared_too_large = ec == std::errc() && length > stream->request->max_body_bytes;
  }
  stream->response.headers.push_back(Header{std::string(n), std::string(v)});
  return 0;
}

int OnData(nghttp2_session* session, uint8_t /*flags*/, int32_t id, const uint8_t* data, size_t len,
           void* user_data) {
  auto* stream = StreamOf(session, id);
  if (stream == nullptr || stream->done) {
    return 0;
  }
  if (stream->response.body.size() + len > stream->request->max_body_bytes) {
    Self(user_data)->FailStream(id, *stream, TooLarge(), /*reset=*/true);
    return 0;
  }
  stream->response.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    auto* stream = StreamOf(session, frame->hd.stream_id);
    if (stream != nullptr && !stream->done && !stream->head_done &&
        stream->response.status >= 200) {
      stream->head_done = true;
      if (stream->declared_too_large) {
        Self(user_data)->FailStream(frame->hd.stream_id, *stream, TooLarge(), /*reset=*/true);
        return 0;
      }
    }
  }
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    if (auto* stream = StreamOf(session, frame->hd.stream_id); stream != nullptr) {
      Self(user_data)->OnStreamEnd(*stream);
    }
  }
  return 0;
}

int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* /*user_data*/) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (auto* stream = StreamOf(session, frame->hd.stream_id); stream != nullptr) {
      stream->headers_sent = true;
    }
  }
  return 0;
}

int OnStreamClose(nghttp2_session* session, int32_t id, uint32_t error_code, void* user_data) {
  if (auto* stream = StreamOf(session, id); stream != nullptr && !stream->done) {
    // RFC 9113 8.7: REFUSED_STREAM means the server did nothing with it. nghttp2 closes with it too
    // the streams above a GOAWAY's last stream id (6.8) and the requests it could no longer send
    // after a GOAWAY. Only while no response head came: one that did was processed after all.
    if (error_code == NGHTTP2_REFUSED_STREAM && stream->response.status == 0) {
      stream->unprocessed = true;
      Self(user_data)->FailStream(
          id, *stream, HttpError{HttpErrorKind::kClosed, "the server did not process the request"},
          /*reset=*/false);
    } else {
      Self(user_data)->FailStream(
          id, *stream, HttpError{HttpErrorKind::kClosed, "the server ended the stream early"},
          /*reset=*/false);
    }
  }
  Self(user_data)->Forget(id);
  return 0;
}

ssize_t ReadBody(nghttp2_session* /*session*/, int32_t /*id*/, uint8_t* buf, size_t length,
                 uint32_t* data_flags, nghttp2_data_source* source, void* /*user_data*/) {
  auto* stream = static_cast<H2ClientConnection::Stream*>(source->ptr);
  const std::string& body = stream->request->body;
  const size_t n = std::min(length, body.size() - stream->body_sent);
  std::memcpy(buf, body.data() + stream->body_sent, n);
  stream->body_sent += n;
  if (stream->body_sent == body.size()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  return static_cast<ssize_t>(n);
}

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
                    const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

H2ClientConnection::H2ClientConnection(std::unique_ptr<TlsStream> tls,
                                       std::unique_ptr<PlainStream> plain)
    : tls_(std::move(tls)), plain_(std::move(plain)) {}

H2ClientConnection::~H2ClientConnection() {
  if (session_ != nullptr) {
    nghttp2_session_del(session_);
  }
}

std::shared_ptr<H2ClientConnection> H2ClientConnection::Start(std::unique_ptr<TlsStream> stream) {
  return Begin(std::shared_ptr<H2ClientConnection>(new H2ClientConnection(std::move(stream), {})));
}

std::shared_ptr<H2ClientConnection> H2ClientConnection::Start(std::unique_ptr<PlainStream> stream) {
  return Begin(std::shared_ptr<H2ClientConnection>(new H2ClientConnection({}, std::move(stream))));
}

PlainStream& H2ClientConnection::lowest() {
  return tls_ ? boost::beast::get_lowest_layer(*tls_) : *plain_;
}

asio::any_io_executor H2ClientConnection::executor() { return lowest().get_executor(); }

std::shared_ptr<H2ClientConnection> H2ClientConnection::Begin(
    std::shared_ptr<H2ClientConnection> c) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) {
    return nullptr;
  }
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnData);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &OnFrameRecv);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &OnFrameSend);
  const int rv = nghttp2_session_client_new(&c->session_, callbacks, c.get());
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) {
    return nullptr;
  }
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  if (nghttp2_submit_settings(c->session_, NGHTTP2_FLAG_NONE, settings, 1) != 0) {
    return nullptr;
  }
  c->lowest().expires_never();  // requests bound their own time
  asio::co_spawn(c->executor(), c->ReadLoop(c), asio::detached);
  c->Flush();
  return c;
}

bool H2ClientConnection::open() const {
  return !closed_ && nghttp2_session_check_request_allowed(session_) != 0;
}

bool H2ClientConnection::usable() const {
  if (!open()) {
    return false;
  }
  const uint32_t limit =
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return streams_.size() < limit;
}

void H2ClientConnection::Close() {
  FailAll(HttpError{HttpErrorKind::kClosed, "the connection was closed"});
}

void H2ClientConnection::OnStreamEnd(Stream& stream) {
  if (!stream.done) {
    stream.done = true;
    stream.waiter.cancel();
  }
}

void H2ClientConnection::FailStream(int32_t id, Stream& stream, HttpError error, bool reset) {
  if (stream.done) {
    return;
  }
  stream.error = std::move(error);
  if (stream.head_done) {
    stream.error->head = HttpHead{stream.response.status, stream.response.headers};
  }
  stream.done = true;
  stream.waiter.cancel();
  if (reset && !closed_) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  }
}

void H2ClientConnection::FailAll(const HttpError& error) {
  for (auto& [id, stream] : streams_) {
    // A request whose HEADERS never left (waiting behind the server's stream limit) was not
    // processed: it may go again on another connection.
    if (!stream->done && !stream->headers_sent) {
      stream->unprocessed = true;
    }
    FailStream(id, *stream, error, /*reset=*/false);
  }
  if (!closed_) {
    closed_ = true;
    boost::system::error_code ignored;
    lowest().socket().close(ignored);
  }
}

void H2ClientConnection::Flush() {
  if (writing_ || closed_) {
    return;
  }
  writing_ = true;
  asio::co_spawn(executor(), WriteLoop(shared_from_this()), asio::detached);
}

asio::awaitable<void> H2ClientConnection::ReadLoop(
    std::shared_ptr<H2ClientConnection> /*self: keeps the connection alive*/) {
  std::array<uint8_t, 16384> buffer;
  while (!closed_) {
    auto [ec, n] = tls_ ? co_await tls_->async_read_some(asio::buffer(buffer), kNoThrow)
                        : co_await plain_->async_read_some(asio::buffer(buffer), kNoThrow);
    if (ec) {
      FailAll(HttpError{HttpErrorKind::kClosed,
                        "the server closed the connection before the response was complete"});
      break;
    }
    if (nghttp2_session_mem_recv(session_, buffer.data(), n) < 0) {
      FailAll(HttpError{HttpErrorKind::kProtocol, "the server's HTTP/2 framing is not valid"});
      break;
    }
    Flush();  // SETTINGS acknowledgements, window updates, resets
    if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) {
      FailAll(HttpError{HttpErrorKind::kClosed, "the server closed the connection"});  // GOAWAY
    }
  }
}

asio::awaitable<void> H2ClientConnection::WriteLoop(
    std::shared_ptr<H2ClientConnection> /*self: keeps the connection alive*/) {
  while (!closed_) {
    out_.clear();
    const uint8_t* data = nullptr;
    ssize_t n = 0;
    while (out_.size() < (64 << 10) && (n = nghttp2_session_mem_send(session_, &data)) > 0) {
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (n < 0) {
      FailAll(HttpError{HttpErrorKind::kProtocol, "the HTTP/2 session failed"});
      break;
    }
    if (out_.empty()) {
      break;
    }
    auto [ec, written] = tls_ ? co_await asio::async_write(*tls_, asio::buffer(out_), kNoThrow)
                              : co_await asio::async_write(*plain_, asio::buffer(out_), kNoThrow);
    (void)written;
    if (ec) {
      FailAll(HttpError{HttpErrorKind::kClosed, "the request could not be sent"});
      break;
    }
  }
  writing_ = false;
}

int32_t H2ClientConnection::Submit(const H2Request& r, Stream& stream) {
  const HttpRequest& request = *r.request;
  std::vector<nghttp2_nv> nva;
  nva.reserve(5 + request.headers.size());
  nva.push_back(Nv(":method", request.method));
  nva.push_back(Nv(":scheme", tls_ ? "https" : "http"));
  nva.push_back(Nv(":authority", r.authority));
  nva.push_back(Nv(":path", r.path));
  const std::string length = std::to_string(request.body.size());
  if (!request.body.empty()) {
    nva.push_back(Nv("content-length", length));
  }
  for (const auto& header : request.headers) {
    nva.push_back(Nv(header.name, header.value));
  }
  nghttp2_data_provider body{};
  body.source.ptr = &stream;
  body.read_callback = &ReadBody;
  return nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                request.body.empty() ? nullptr : &body, &stream);
}

asio::awaitable<H2Outcome> H2ClientConnection::Send(H2Request r) {
  auto self = shared_from_this();
  auto stream = std::make_shared<Stream>(executor());
  stream->request = r.request;
  stream->response.version = HttpVersion::kHttp2;
  const int32_t id = Submit(r, *stream);
  if (id < 0) {
    co_return H2Outcome{
        HttpError{HttpErrorKind::kInvalidRequest, "the request cannot be sent over HTTP/2"}};
  }
  streams_.emplace(id, stream);
  Flush();
  stream->waiter.expires_at(r.request->deadline);
  while (!stream->done) {
    boost::system::error_code ec;
    co_await stream->waiter.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec && !stream->done) {
      FailStream(id, *stream, HttpError{HttpErrorKind::kTimeout, "the deadline passed"},
                 /*reset=*/true);
      Flush();
    }
  }
  if (stream->error) {
    co_return H2Outcome{*std::move(stream->error), stream->unprocessed};
  }
  co_return H2Outcome{std::move(stream->response)};
}

}  // namespace xb::net::http_client_detail
