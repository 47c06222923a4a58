// The libnghttp2 subscriber transport (--transport h2, the default): the streams of one worker
// on one epoll thread, over plain-TCP HTTP/2 connections (h2c with prior knowledge) driven by
// nghttp2 client sessions (h2_connection.h). It exists because grpc++ costs about 9 us of client
// CPU per received message: with 1,000 subscribers on one topic the load client alone needed
// ~9 ms to read one publish's deliveries, so the publish -> receive latency it reported was the
// client's. Here a delivery costs one slice of a 256 KiB read, nghttp2's frame parsing and the
// frame_decoder.h decode, with no copy when a gRPC message lies whole in one DATA chunk.
//
// The worker thread owns the connections (one per channel index asked for, connected on first
// use and again after one failed or got GOAWAY) and runs every nghttp2 call and every observer
// call. Open, CancelAll and Stream::Cancel from other threads queue a request under a mutex and
// wake the thread through an eventfd; the thread serves the queue before each epoll_wait, so a
// request made from inside an observer call takes effect on the next loop iteration. Each
// iteration reads what arrived (large reads, parsed at once), then serves the queue, then hands
// every connection's queued frames to the kernel in at most one write per connection.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "h2_connection.h"
#include "subscriber_worker.h"

namespace xb::bench {

class H2Stream;

// What an H2StreamWorker provides to its streams.
class H2Host {
 public:
  virtual ~H2Host() = default;
  // Stream `key` asked to be cancelled (H2Stream::Cancel); any thread.
  virtual void RequestCancel(uint64_t key) = 0;
  // `s` ended and its observer was told (OnDone); the host may destroy it now. Worker thread.
  virtual void Finished(H2Stream* s) = 0;
};

// One Subscribe / SubscribeStatic call on an H2Connection (the registration request, frames
// decoded by Stream::OnMessage). Worker thread only, except Cancel.
class H2Stream final : public Stream, public H2Call {
 public:
  // `key` is the host's name for the stream (stream ids are per connection and assigned later).
  // Sets the registration request: SubscribeStatic half-closes after it; Subscribe keeps its
  // request side open (API-259: the half-close would end the stream).
  H2Stream(StreamSpec spec, StreamObserver* observer, H2Host* host, uint64_t key);

  uint64_t key() const { return key_; }
  // The :path of the stream's RPC.
  std::string_view path() const;
  void Cancel() override;
  // Sets cancelled() for a cancel the caller queues itself (the host's CancelAll, which holds
  // the lock RequestCancel takes); false when the stream was cancelled already.
  bool MarkCancelledByHost() { return MarkCancelled(); }
  // Tells the observer and the host (which may destroy the stream); CANCELLED instead of
  // `status` when the stream was cancelled. Also ends a stream that never reached a connection.
  void End(const grpc::Status& status) override;

 private:
  void Send(std::string message) override { AppendRequest(message); }
  void OnResponseMessage(std::string_view bytes, Clock::time_point now) override {
    OnMessage(bytes, now);
  }
  void OnFramingError(const char* what) override { Fail(what); }

  H2Host* const host_;
  const uint64_t key_;
  bool ended_ = false;  // worker thread
};

class H2StreamWorker final : public SubscriberWorker, private H2Host {
 public:
  // Streams go to `target` (HOST:PORT, resolved here once; when it does not resolve every
  // stream ends UNAVAILABLE). Starts the thread; nothing connects before the first Open. The
  // epoll and eventfd instances it cannot do without abort the process when they fail.
  H2StreamWorker(std::string target, StreamObserver* observer);
  ~H2StreamWorker() override;  // Shutdown() if not done yet
  H2StreamWorker(const H2StreamWorker&) = delete;
  H2StreamWorker& operator=(const H2StreamWorker&) = delete;

  void Open(StreamSpec spec) override;
  void CancelAll() override;
  size_t live() const override { return live_.load(std::memory_order_acquire); }
  void Shutdown() override;

 private:
  // H2Host
  void RequestCancel(uint64_t key) override;
  void Finished(H2Stream* s) override;

  void Wake();
  void Loop();
  // Starts the queued streams and sends the queued cancels.
  void ServeRequests();
  // Flushes every connection, updates what epoll watches, drops the closed connections.
  void FlushConnections();
  H2Connection* ConnectionFor(size_t channel);

  // Const after construction.
  const std::string target_;
  StreamObserver* const observer_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  std::string resolve_error_;  // non-empty: the target did not resolve
  UniqueFd epoll_;
  UniqueFd wake_;  // eventfd

  std::atomic<size_t> live_{0};
  std::atomic<uint64_t> next_key_{1};
  std::atomic<bool> wake_pending_{false};  // an eventfd write not yet consumed
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<H2Stream>> streams_;  // guarded by mu_
  std::vector<H2Stream*> opens_;                                     // guarded by mu_
  std::vector<uint64_t> cancels_;                                    // guarded by mu_

  // Worker thread only.
  std::unordered_map<size_t, std::unique_ptr<PolledConnection>> conns_;  // by channel index
  std::vector<std::unique_ptr<PolledConnection>> retired_;  // after GOAWAY, until their streams end
  std::vector<uint8_t> buf_;                                // the read buffer
  bool requested_here_ = false;  // a request was queued on this thread since the last serving

  std::thread thread_;
  bool shut_down_ = false;  // the caller's thread
};

}  // namespace xb::bench
