// One HTTP/2 connection of the libnghttp2 transports and the gRPC calls (h2_call.h) it carries: a
// non-blocking TCP socket speaking h2c with prior knowledge (RFC 9113 §3.3, no TLS) and an nghttp2
// client session. Both libnghttp2 transports use it: the subscriber streams
// (h2_stream_client.h) and the unary calls (h2_unary_client.h). Its owner polls the socket
// (PolledConnection below) and calls OnReadable / OnWritable / Flush; every method runs on the
// owner's thread, and so do all the calls' callbacks.
//
// gRPC over HTTP/2 (the gRPC PROTOCOL-HTTP2 spec): a request is HEADERS (:method POST, :scheme
// http, :path /SERVICE/METHOD, :authority, content-type application/grpc, te trailers, and
// grpc-timeout when the call has a deadline) and DATA carrying length-prefixed messages (1 flag
// byte, 0 = uncompressed; 4-byte big-endian length); the response is HEADERS, DATA with messages
// the same way, and trailers carrying grpc-status and grpc-message (or one trailers-only
// HEADERS).
#pragma once

#include <grpcpp/support/status.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "h2_call.h"
#include "loadgen.h"

namespace xb::bench {

// Owns one file descriptor (a socket, an epoll or an eventfd instance).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset();

 private:
  int fd_ = -1;
};

// Resolves `target` (HOST:PORT, HOST possibly a bracketed IPv6 literal) into `addr`. Returns ""
// or why it failed.
std::string ResolveTarget(const std::string& target, sockaddr_storage* addr, socklen_t* addr_len);

class H2Connection {
 public:
  // Starts a non-blocking connect to `addr`; calls may be started at once (their frames wait
  // for the connection). On a failure the connection is closed() from the start, with the reason
  // in error().
  H2Connection(const sockaddr_storage& addr, socklen_t addr_len, std::string authority);
  ~H2Connection();  // ends the calls still on it (UNAVAILABLE), closes the socket
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  int fd() const { return fd_.get(); }
  // The socket or session failed or ended; every call on it has ended, error() says why.
  bool closed() const { return closed_; }
  // No new call may start here: closed, or the server sent GOAWAY.
  bool draining() const { return closed_ || goaway_; }
  const std::string& error() const { return error_; }
  size_t calls() const { return calls_.size(); }
  // The socket must be polled for writability (connecting, or output the kernel did not take).
  bool wants_writable() const { return connecting_ || out_off_ < out_.size(); }

  // Submits `call`'s request (SetRequest) to `path` (/SERVICE/METHOD), with a grpc-timeout
  // header when `grpc_timeout` is not empty ("10S"). On a draining connection, or when nghttp2
  // refuses the request, the call ends at once (UNAVAILABLE). The frames go out on Flush.
  void Start(H2Call* call, std::string_view path, std::string_view grpc_timeout = {});
  // Sends RST_STREAM CANCEL for `call` (started here and not ended). A call whose HEADERS had
  // not gone out ends here (CANCELLED); the others end when the RST_STREAM is sent, with the
  // status the stream had by then (CANCELLED unless the trailers were in).
  void Cancel(H2Call* call);

  // Readiness. OnReadable reads up to a few `buf`-sized chunks and parses them at once (the
  // calls' callbacks run here); both complete a pending connect.
  void OnReadable(uint8_t* buf, size_t size);
  void OnWritable();
  // Moves the session's queued frames into the socket: at most one write.
  void Flush();

 private:
  friend class H2Call;  // AppendRequest queues its id in resume_

  struct SessionDeleter {
    void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
  };

  // Ends every call with UNAVAILABLE `why` and marks the connection closed.
  void Close(const std::string& why);
  // Completes a non-blocking connect; false (and closed) when it failed.
  bool FinishConnect();
  H2Call* Find(int32_t id) const;
  void EndCall(int32_t id, uint32_t error_code);

  static int OnHeaderCb(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                        size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                        void* self);
  static int OnDataChunkCb(nghttp2_session*, uint8_t flags, int32_t id, const uint8_t* data,
                           size_t len, void* self);
  static int OnFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int OnFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int OnFrameNotSendCb(nghttp2_session*, const nghttp2_frame* frame, int error, void* self);
  static int OnStreamCloseCb(nghttp2_session*, int32_t id, uint32_t error_code, void* self);
  static ssize_t DataReadCb(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                            uint32_t* data_flags, nghttp2_data_source* source, void* self);

  const std::string authority_;
  UniqueFd fd_;
  std::unique_ptr<nghttp2_session, SessionDeleter> session_;
  std::unordered_map<int32_t, H2Call*> calls_;  // started, not ended
  std::vector<int32_t> resume_;                 // calls with request bytes for a deferred body
  std::string out_;                             // bytes for the socket; out_off_ of them written
  size_t out_off_ = 0;
  bool connecting_ = true;
  bool closed_ = false;
  bool goaway_ = false;
  std::string error_;
  Clock::time_point read_at_;  // when the bytes being parsed were read
};

// An H2Connection watched by an epoll instance: registered (Watch) for reading, and for writing
// while it wants_writable(). Owner's thread. An epoll_ctl failure aborts the process (the
// owner's loop cannot go on without it).
class PolledConnection {
 public:
  PolledConnection(int epoll_fd, std::unique_ptr<H2Connection> conn)
      : epoll_fd_(epoll_fd), conn_(std::move(conn)) {}
  // The socket is closed by the connection's destructor, which also takes it out of epoll.
  ~PolledConnection() = default;
  PolledConnection(const PolledConnection&) = delete;
  PolledConnection& operator=(const PolledConnection&) = delete;

  H2Connection& conn() const { return *conn_; }
  // Registers the socket, with `tag` as the events' data.ptr (a connection closed from the
  // start is not registered: its Flush returns false).
  void Watch(void* tag);
  // Flushes the connection and brings the registration up to date. False when it is closed
  // (then no longer registered).
  bool Flush();

 private:
  const int epoll_fd_;
  const std::unique_ptr<H2Connection> conn_;
  void* tag_ = nullptr;
  uint32_t events_ = 0;  // registered for; 0 = not registered
};

}  // namespace xb::bench
