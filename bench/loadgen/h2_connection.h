// One HTTP/2 connection of the libnghttp2 subscriber transport (h2_stream_client.h) and the gRPC
// streams it carries: a non-blocking TCP socket speaking h2c with prior knowledge (RFC 9113
// §3.3, no TLS) and an nghttp2 client session. Its owner (an H2StreamWorker) polls the socket
// and calls OnReadable / OnWritable / Flush; every method runs on the owner's thread, and so do
// all the observer calls the streams make.
//
// gRPC over HTTP/2 (the gRPC PROTOCOL-HTTP2 spec): a request is HEADERS (:method POST, :scheme
// http, :path /SERVICE/METHOD, :authority, content-type application/grpc, te trailers) and DATA
// carrying length-prefixed messages (1 flag byte, 0 = uncompressed; 4-byte big-endian length);
// the response is HEADERS, DATA with messages the same way, and trailers carrying grpc-status and
// grpc-message (or one trailers-only HEADERS).
#pragma once

#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "subscriber_worker.h"

namespace xb::bench {

class H2Connection;
class H2Stream;

// What an H2StreamWorker provides to its streams and connections.
class H2Host {
 public:
  virtual ~H2Host() = default;
  // Stream `key` asked to be cancelled (H2Stream::Cancel); any thread.
  virtual void RequestCancel(uint64_t key) = 0;
  // `s` ended and its observer was told (OnDone); the host may destroy it now. Owner's thread.
  virtual void Finished(H2Stream* s) = 0;
};

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

// One Subscribe / SubscribeStatic call: its request body, the reassembly of the response's gRPC
// messages across DATA frames, and the status from the trailers.
class H2Stream final : public Stream {
 public:
  // `key` is the host's name for the stream (stream ids are per connection and assigned later).
  H2Stream(StreamSpec spec, StreamObserver* observer, H2Host* host, uint64_t key);

  uint64_t key() const { return key_; }
  // The connection it was started on (null before); owner's thread.
  H2Connection* connection() const { return conn_; }
  void Cancel() override;
  // Sets cancelled() for a cancel the caller queues itself (the host's CancelAll, which holds
  // the lock RequestCancel takes); false when the stream was cancelled already.
  bool MarkCancelledByHost() { return MarkCancelled(); }
  // Ends a stream that never reached a connection, or whose connection is gone: tells the
  // observer and the host. CANCELLED instead of `status` when the stream was cancelled.
  void End(const grpc::Status& status);

 private:
  friend class H2Connection;

  void Send(std::string message) override;
  // A DATA chunk of the response body, read at `now`.
  void OnData(const uint8_t* data, size_t size, Clock::time_point now);
  // A response header or trailer field.
  void OnHeader(std::string_view name, std::string_view value);
  // HTTP/2 stream closed with `error_code` (RFC 9113 §7): the status from the trailers, our
  // cancel, the RST_STREAM code or the HTTP status, as grpc++ reports them.
  grpc::Status EndStatus(uint32_t error_code) const;
  // The request body bytes nghttp2 asks for (DataReadCb): the queued messages, then END_STREAM
  // (static) or NGHTTP2_ERR_DEFERRED until Send queues more (bidi).
  ssize_t ReadBody(uint8_t* buf, size_t length, uint32_t* data_flags);

  H2Host* const host_;
  const uint64_t key_;
  // Owner's thread only:
  H2Connection* conn_ = nullptr;  // set by H2Connection::Start
  int32_t id_ = 0;                // HTTP/2 stream id, once started
  bool headers_sent_ = false;
  bool ended_ = false;
  std::string body_;  // request messages, length-prefixed, not yet taken by nghttp2
  size_t body_off_ = 0;
  bool body_end_ = false;  // END_STREAM after body_ (static: the request is all there is)
  // Response message reassembly: prefix bytes of the message being read, its body so far.
  uint8_t prefix_[5] = {};
  size_t prefix_len_ = 0;
  uint32_t need_ = 0;  // body bytes still missing from partial_
  std::string partial_;
  bool broken_ = false;  // a framing error: the rest of the body is ignored
  int http_status_ = 0;
  int grpc_status_ = -1;  // -1 until a grpc-status field arrives
  std::string grpc_message_;
};

class H2Connection {
 public:
  // Starts a non-blocking connect to `addr`; streams may be started at once (their frames wait
  // for the connection). On a failure the connection is closed() from the start, with the reason
  // in error().
  H2Connection(const sockaddr_storage& addr, socklen_t addr_len, std::string authority);
  ~H2Connection();  // ends the streams still on it (UNAVAILABLE), closes the socket
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  int fd() const { return fd_.get(); }
  // The socket or session failed or ended; every stream on it has ended, error() says why.
  bool closed() const { return closed_; }
  // No new stream may start here: closed, or the server sent GOAWAY.
  bool draining() const { return closed_ || goaway_; }
  const std::string& error() const { return error_; }
  size_t streams() const { return streams_.size(); }
  // The socket must be polled for writability (connecting, or output the kernel did not take).
  bool wants_writable() const { return connecting_ || out_off_ < out_.size(); }

  // Submits `s`'s request. On a draining connection the stream ends at once (UNAVAILABLE).
  void Start(H2Stream* s);
  // Sends RST_STREAM CANCEL for `s` (a stream started here and not ended).
  void Cancel(H2Stream* s);

  // Readiness. OnReadable reads up to a few `buf`-sized chunks and parses them at once
  // (observer calls happen here); both complete a pending connect.
  void OnReadable(uint8_t* buf, size_t size);
  void OnWritable();
  // Moves the session's queued frames into the socket: at most one write.
  void Flush();

 private:
  friend class H2Stream;  // Send queues its id in resume_

  struct SessionDeleter {
    void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
  };

  // Ends every stream with UNAVAILABLE `why` and marks the connection closed.
  void Close(const std::string& why);
  // Completes a non-blocking connect; false (and closed) when it failed.
  bool FinishConnect();
  H2Stream* Find(int32_t id) const;
  void EndStream(int32_t id, uint32_t error_code);

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
  std::unordered_map<int32_t, H2Stream*> streams_;  // started, not ended
  std::vector<int32_t> resume_;  // bidi streams with request bytes for a deferred body
  std::string out_;              // bytes for the socket; out_off_ of them written
  size_t out_off_ = 0;
  bool connecting_ = true;
  bool closed_ = false;
  bool goaway_ = false;
  std::string error_;
  Clock::time_point read_at_;  // when the bytes being parsed were read
};

}  // namespace xb::bench
