// The subscriber side of the stream modes: thousands of Subscribe / SubscribeStatic streams
// driven by completion-queue threads (grpc++ generic async API, raw frame bytes decoded by
// frame_decoder.h). A thread per stream would not scale to the 10,000 streams the benchmarks
// open.
//
// A StreamWorker owns one CompletionQueue, one thread polling it, and the streams started on it.
// Each stream registers its topics when it opens — SubscribeStatic sends its request and
// half-closes; Subscribe sends Update{id: 1, adds} and keeps its request side open, answering
// every backend Ping with a Pong — and then reads frames until it ends. The worker's observer is
// told when the registration is acknowledged (Started for static, the Applied of update 1 for
// bidi), of every Messages frame, and of the end. Observer calls run on the worker's thread only,
// one at a time, so an observer may keep unsynchronized per-worker state.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
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
  // client library, for a cancelled or failed call) reported it. Nothing is called for `s` again.
  virtual void OnDone(Stream& s, const grpc::Status& status) = 0;
  // A frame that broke the protocol (undecodable, Messages before the acknowledgement, a second
  // Started, ...). The stream is cancelled next; OnDone follows.
  virtual void OnProtocolError(Stream& s, const std::string& what) = 0;
};

struct StreamSpec {
  StreamKind kind = StreamKind::kStatic;
  std::vector<std::string> topics;  // API topic bytes, registered with `cursor`
  uint64_t cursor = 0;
  size_t channel = 0;  // the caller's channel index, for reopening on the same connection
  uint64_t tag = 0;    // the caller's label (a topic index, a stream index)
};

// One stream. Its methods and fields are used on its worker's thread only, except Cancel().
class Stream {
 public:
  const StreamSpec& spec() const { return spec_; }
  // Ends the stream from the client side (TryCancel). Safe from any thread while the stream is
  // alive; StreamWorker::CancelAll is the way to reach streams from another thread.
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // The registration was acknowledged (OnReady was called).
  bool ready() const { return ready_; }

  // Observer scratch, per stream: the last sequence id seen, envelopes received, the target.
  uint64_t last_sequence_id = 0;
  uint64_t received = 0;
  uint64_t target = 0;

 private:
  friend class StreamWorker;
  enum class Op { kStart, kWrite, kRead, kFinish };
  struct Tag {
    Stream* stream;
    Op op;
  };
  struct PendingWrite {
    grpc::ByteBuffer bytes;
    bool writes_done = false;  // a half-close instead of a message
  };

  Stream(StreamSpec spec, StreamObserver* observer);
  void Begin(grpc::GenericStub* stub, grpc::CompletionQueue* cq);
  // Handles one completion; returns true when the stream is finished and no op is pending.
  bool OnEvent(Op op, bool ok);
  void OnFrame();
  void QueueWrite(grpc::ByteBuffer bytes, bool writes_done);
  void PumpWrites();
  void Read();
  void Fail(const std::string& what);

  const StreamSpec spec_;
  StreamObserver* const observer_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  grpc::ByteBuffer in_;
  grpc::Status status_;
  std::deque<PendingWrite> writes_;
  bool writing_ = false;
  bool ready_ = false;
  bool started_frame_ = false;  // bidi: the Started frame has arrived
  bool finishing_ = false;
  bool done_ = false;
  int pending_ = 0;  // ops issued and not yet completed
  std::atomic<bool> cancelled_{false};
  std::string flat_;  // a multi-slice frame, flattened
  FrameView frame_;
  Tag start_tag_{this, Op::kStart};
  Tag write_tag_{this, Op::kWrite};
  Tag read_tag_{this, Op::kRead};
  Tag finish_tag_{this, Op::kFinish};
};

class StreamWorker {
 public:
  explicit StreamWorker(StreamObserver* observer);
  ~StreamWorker();  // Shutdown() if not done yet
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  // Opens a stream on `stub`'s channel; any thread, also from inside an observer call.
  void Open(grpc::GenericStub* stub, StreamSpec spec);
  // Cancels every live stream; any thread.
  void CancelAll();
  // Streams opened and not yet done.
  size_t live() const { return live_.load(std::memory_order_acquire); }
  // Shuts the queue down and joins the thread. Call once every stream is done (live() == 0),
  // or after CancelAll; waits for the outstanding completions either way.
  void Shutdown();

 private:
  void Loop();

  StreamObserver* const observer_;
  grpc::CompletionQueue cq_;
  std::atomic<size_t> live_{0};
  std::mutex mu_;
  std::unordered_map<Stream*, std::unique_ptr<Stream>> streams_;  // guarded by mu_
  std::thread thread_;
  bool shut_down_ = false;
};

// The serialized request that registers `topics` at `cursor`: a SubscribeStaticRequest, or a
// SubscribeRequest{update{id: 1, adds}}.
std::string RegistrationRequest(StreamKind kind, const std::vector<std::string>& topics,
                                uint64_t cursor);

}  // namespace xb::bench
