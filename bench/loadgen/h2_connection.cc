#include "h2_connection.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace xb::bench {
namespace {

// Flow control must never hold delivery back: a 16 MiB window per stream (the server's largest
// frame is ~2 MiB) and 1 GiB for the connection. nghttp2 sends WINDOW_UPDATE on its own once
// half a window is consumed, and we consume every byte as it is parsed.
constexpr uint32_t kStreamWindow = 16u << 20;
constexpr int32_t kConnectionWindow = 1 << 30;
constexpr int kMaxReadsPerEvent = 8;        // then the other connections get a turn
constexpr size_t kMaxPendingOut = 1 << 20;  // unsent bytes taken from the session at once

nghttp2_nv Header(std::string_view name, std::string_view value) {
  return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
                    const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

H2Connection* Self(void* p) { return static_cast<H2Connection*>(p); }

}  // namespace

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string ResolveTarget(const std::string& target, sockaddr_storage* addr, socklen_t* addr_len) {
  const size_t colon = target.rfind(':');
  std::string host = colon == std::string::npos ? target : target.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : target.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rv = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  std::string error;
  if (rv != 0 || res == nullptr) {
    error = "cannot resolve " + target + ": " + ::gai_strerror(rv);
  } else {
    std::memcpy(addr, res->ai_addr, res->ai_addrlen);
    *addr_len = res->ai_addrlen;
  }
  if (res != nullptr) ::freeaddrinfo(res);
  return error;
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

H2Call* H2Connection::Find(int32_t id) const {
  auto it = calls_.find(id);
  return it == calls_.end() ? nullptr : it->second;
}

void H2Connection::Start(H2Call* c, std::string_view path, std::string_view grpc_timeout) {
  if (draining()) {
    c->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        closed_ ? error_ : "the connection is going away (GOAWAY)"));
    return;
  }
  const nghttp2_nv headers[] = {
      Header(":method", "POST"),
      Header(":scheme", "http"),
      Header(":path", path),
      Header(":authority", authority_),
      Header("content-type", "application/grpc"),
      Header("te", "trailers"),
      Header("grpc-timeout", grpc_timeout),
  };
  // The body is found by stream id, never through a pointer nghttp2 keeps: a stream cancelled
  // before its HEADERS went out ends (and may be freed) while nghttp2 may still hold the request.
  nghttp2_data_provider body;
  body.source.ptr = nullptr;
  body.read_callback = DataReadCb;
  // nghttp2 holds requests over the server's SETTINGS_MAX_CONCURRENT_STREAMS in its own queue
  // (see the constructor) and sends them as streams close.
  const size_t header_count = std::size(headers) - (grpc_timeout.empty() ? 1 : 0);
  const int32_t id =
      nghttp2_submit_request(session_.get(), nullptr, headers, header_count, &body, nullptr);
  if (id < 0) {
    c->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        std::string("nghttp2_submit_request: ") + nghttp2_strerror(id)));
    return;
  }
  c->conn_ = this;
  c->id_ = id;
  calls_.emplace(id, c);
}

void H2Connection::Cancel(H2Call* c) {
  if (Find(c->id_) != c) return;  // ended meanwhile
  // A request still queued in nghttp2 (not sent) is dropped by this instead: nghttp2 then tells
  // neither close nor send, so the call ends here.
  (void)nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, c->id_, NGHTTP2_CANCEL);
  if (!c->headers_sent_) {
    calls_.erase(c->id_);
    c->End(grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled"));
  }
}

void H2Connection::EndCall(int32_t id, uint32_t error_code) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  H2Call* c = it->second;
  calls_.erase(it);
  c->End(c->EndStatus(error_code));
}

void H2Connection::Close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  error_ = why;
  auto calls = std::move(calls_);
  calls_.clear();
  for (auto& [id, c] : calls) c->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
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
  if (H2Call* c = Self(self)->Find(frame->hd.stream_id)) {
    c->OnHeader(std::string_view(reinterpret_cast<const char*>(name), namelen),
                std::string_view(reinterpret_cast<const char*>(value), valuelen));
  }
  return 0;
}

int H2Connection::OnDataChunkCb(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data,
                                size_t len, void* self) {
  if (H2Call* c = Self(self)->Find(id)) c->OnData(data, len, Self(self)->read_at_);
  return 0;
}

int H2Connection::OnFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  // nghttp2 itself closes the streams above the GOAWAY's last stream id (REFUSED_STREAM).
  if (frame->hd.type == NGHTTP2_GOAWAY) Self(self)->goaway_ = true;
  return 0;
}

int H2Connection::OnFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (H2Call* c = Self(self)->Find(frame->hd.stream_id)) c->headers_sent_ = true;
  return 0;
}

int H2Connection::OnFrameNotSendCb(nghttp2_session*, const nghttp2_frame* frame, int error,
                                   void* self) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* conn = Self(self);
  auto it = conn->calls_.find(frame->hd.stream_id);
  if (it == conn->calls_.end()) return 0;
  H2Call* c = it->second;
  conn->calls_.erase(it);
  c->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      std::string("request not sent: ") + nghttp2_strerror(error)));
  return 0;
}

int H2Connection::OnStreamCloseCb(nghttp2_session*, int32_t id, uint32_t error_code, void* self) {
  Self(self)->EndCall(id, error_code);
  return 0;
}

ssize_t H2Connection::DataReadCb(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                                 uint32_t* data_flags, nghttp2_data_source*, void* self) {
  H2Call* c = Self(self)->Find(id);
  // Ended here already (our RST_STREAM is queued): nghttp2 resets the stream on this error.
  if (c == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  return c->ReadBody(buf, length, data_flags);
}

// ---------------------------------------------------------------------------------------------
// PolledConnection
// ---------------------------------------------------------------------------------------------

namespace {

void EpollCtl(int epoll_fd, int op, int fd, uint32_t events, void* tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = tag;
  if (::epoll_ctl(epoll_fd, op, fd, &ev) != 0) {
    std::fprintf(stderr, "loadgen: h2 transport: epoll_ctl: %s\n", std::strerror(errno));
    std::abort();
  }
}

}  // namespace

void PolledConnection::Watch(void* tag) {
  tag_ = tag;
  if (conn_->closed()) return;
  events_ = EPOLLIN | EPOLLOUT;  // writability completes the connect
  EpollCtl(epoll_fd_, EPOLL_CTL_ADD, conn_->fd(), events_, tag_);
}

bool PolledConnection::Flush() {
  H2Connection& c = *conn_;
  c.Flush();
  if (c.closed()) {
    if (events_ != 0 && c.fd() >= 0) (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd(), nullptr);
    events_ = 0;
    return false;
  }
  const uint32_t want = EPOLLIN | (c.wants_writable() ? EPOLLOUT : 0u);
  if (want != events_) {
    events_ = want;
    EpollCtl(epoll_fd_, EPOLL_CTL_MOD, c.fd(), events_, tag_);
  }
  return true;
}

}  // namespace xb::bench
