// The transport-neutral side of the stream modes' subscribers: what a stream is, who is told what
// about it, and the worker interface both subscriber transports implement — grpc++'s generic
// async API (stream_client.h) and libnghttp2 over plain TCP (h2_stream_client.h). The mode code
// (stream_latency.cc, stream_modes.cc, stream_verify.cc) sees only this header and stream_run.h.
//
// A worker owns one thread, the connections it opened and the streams started on it. Each stream
// registers its topics when it opens — SubscribeStatic sends its request and half-closes;
// Subscribe sends Update{id: 1, adds} and keeps its request side open, answering every backend
// Ping with a Pong — and then reads frames until it ends. The worker's observer is told when the
// registration is acknowledged (Started for static, the Applied of update 1 for bidi), of every
// Messages frame, and of the end. Observer calls run on the worker's thread only, one at a time,
// so an observer may keep unsynchronized per-worker state.
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frame_decoder.h"
#include "loadgen.h"

namespace xb::bench {

class Stream;

// Told about one worker's streams, on that worker's thread.
class StreamObserver {
 public:
  virtual ~StreamObserver() = default;
  // The registration was acknowledged: `f` is the Started (static) or Applied (bidi) frame.
  virtual void OnReady(Stream& s, const FrameView& f, Clock::time_point now) = 0;
  // A Messages frame of `frame_bytes` bytes arrived after OnReady.
  virtual void OnMessages(Stream& s, const FrameView& f, size_t frame_bytes,
                          Clock::time_point now) = 0;
  // The stream ended (OnReady may never have been called); `status` as the server (or the
  // client transport, for a cancelled or failed call) reported it: CANCELLED after our cancel,
  // UNAVAILABLE when the connection failed. Nothing is called for `s` again.
  virtual void OnDone(Stream& s, const grpc::Status& status) = 0;
  // A frame that broke the protocol (undecodable, Messages before the acknowledgement, a second
  // Started, ...). The stream is cancelled next; OnDone follows.
  virtual void OnProtocolError(Stream& s, const std::string& what) = 0;
};

struct StreamSpec {
  StreamKind kind = StreamKind::kStatic;
  std::vector<std::string> topics;  // API topic bytes, registered with `cursor`
  uint64_t cursor = 0;
  size_t channel = 0;  // the connection (index) the stream goes on; reopening keeps it
  uint64_t tag = 0;    // the caller's label (a topic index, a stream index)
};

// One stream. Its methods and fields are used on its worker's thread only, except Cancel() and
// cancelled().
class Stream {
 public:
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const StreamSpec& spec() const { return spec_; }
  // Ends the stream from the client side (RST_STREAM CANCEL); OnDone follows with CANCELLED
  // unless the stream had already ended. Safe from any thread while the stream is alive;
  // SubscriberWorker::CancelAll is the way to reach streams from another thread.
  virtual void Cancel() = 0;
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // The registration was acknowledged (OnReady was called).
  bool ready() const { return ready_; }

  // Observer scratch, per stream: the last sequence id seen, envelopes received, the target.
  uint64_t last_sequence_id = 0;
  uint64_t received = 0;
  uint64_t target = 0;

 protected:
  Stream(StreamSpec spec, StreamObserver* observer);

  // One response message (its bytes without the 5-byte gRPC prefix) read at `now`: decodes it
  // and runs the checks and observer calls both transports share. A broken frame is reported
  // (OnProtocolError) and cancels the stream.
  void OnMessage(std::string_view bytes, Clock::time_point now);
  // The end, told to the observer once.
  void NotifyDone(const grpc::Status& status) { observer_->OnDone(*this, status); }
  // Sets cancelled(); false when it was set already.
  bool MarkCancelled() { return !cancelled_.exchange(true, std::memory_order_relaxed); }
  // Queues one serialized SubscribeRequest on the request side (a bidi Pong).
  virtual void Send(std::string message) = 0;
  // Reports a protocol error (OnProtocolError) and cancels the stream.
  void Fail(const std::string& what);

  const StreamSpec spec_;

 private:
  StreamObserver* const observer_;
  std::atomic<bool> cancelled_{false};
  bool ready_ = false;
  bool started_frame_ = false;  // bidi: the Started frame has arrived
  FrameView frame_;
};

// One worker: a thread, its connections and its streams. Implemented by GrpcStreamWorker
// (stream_client.h) and H2StreamWorker (h2_stream_client.h); MakeSubscriberWorker picks one
// per --transport.
class SubscriberWorker {
 public:
  virtual ~SubscriberWorker() = default;
  // Opens a stream on connection `spec.channel` of this worker (connected on first use, and
  // again after it failed); any thread, also from inside an observer call.
  virtual void Open(StreamSpec spec) = 0;
  // Cancels every live stream; any thread. On return every stream opened before reads
  // cancelled().
  virtual void CancelAll() = 0;
  // Streams opened and not yet done (OnDone returned).
  virtual size_t live() const = 0;
  // Stops the thread and closes the connections. Cancels what is still live and waits for it to
  // end (60 s, then the process exits 1). Idempotent; called by the destructor too.
  virtual void Shutdown() = 0;

 protected:
  // Shutdown's first step for both transports: cancels what is live and waits until every stream
  // has ended (60 s, then the process exits 1).
  void CancelAndDrain();
};

// A worker of transport `o.transport` for streams to `o.target`, telling `observer`
// (subscriber_transports.cc, the one place that knows both transports).
std::unique_ptr<SubscriberWorker> MakeSubscriberWorker(const Options& o, StreamObserver* observer);

// The serialized request that registers `topics` at `cursor`: a SubscribeStaticRequest, or a
// SubscribeRequest{update{id: 1, adds}}.
std::string RegistrationRequest(StreamKind kind, const std::vector<std::string>& topics,
                                uint64_t cursor);

// A serialized SubscribeRequest{pong{nonce}}.
std::string PongRequest(uint64_t nonce);

}  // namespace xb::bench
