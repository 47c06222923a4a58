#include "h2_connection.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace xb::bench {
namespace {

constexpr char kSubscribeStaticPath[] = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic";
constexpr char kSubscribePath[] = "/xmtp.backend.v1.SubscriptionService/Subscribe";
// Flow control must never hold delivery back: a 16 MiB window per stream (the server's largest
// frame is ~2 MiB) and 1 GiB for the connection. nghttp2 sends WINDOW_UPDATE on its own once
// half a window is consumed, and we consume every byte as it is parsed.
constexpr uint32_t kStreamWindow = 16u << 20;
constexpr int32_t kConnectionWindow = 1 << 30;
constexpr int kMaxReadsPerEvent = 8;         // then the other connections get a turn
constexpr size_t kMaxPendingOut = 1 << 20;   // unsent bytes taken from the session at once
constexpr uint32_t kMaxMessage = 64u << 20;  // as grpc++'s MaxReceiveMessageSize here
constexpr size_t kPrefix = 5;                // gRPC message prefix: flag, 4-byte length

std::string Framed(const std::string& message) {
  std::string out(kPrefix, '\0');
  const auto n = static_cast<uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + message;
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

nghttp2_nv Header(std::string_view name, std::string_view value) {
  return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
                    const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

// grpc-message is percent-encoded (PROTOCOL-HTTP2: "Status-Message").
std::string PercentDecode(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

// A RST_STREAM code as grpc++ reports it (PROTOCOL-HTTP2, "Errors").
grpc::Status RstStatus(uint32_t code) {
  const std::string what = "RST_STREAM with error code " + std::to_string(code);
  switch (code) {
    case NGHTTP2_REFUSED_STREAM:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, what);
    case NGHTTP2_CANCEL:
      return grpc::Status(grpc::StatusCode::CANCELLED, what);
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, what);
    case NGHTTP2_INADEQUATE_SECURITY:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, what);
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, what);
  }
}

// An HTTP status without grpc-status, as grpc++ maps it (http-grpc-status-mapping.md).
grpc::Status HttpStatus(int http) {
  const std::string what = "HTTP status " + std::to_string(http);
  switch (http) {
    case 400:
      return grpc::Status(grpc::StatusCode::INTERNAL, what);
    case 401:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, what);
    case 403:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, what);
    case 404:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, what);
    case 429:
    case 502:
    case 503:
    case 504:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, what);
    default:
      return grpc::Status(grpc::StatusCode::UNKNOWN, what);
  }
}

H2Connection* Self(void* p) { return static_cast<H2Connection*>(p); }

}  // namespace

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

// ---------------------------------------------------------------------------------------------
// H2Stream
// ---------------------------------------------------------------------------------------------

H2Stream::H2Stream(StreamSpec spec, StreamObserver* observer, H2Host* host, uint64_t key)
    : Stream(std::move(spec), observer), host_(host), key_(key) {}

void H2Stream::Cancel() {
  if (MarkCancelled()) host_->RequestCancel(key_);
}

void H2Stream::End(const grpc::Status& status) {
  if (ended_) return;
  ended_ = true;
  // A call we cancelled ends CANCELLED whatever raced with the RST_STREAM, as with TryCancel.
  NotifyDone(cancelled() ? grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled") : status);
  host_->Finished(this);  // may destroy this
}

void H2Stream::Send(std::string message) {
  body_ += Framed(message);
  if (conn_ != nullptr) conn_->resume_.push_back(id_);  // Flush resumes the deferred body
}

ssize_t H2Stream::ReadBody(uint8_t* buf, size_t length, uint32_t* data_flags) {
  const size_t n = std::min(length, body_.size() - body_off_);
  std::memcpy(buf, body_.data() + body_off_, n);
  body_off_ += n;
  if (body_off_ == body_.size()) {
    body_.clear();
    body_off_ = 0;
    if (body_end_) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      // Bidi: the request side stays open (API-259) until there is a Pong to send.
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

void H2Stream::OnHeader(std::string_view name, std::string_view value) {
  if (name == ":status") {
    http_status_ = std::atoi(std::string(value).c_str());
  } else if (name == "grpc-status") {
    const int code = std::atoi(std::string(value).c_str());
    const bool valid = !value.empty() && value.find_first_not_of("0123456789") == value.npos &&
                       code <= grpc::StatusCode::UNAUTHENTICATED;
    grpc_status_ = valid ? code : grpc::StatusCode::UNKNOWN;
  } else if (name == "grpc-message") {
    grpc_message_ = PercentDecode(value);
  }
}

void H2Stream::OnData(const uint8_t* p, size_t n, Clock::time_point now) {
  while (n > 0 && !broken_) {
    if (prefix_len_ == 0 && n >= kPrefix) {
      // At a message boundary: a message that lies whole in this chunk is decoded in place.
      const uint32_t len = BigEndian32(p + 1);
      if (p[0] == 0 && n - kPrefix >= len) {
        OnMessage(std::string_view(reinterpret_cast<const char*>(p + kPrefix), len), now);
        p += kPrefix + len;
        n -= kPrefix + len;
        continue;
      }
    }
    if (prefix_len_ < kPrefix) {
      const size_t take = std::min(kPrefix - prefix_len_, n);
      std::memcpy(prefix_ + prefix_len_, p, take);
      prefix_len_ += take;
      p += take;
      n -= take;
      if (prefix_len_ < kPrefix) return;
      need_ = BigEndian32(prefix_ + 1);
      if (prefix_[0] != 0 || need_ > kMaxMessage) {
        broken_ = true;
        Fail(prefix_[0] != 0 ? "a compressed message (none was negotiated)"
                             : "a message over 64 MiB");
        return;
      }
      partial_.clear();
      partial_.reserve(need_);
    }
    const size_t take = std::min<size_t>(need_, n);
    partial_.append(reinterpret_cast<const char*>(p), take);
    need_ -= static_cast<uint32_t>(take);
    p += take;
    n -= take;
    if (need_ == 0) {
      prefix_len_ = 0;
      OnMessage(partial_, now);
    }
  }
}

grpc::Status H2Stream::EndStatus(uint32_t error_code) const {
  if (grpc_status_ >= 0) {
    if (grpc_status_ == grpc::StatusCode::OK && prefix_len_ > 0) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended inside a message");
    }
    return grpc::Status(static_cast<grpc::StatusCode>(grpc_status_), grpc_message_);
  }
  if (error_code != NGHTTP2_NO_ERROR) return RstStatus(error_code);
  if (http_status_ != 0 && http_status_ != 200) return HttpStatus(http_status_);
  return grpc::Status(grpc::StatusCode::UNKNOWN, "the stream ended without grpc-status");
}

// ---------------------------------------------------------------------------------------------
// H2Connection
// ---------------------------------------------------------------------------------------------

H2Connection::H2Connection(const sockaddr_storage& addr, socklen_t addr_len, std::string authority)
    : authority_(std::move(authority)) {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session* session = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) {
    Close("nghttp2_session_callbacks_new failed");
    return;
  }
  nghttp2_session_callbacks_set_on_header_callback(cb, OnHeaderCb);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnDataChunkCb);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnFrameRecvCb);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, OnFrameSendCb);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, OnFrameNotSendCb);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnStreamCloseCb);
  // No request goes out before the server's SETTINGS say how many streams it takes
  // (SETTINGS_MAX_CONCURRENT_STREAMS; nghttp2 would otherwise assume 100 and the server refuse
  // the excess with REFUSED_STREAM). Requests over the limit wait in nghttp2's queue and go out
  // as streams close, as they do with grpc++.
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(cb);
    Close("nghttp2_option_new failed");
    return;
  }
  nghttp2_option_set_peer_max_concurrent_streams(option, 0);
  const int rv = nghttp2_session_client_new2(&session, cb, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) {
    Close(std::string("nghttp2_session_client_new: ") + nghttp2_strerror(rv));
    return;
  }
  session_.reset(session);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
  };
  // Both only queue frames (they fail on out of memory alone); Flush sends them after the
  // connection preface.
  (void)nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  (void)nghttp2_session_set_local_window_size(session, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);

  fd_ = UniqueFd(::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_.valid()) {
    Close(std::string("socket: ") + std::strerror(errno));
    return;
  }
  const int one = 1;
  (void)::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), addr_len) != 0 &&
      errno != EINPROGRESS) {
    Close(std::string("connect: ") + std::strerror(errno));
  }
  // connecting_ stays true even after an immediate success: the first writability says so.
}

H2Connection::~H2Connection() { Close("connection closed by the client"); }

H2Stream* H2Connection::Find(int32_t id) const {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second;
}

void H2Connection::Start(H2Stream* s) {
  if (draining()) {
    s->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        closed_ ? error_ : "the connection is going away (GOAWAY)"));
    return;
  }
  const nghttp2_nv headers[] = {
      Header(":method", "POST"),
      Header(":scheme", "http"),
      Header(":path",
             s->spec().kind == StreamKind::kStatic ? kSubscribeStaticPath : kSubscribePath),
      Header(":authority", authority_),
      Header("content-type", "application/grpc"),
      Header("te", "trailers"),
  };
  s->body_ = Framed(RegistrationRequest(s->spec().kind, s->spec().topics, s->spec().cursor));
  // A server-streaming client half-closes after its one request; a bidi client keeps its
  // request side open (API-259: the half-close would end the stream).
  s->body_end_ = s->spec().kind == StreamKind::kStatic;
  // The body is found by stream id, never through a pointer nghttp2 keeps: a stream cancelled
  // before its HEADERS went out ends (and is freed) while nghttp2 may still hold the request.
  nghttp2_data_provider body;
  body.source.ptr = nullptr;
  body.read_callback = DataReadCb;
  // nghttp2 holds requests over the server's SETTINGS_MAX_CONCURRENT_STREAMS in its own queue
  // (see the constructor) and sends them as streams close.
  const int32_t id =
      nghttp2_submit_request(session_.get(), nullptr, headers, std::size(headers), &body, nullptr);
  if (id < 0) {
    s->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        std::string("nghttp2_submit_request: ") + nghttp2_strerror(id)));
    return;
  }
  s->conn_ = this;
  s->id_ = id;
  streams_.emplace(id, s);
}

void H2Connection::Cancel(H2Stream* s) {
  if (Find(s->id_) != s) return;  // ended meanwhile
  // A request still queued in nghttp2 (not sent) is dropped by this instead: nghttp2 then tells
  // neither close nor send, so the stream ends here.
  (void)nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, s->id_, NGHTTP2_CANCEL);
  if (!s->headers_sent_) {
    streams_.erase(s->id_);
    s->End(grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled"));
  }
}

void H2Connection::EndStream(int32_t id, uint32_t error_code) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  H2Stream* s = it->second;
  streams_.erase(it);
  s->End(s->EndStatus(error_code));
}

void H2Connection::Close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  error_ = why;
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, s] : streams) s->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
}

bool H2Connection::FinishConnect() {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    Close(std::string("connect: ") + std::strerror(err));
    return false;
  }
  connecting_ = false;
  return true;
}

void H2Connection::OnReadable(uint8_t* buf, size_t size) {
  if (closed_ || (connecting_ && !FinishConnect())) return;
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    const ssize_t n = ::read(fd_.get(), buf, size);
    if (n > 0) {
      // Latency samples take this time: when the bytes carrying the frame were read.
      read_at_ = Clock::now();
      const ssize_t rv = nghttp2_session_mem_recv(session_.get(), buf, static_cast<size_t>(n));
      if (rv < 0) {
        Close(std::string("HTTP/2 session failed: ") + nghttp2_strerror(static_cast<int>(rv)));
        return;
      }
      if (static_cast<size_t>(n) < size) return;
    } else if (n == 0) {
      Close("connection closed by the server");
      return;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      Close(std::string("read: ") + std::strerror(errno));
      return;
    }
  }
}

void H2Connection::OnWritable() {
  // The write itself waits for the owner's Flush: one write per connection per loop iteration.
  if (!closed_ && connecting_) (void)FinishConnect();
}

void H2Connection::Flush() {
  if (closed_) return;
  nghttp2_session* session = session_.get();
  for (int32_t id : resume_) (void)nghttp2_session_resume_data(session, id);  // gone: ignored
  resume_.clear();
  if (out_off_ == out_.size()) {
    out_.clear();
    out_off_ = 0;
  } else if (out_off_ > out_.size() / 2) {
    out_.erase(0, out_off_);
    out_off_ = 0;
  }
  while (out_.size() - out_off_ < kMaxPendingOut) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n < 0) {
      Close(std::string("HTTP/2 session failed: ") + nghttp2_strerror(static_cast<int>(n)));
      return;
    }
    if (n == 0) break;
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (!connecting_ && out_off_ < out_.size()) {
    const ssize_t w =
        ::send(fd_.get(), out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
    if (w > 0) {
      out_off_ += static_cast<size_t>(w);
    } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      Close(std::string("write: ") + std::strerror(errno));
      return;
    }
  }
  if (out_off_ == out_.size() && nghttp2_session_want_read(session) == 0 &&
      nghttp2_session_want_write(session) == 0) {
    Close("the server ended the connection (GOAWAY)");
  }
}

int H2Connection::OnHeaderCb(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                             size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                             void* self) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (H2Stream* s = Self(self)->Find(frame->hd.stream_id)) {
    s->OnHeader(std::string_view(reinterpret_cast<const char*>(name), namelen),
                std::string_view(reinterpret_cast<const char*>(value), valuelen));
  }
  return 0;
}

int H2Connection::OnDataChunkCb(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data,
                                size_t len, void* self) {
  if (H2Stream* s = Self(self)->Find(id)) s->OnData(data, len, Self(self)->read_at_);
  return 0;
}

int H2Connection::OnFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  // nghttp2 itself closes the streams above the GOAWAY's last stream id (REFUSED_STREAM).
  if (frame->hd.type == NGHTTP2_GOAWAY) Self(self)->goaway_ = true;
  return 0;
}

int H2Connection::OnFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (H2Stream* s = Self(self)->Find(frame->hd.stream_id)) s->headers_sent_ = true;
  return 0;
}

int H2Connection::OnFrameNotSendCb(nghttp2_session*, const nghttp2_frame* frame, int error,
                                   void* self) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* conn = Self(self);
  auto it = conn->streams_.find(frame->hd.stream_id);
  if (it == conn->streams_.end()) return 0;
  H2Stream* s = it->second;
  conn->streams_.erase(it);
  s->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      std::string("request not sent: ") + nghttp2_strerror(error)));
  return 0;
}

int H2Connection::OnStreamCloseCb(nghttp2_session*, int32_t id, uint32_t error_code, void* self) {
  Self(self)->EndStream(id, error_code);
  return 0;
}

ssize_t H2Connection::DataReadCb(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                                 uint32_t* data_flags, nghttp2_data_source*, void* self) {
  H2Stream* s = Self(self)->Find(id);
  // Ended here already (our RST_STREAM is queued): nghttp2 resets the stream on this error.
  if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  return s->ReadBody(buf, length, data_flags);
}

}  // namespace xb::bench
