#include "net/http2/connection.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <string_view>
#include <vector>

namespace xb::net::http2 {

namespace asio = boost::asio;

// What resuming and pulling a response reads comes first (one cache line): a topic's fan-out
// touches every stream of the connection per envelope.
struct Connection::Stream {
  std::shared_ptr<Exchange> exchange;
  int32_t id = 0;
  bool response_submitted = false;
  bool response_complete = false;
  bool trailers_submitted = false;
  bool reset_submitted = false;
  // Response complete while the client's side is still open: kept until the client ends it.
  bool awaiting_client_end = false;
  uint64_t discarded_bytes = 0;        // request DATA received after the response completed
  bool header_list_too_large = false;  // answered 431, never started
  uint32_t header_list_bytes = 0;      // RFC 9113 6.5.2: names, values, 32 per field
  RequestHead head;
  std::vector<nghttp2_nv> nv;  // points into exchange's head/trailers, kept alive by exchange
};

namespace {

constexpr int32_t kStreamWindow = 1 << 20;       // 1 MiB per stream
constexpr int32_t kConnectionWindow = 16 << 20;  // 16 MiB per connection
constexpr size_t kWriteChunk = 256 * 1024;       // coalesced frames per socket write
// How long a closing connection waits for clients to end the streams it finished.
constexpr std::chrono::seconds kFinishedStreamGrace{1};
// What a response DATA frame earns the client: one control frame per 4 KiB of it, and two more for
// the frame itself, since a client may acknowledge every DATA frame with a connection and a stream
// WINDOW_UPDATE however small the frame is (a gRPC client reading many small stream messages
// under load did, and was cut off by the cap). Neither lets a client send control frames faster
// than the server sends it data: the flood the cap stops costs the server work per frame the
// client sends for free.
constexpr double kResponseBytesPerControlFrame = 4096;
constexpr double kControlFramesPerDataFrame = 2;
// Control frames a request earns: what a client sends about one call (a connection and a stream
// WINDOW_UPDATE for its response, a BDP PING, a RST_STREAM to cancel it). A gRPC client making
// unary calls back to back sends about two per call; with one it ran out after ~1,000 calls.
constexpr double kControlFramesPerRequest = 4;

// One write's frames, shared by the connections of a thread. A connection serializes into it and
// hands it to the socket before it yields (TryWrite), so it stays in cache from one connection's
// write to the next: a topic's fan-out writes ~100 KiB to each of many connections, and a buffer
// per connection was cold memory every time. What the socket does not take at once moves to the
// connection's own buffer.
std::vector<char>& ThreadWriteBuffer() {
  thread_local std::vector<char> buffer;
  return buffer;
}

nghttp2_nv MakeNv(const std::string& name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

}  // namespace

// nghttp2 callbacks. No exception crosses them (our code does not throw).
struct Callbacks {
  static Connection* Self(void* user_data) { return static_cast<Connection*>(user_data); }

  static Connection::Stream* Find(Connection* c, int32_t id) {
    auto it = c->streams_.find(id);
    return it == c->streams_.end() ? nullptr : it->second.get();
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    auto* c = Self(user_data);
    auto stream = std::make_unique<Connection::Stream>();
    stream->id = frame->hd.stream_id;
    stream->head.version = HttpVersion::kHttp2;
    stream->head.connection = c;
    stream->head.peer = c->options_.peer;
    c->streams_[frame->hd.stream_id] = std::move(stream);
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                      void* user_data) {
    auto* c = Self(user_data);
    auto* s = Find(c, frame->hd.stream_id);
    if (s == nullptr || s->exchange || s->header_list_too_large) {
      return 0;  // request trailers are ignored
    }
    // implements: issue 28 (5), limits.max_header_list_bytes. Counted as RFC 9113 6.5.2 does;
    // past the limit nothing more is kept and the stream is answered 431 (OnFrameRecv).
    const uint64_t bytes = uint64_t{s->header_list_bytes} + namelen + valuelen + 32;
    if (bytes > c->options_.limits.max_header_list_bytes) {
      s->header_list_too_large = true;
      s->head = RequestHead();
      return 0;
    }
    s->header_list_bytes = static_cast<uint32_t>(bytes);
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":method") {
      s->head.method = v;
    } else if (n == ":path") {
      s->head.path = v;
    } else if (!n.empty() && n[0] != ':' && c->factory_.WantsHeader(n)) {
      s->head.headers.push_back(Header{std::string(n), std::string(v)});
    }
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto* c = Self(user_data);
    auto* s = Find(c, frame->hd.stream_id);
    if (s == nullptr) {
      return 0;
    }
    const bool end_stream = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (frame->hd.type == NGHTTP2_HEADERS && s->header_list_too_large) {
      if (!s->response_submitted) {
        // RFC 9113 10.5.1: a header list larger than the server will handle may be answered
        // 431. Only this stream ends; the connection goes on (HPACK state was kept).
        s->response_submitted = true;
        static const std::string kStatusName = ":status";
        static const std::string kStatus431 = "431";
        const nghttp2_nv nv[] = {MakeNv(kStatusName, kStatus431)};
        nghttp2_submit_response(c->session_, s->id, nv, std::size(nv), nullptr);
      }
      return 0;
    }
    if (frame->hd.type == NGHTTP2_HEADERS && !s->exchange) {
      c->control_frames_.Credit(kControlFramesPerRequest);
      const int32_t id = s->id;
      std::weak_ptr<Connection> weak = c->weak_from_this();
      s->exchange = c->factory_.Start(std::move(s->head), c->stream_->executor(), [weak, id] {
        if (auto conn = weak.lock()) {
          conn->ResumeStream(id);
        }
      });
      s->head = RequestHead();
      c->to_resume_.push_back(id);
    }
    if (end_stream && s->exchange) {
      s->exchange->OnRequestEnd();
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data,
                         size_t len, void* user_data) {
    auto* s = Find(Self(user_data), stream_id);
    if (s != nullptr && s->awaiting_client_end) {
      // The rest of a request the response did not wait for: discarded. Beyond a window of it
      // the client is asked to stop (RFC 9113 8.1). Not at once: a balancer may still be passing
      // the request on, and resetting that can cost the client its trailers (as at OnFrameSend).
      s->discarded_bytes += len;
      if (s->discarded_bytes > static_cast<uint64_t>(kStreamWindow) && !s->reset_submitted) {
        s->reset_submitted = true;
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR);
      }
      return 0;
    }
    if (s != nullptr && s->exchange) {
      s->exchange->OnRequestBody(std::string_view(reinterpret_cast<const char*>(data), len));
    }
    return 0;
  }

  static int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      return 0;
    }
    auto* s = Find(Self(user_data), frame->hd.stream_id);
    if (s == nullptr || s->response_complete) {
      return 0;
    }
    s->response_complete = true;
    if (s->exchange) {
      s->exchange->OnResponseComplete();
    }
    // A response complete before the request ended (a stream the server ended, e.g. at drain)
    // waits for the client to end its side, which gRPC clients do on the trailers. It is not reset
    // at once (RFC 9113 8.1 allows RST_STREAM(NO_ERROR)): a balancer may then drop the trailers
    // it has not forwarded yet and reset its client's stream with CANCEL instead (HAProxy 2.6,
    // haproxy/haproxy#1219), losing the status. A window of more DATA from the client resets it
    // (above); it does not keep the connection from going idle, and a closing connection resets
    // it after a grace.
    if (!nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id)) {
      s->awaiting_client_end = true;
      auto* c = Self(user_data);
      ++c->awaiting_client_end_;
      c->ArmIdleDeadlineIfIdle();
    }
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
    auto* c = Self(user_data);
    auto it = c->streams_.find(stream_id);
    if (it == c->streams_.end()) {
      return 0;
    }
    auto stream = std::move(it->second);
    c->streams_.erase(it);
    if (stream->exchange && !stream->response_complete) {
      stream->exchange->OnReset();
    }
    if (stream->awaiting_client_end) {
      --c->awaiting_client_end_;
    } else {
      c->ArmIdleDeadlineIfIdle();
    }
    return 0;
  }

  // implements: issue 28 (5), limits.max_control_frames_per_second. Every frame that carries
  // no request or response spends a token: WINDOW_UPDATE, PING, SETTINGS, PRIORITY, RST_STREAM,
  // GOAWAY, unknown types and DATA with neither payload nor END_STREAM. Counted at the frame
  // header, before nghttp2 does any work for it (a PING ACK, a window update).
  static int OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
    switch (hd->type) {
      case NGHTTP2_HEADERS:
      case NGHTTP2_CONTINUATION:  // nghttp2 bounds these per HEADERS
        return 0;
      case NGHTTP2_DATA:
        if (hd->length != 0 || (hd->flags & NGHTTP2_FLAG_END_STREAM)) {
          return 0;
        }
        break;
      default:
        break;
    }
    return Self(user_data)->TakeControlFrame() ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
  }

  // Announces how many body bytes the next DATA frame carries; SendData copies them straight
  // into the write buffer (no copy into nghttp2's own buffers).
  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t*, size_t length,
                          uint32_t* data_flags, nghttp2_data_source* source, void*) {
    // The provider carries the stream: nghttp2 calls for it only while it is open, and
    // OnStreamClose frees it only after nghttp2 is done with it.
    auto* s = static_cast<Connection::Stream*>(source->ptr);
    if (s == nullptr || !s->exchange) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    Exchange& ex = *s->exchange;
    const size_t n = std::min(length, ex.pending_body());
    if (n > 0) {
      *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    }
    if (n == ex.pending_body() && ex.body_complete()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      const auto& trailers = ex.trailers();
      if (!trailers.empty() && !s->trailers_submitted) {
        s->trailers_submitted = true;
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        std::vector<nghttp2_nv> nv;
        nv.reserve(trailers.size());
        for (const auto& h : trailers) {
          nv.push_back(MakeNv(h.name, h.value));
        }
        // nghttp2 copies the trailer block into its frame queue before this returns.
        for (auto& n2 : nv) {
          n2.flags = NGHTTP2_NV_FLAG_NONE;
        }
        nghttp2_submit_trailer(session, stream_id, nv.data(), nv.size());
      }
      return static_cast<ssize_t>(n);
    }
    if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }

  // A DATA frame announced by ReadBody: its 9-byte header, then the body bytes (never padded).
  static int SendData(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                      nghttp2_data_source* source, void* user_data) {
    auto* c = Self(user_data);
    if (c->out_len_ >= kWriteChunk) {
      return NGHTTP2_ERR_WOULDBLOCK;  // called again once this write is out
    }
    auto* s = static_cast<Connection::Stream*>(source->ptr);
    if (s == nullptr || !s->exchange || frame->data.padlen != 0) {
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    std::memcpy(c->GrowOut(9), framehd, 9);
    if (s->exchange->PullBody(c->GrowOut(length), length) != length) {
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    c->control_frames_.Credit(kControlFramesPerDataFrame +
                              static_cast<double>(length) / kResponseBytesPerControlFrame);
    return 0;
  }

  // Every other frame: appended to the write buffer, up to one chunk per write.
  static ssize_t Send(nghttp2_session*, const uint8_t* data, size_t length, int, void* user_data) {
    auto* c = Self(user_data);
    if (c->out_len_ >= kWriteChunk) {
      return NGHTTP2_ERR_WOULDBLOCK;
    }
    std::memcpy(c->GrowOut(length), data, length);
    return static_cast<ssize_t>(length);
  }
};

Connection::Connection(std::unique_ptr<ByteStream> stream, ExchangeFactory& factory,
                       Options options)
    : stream_(std::move(stream)),
      factory_(factory),
      options_(options),
      wake_timer_(stream_->executor()),
      deadline_timer_(stream_->executor()),
      control_frames_(options_.limits.max_control_frames_per_second,
                      options_.limits.max_control_frame_burst) {}

Connection::~Connection() {
  if (session_ != nullptr) {
    nghttp2_session_del(session_);
  }
}

void Connection::Close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  stream_->Close();
  deadline_timer_.cancel();
  Wake();
}

void Connection::GracefulClose() {
  if (closed_ || closing_ || session_ == nullptr) {
    return;
  }
  closing_ = true;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  Wake();
}

// A connection joins the ConnectionSet as its Run begins, and Run makes the session before it
// first suspends: a connection the drain finds open always has one.
void Connection::NotifyShutdown() {
  if (closed_ || closing_ || session_ == nullptr) {
    return;
  }
  nghttp2_submit_shutdown_notice(session_);
  Wake();
}

void Connection::ArmDeadline(std::chrono::steady_clock::time_point at, ConnectionEnd reason) {
  deadline_ = at;
  deadline_reason_ = reason;
  deadline_timer_.expires_at(at);
  deadline_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    if (auto c = weak.lock()) {
      c->OnDeadline();
    }
  });
}

// implements: issue 28 (5), server.idle_timeout_ms and the first-request part of
// server.handshake_timeout_ms. Never while a stream is open: a stream can last hours. A wait
// that completed after the deadline moved is stale and ignored (the new wait is pending).
void Connection::ArmIdleDeadlineIfIdle() {
  if (UnfinishedStreams() == 0 && !closed_ && !closing_) {
    ArmDeadline(std::chrono::steady_clock::now() + options_.limits.idle_timeout,
                ConnectionEnd::kIdleTimeout);
  } else if (closing_) {
    Wake();  // the write loop closes, or gives finished streams their grace
  }
}

void Connection::ResetFinishedStreamsAfterGrace() {
  if (finished_streams_grace_armed_) {
    return;
  }
  finished_streams_grace_armed_ = true;
  deadline_timer_.expires_after(kFinishedStreamGrace);
  deadline_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto c = weak.lock();
    if (ec || c == nullptr || c->closed_) {
      return;
    }
    for (auto& [id, s] : c->streams_) {
      if (s->awaiting_client_end && !s->reset_submitted) {
        s->reset_submitted = true;
        nghttp2_submit_rst_stream(c->session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
      }
    }
    c->Wake();
  });
}

void Connection::OnDeadline() {
  if (closed_ || closing_ || UnfinishedStreams() != 0 ||
      std::chrono::steady_clock::now() < deadline_) {
    return;
  }
  options_.observer->ConnectionEnded(deadline_reason_);
  GracefulClose();
}

bool Connection::TakeControlFrame() {
  if (control_frames_.Take()) {
    return true;
  }
  if (!flooded_) {
    flooded_ = true;
    options_.observer->ConnectionEnded(ConnectionEnd::kControlFrameFlood);
    nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
  }
  return false;
}

char* Connection::GrowOut(size_t n) {
  // The buffers only grow: their bytes are reused from one write to the next without clearing.
  if (shared_out_ != nullptr) {
    if (shared_out_->size() < out_len_ + n) {
      shared_out_->resize(std::max(out_len_ + n, 2 * shared_out_->size()));
    }
  } else {
    out_.Reserve(out_len_ + n, 0, out_len_);
  }
  char* at = out_data() + out_len_;
  out_len_ += n;
  return at;
}

void Connection::Wake() {
  if (wake_pending_) {
    return;  // the write loop has not run since the last wake-up: it will see this one too
  }
  wake_pending_ = true;
  wake_timer_.cancel();
}

void Connection::ResumeStream(int32_t stream_id) {
  to_resume_.push_back(stream_id);
  Wake();
}

void Connection::SubmitPendingResponses() {
  // Swapped, not moved: both vectors keep their capacity from one round to the next.
  resuming_.swap(to_resume_);
  to_resume_.clear();
  for (int32_t id : resuming_) {
    auto it = streams_.find(id);
    if (it == streams_.end() || !it->second->exchange) {
      continue;
    }
    Stream& s = *it->second;
    if (s.exchange->cancelled()) {
      if (!s.reset_submitted) {
        s.reset_submitted = true;
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
      }
      continue;
    }
    if (s.response_submitted) {
      nghttp2_session_resume_data(session_, id);
      continue;
    }
    const ResponseHead* head = s.exchange->head();
    if (head == nullptr) {
      continue;
    }
    s.response_submitted = true;
    std::string status = std::to_string(head->status);
    static const std::string kStatusName = ":status";
    std::vector<nghttp2_nv> nv;
    nv.reserve(head->headers.size() + 1);
    nv.push_back(MakeNv(kStatusName, status));
    nv.back().flags = NGHTTP2_NV_FLAG_NO_COPY_NAME;  // `status` is a local: copy the value
    for (const auto& h : head->headers) {
      nv.push_back(MakeNv(h.name, h.value));
    }
    if (s.exchange->body_complete() && s.exchange->pending_body() == 0 &&
        !s.exchange->trailers().empty()) {
      // A response with no body: its head, then its trailers ending the stream, and no DATA
      // frame, which a reader with no flow-control window would never receive; a status decided
      // early (a deadline, an error) always reaches the client.
      nghttp2_submit_headers(session_, NGHTTP2_FLAG_NONE, id, nullptr, nv.data(), nv.size(),
                             nullptr);
      std::vector<nghttp2_nv> trailers;
      for (const auto& h : s.exchange->trailers()) {
        trailers.push_back(MakeNv(h.name, h.value));
      }
      s.trailers_submitted = true;
      nghttp2_submit_headers(session_, NGHTTP2_FLAG_END_STREAM, id, nullptr, trailers.data(),
                             trailers.size(), nullptr);
      continue;
    }
    nghttp2_data_provider provider{};
    provider.source.ptr = &s;
    provider.read_callback = &Callbacks::ReadBody;
    nghttp2_submit_response(session_, id, nv.data(), nv.size(), &provider);
  }
}

void Connection::ResetAllExchanges() {
  auto streams = std::move(streams_);
  streams_.clear();
  awaiting_client_end_ = 0;
  for (auto& [id, s] : streams) {
    if (s->exchange && !s->response_complete) {
      s->exchange->OnReset();
    }
    // nghttp2 may still hold the record as a data source until the session goes: it stays, with
    // no exchange (ReadBody then fails the stream).
    s->exchange.reset();
    retired_.push_back(std::move(s));
  }
}

asio::awaitable<void> Connection::Run(std::string initial) {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &Callbacks::OnFrameSend);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Callbacks::OnStreamClose);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, &Callbacks::OnBeginFrame);
  nghttp2_session_callbacks_set_send_callback(cbs, &Callbacks::Send);
  nghttp2_session_callbacks_set_send_data_callback(cbs, &Callbacks::SendData);
  nghttp2_session_server_new(&session_, cbs, this);
  nghttp2_session_callbacks_del(cbs);

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options_.limits.max_header_list_bytes},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);

  auto self = shared_from_this();
  ArmDeadline(options_.first_request_deadline, ConnectionEnd::kHandshakeTimeout);
  asio::co_spawn(stream_->executor(), WriteLoop(), asio::detached);

  std::string buffer = std::move(initial);
  std::vector<char> read_buffer(32 * 1024);
  while (!closed_) {
    if (!buffer.empty()) {
      const auto rv = nghttp2_session_mem_recv(
          session_, reinterpret_cast<const uint8_t*>(buffer.data()), buffer.size());
      buffer.clear();
      if (rv < 0) {
        break;  // protocol error: nghttp2 queued a GOAWAY; the write loop flushes it
      }
      Wake();
    }
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
      break;
    }
    boost::system::error_code ec;
    const size_t n = co_await stream_->ReadSome(asio::buffer(read_buffer), ec);
    if (ec) {
      break;
    }
    buffer.assign(read_buffer.data(), n);
  }
  // Let the writer flush a pending GOAWAY before the socket closes.
  Wake();
  closed_ = true;
  deadline_timer_.cancel();
  ResetAllExchanges();
}

asio::awaitable<void> Connection::WriteLoop() {
  auto self = shared_from_this();
  while (true) {
    SubmitPendingResponses();
    out_len_ = 0;
    const bool shared = stream_->can_try_write();
    shared_out_ = shared ? &ThreadWriteBuffer() : nullptr;
    const bool sent = nghttp2_session_send(session_) == 0;
    std::string_view rest(out_data(), out_len_);
    shared_out_ = nullptr;
    if (!sent) {
      break;  // a fatal session error
    }
    if (!rest.empty()) {
      boost::system::error_code ec;
      if (shared) {
        rest.remove_prefix(stream_->TryWrite(asio::buffer(rest.data(), rest.size()), ec));
        if (ec) {
          break;
        }
        if (!rest.empty()) {
          out_.Reserve(rest.size(), 0, 0);
          std::memcpy(out_.data(), rest.data(), rest.size());
          rest = std::string_view(out_.data(), rest.size());
        }
      }
      if (!rest.empty()) {
        co_await stream_->WriteAll(asio::buffer(rest.data(), rest.size()), ec);
        if (ec) {
          break;
        }
      } else {
        // Written at once: yield all the same, as a write that waited would, so that a connection
        // with a long response to send takes turns with the thread's other connections.
        co_await asio::post(stream_->executor(), asio::use_awaitable);
      }
      continue;
    }
    // Closing (GOAWAY sent): stay while a stream still has a response to finish, e.g. trailers
    // behind data a slow reader has not made room for; the server's exit bound caps the wait.
    // Finished streams the client has not ended yet get a grace to do so: a socket closed right
    // after the trailers can lose them at a gRPC client.
    if (closed_ || (closing_ && streams_.empty())) {
      break;
    }
    if (closing_ && UnfinishedStreams() == 0) {
      ResetFinishedStreamsAfterGrace();
    }
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
      break;
    }
    if (!wake_pending_ && to_resume_.empty()) {
      wake_timer_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await wake_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    wake_pending_ = false;
  }
  closed_ = true;
  stream_->Close();
  deadline_timer_.cancel();
  ResetAllExchanges();
}

}  // namespace xb::net::http2
