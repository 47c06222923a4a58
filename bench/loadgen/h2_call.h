// The gRPC side of one call on an H2Connection (h2_connection.h): the request body in gRPC's
// length-prefixed framing, the response's messages reassembled across DATA chunks, and the status
// from its trailers, mapped as grpc++ maps them (the gRPC PROTOCOL-HTTP2 spec). The connection
// drives it; a subclass gives the messages and the end their meaning: a subscriber stream
// (h2_stream_client.h) or a unary call (h2_unary_client.cc).
#pragma once

#include <grpcpp/support/status.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "loadgen.h"

namespace xb::bench {

class H2Connection;

// Whether a call's request side ends after the messages given so far (END_STREAM), or stays open
// for more (a bidi stream: the half-close would end it, API-259).
enum class RequestEnd { kHalfClose, kKeepOpen };

// One gRPC call as its connection sees it: the request body nghttp2 reads, the response header
// fields, the reassembly of the response's length-prefixed messages across DATA chunks, and the
// status it ends with. A subclass says what a whole message means (OnResponseMessage) and what
// the end means (End). Owner's thread only. An object may carry one call after another: Reset
// once the last one ended.
class H2Call {
 public:
  virtual ~H2Call() = default;
  H2Call(const H2Call&) = delete;
  H2Call& operator=(const H2Call&) = delete;

  // The connection the current call was started on (null before Start and after Reset).
  H2Connection* connection() const { return conn_; }
  // The call ended with `status`: the connection has forgotten it (or it never reached one).
  // Called once per call; the object may be destroyed or Reset from here on.
  virtual void End(const grpc::Status& status) = 0;

 protected:
  H2Call() = default;

  // One response message (its bytes without the 5-byte gRPC prefix) read at `now`. The bytes
  // are valid during the call only.
  virtual void OnResponseMessage(std::string_view bytes, Clock::time_point now) = 0;
  // The response body broke gRPC framing (a compressed message, or one over 64 MiB): the rest is
  // ignored, and the call ends INTERNAL `what` unless the subclass cancels it first.
  virtual void OnFramingError(const char* what) = 0;

  // Sets the request (before the connection's Start): `message` framed, then END_STREAM unless
  // `end` keeps the request side open.
  void SetRequest(std::string_view message, RequestEnd end);
  // Queues one more message on a request side kept open (a bidi Pong).
  void AppendRequest(std::string_view message);
  // Forgets the last call (it must have ended): the object can carry the next one.
  void Reset();

 private:
  friend class H2Connection;

  // The request body bytes nghttp2 asks for (DataReadCb): the queued messages, then END_STREAM,
  // or NGHTTP2_ERR_DEFERRED until AppendRequest queues more (kKeepOpen).
  ssize_t ReadBody(uint8_t* buf, size_t length, uint32_t* data_flags);
  // A DATA chunk of the response body, read at `now`.
  void OnData(const uint8_t* data, size_t size, Clock::time_point now);
  // A response header or trailer field.
  void OnHeader(std::string_view name, std::string_view value);
  // HTTP/2 stream closed with `error_code` (RFC 9113 §7): the status from the trailers, the
  // RST_STREAM code or the HTTP status, as grpc++ reports them.
  grpc::Status EndStatus(uint32_t error_code) const;

  H2Connection* conn_ = nullptr;  // set by H2Connection::Start
  int32_t id_ = 0;                // HTTP/2 stream id, once started
  bool headers_sent_ = false;
  std::string body_;  // request messages, length-prefixed, not yet taken by nghttp2
  size_t body_off_ = 0;
  bool body_end_ = true;  // END_STREAM after body_
  // Response message reassembly: prefix bytes of the message being read, its body so far.
  uint8_t prefix_[5] = {};
  size_t prefix_len_ = 0;
  uint32_t need_ = 0;  // body bytes still missing from partial_
  std::string partial_;
  const char* broken_ = nullptr;  // a framing error: the rest of the body is ignored
  int http_status_ = 0;
  int grpc_status_ = -1;  // -1 until a grpc-status field arrives
  std::string grpc_message_;
};

}  // namespace xb::bench
