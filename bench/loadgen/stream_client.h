// The grpc++ subscriber transport (--transport grpc): streams driven by a completion-queue thread
// through grpc++'s generic async API, raw frame bytes decoded by frame_decoder.h. A thread per
// stream would not scale to the 10,000 streams the benchmarks open. grpc++ costs about 9 us of
// client CPU per received message; h2_stream_client.h is the cheaper transport.
//
// A GrpcStreamWorker owns one CompletionQueue, one thread polling it, one grpc::Channel (one TCP
// connection) per channel index it was asked for, and the streams started on it. The contract
// (observer calls on the worker's thread, one at a time) is SubscriberWorker's.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "subscriber_worker.h"

namespace xb::bench {

class GrpcStream;

class GrpcStreamWorker final : public SubscriberWorker {
 public:
  // Streams go to `target` (HOST:PORT); nothing connects before the first Open.
  GrpcStreamWorker(std::string target, StreamObserver* observer);
  ~GrpcStreamWorker() override;  // Shutdown() if not done yet
  GrpcStreamWorker(const GrpcStreamWorker&) = delete;
  GrpcStreamWorker& operator=(const GrpcStreamWorker&) = delete;

  void Open(StreamSpec spec) override;
  void CancelAll() override;
  size_t live() const override { return live_.load(std::memory_order_acquire); }
  void Shutdown() override;

 private:
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<grpc::GenericStub> stub;
  };

  void Loop();

  const std::string target_;
  StreamObserver* const observer_;
  grpc::CompletionQueue cq_;
  std::atomic<size_t> live_{0};
  std::mutex mu_;
  std::unordered_map<size_t, Channel> channels_;                          // guarded by mu_
  std::unordered_map<GrpcStream*, std::unique_ptr<GrpcStream>> streams_;  // guarded by mu_
  std::thread thread_;
  bool shut_down_ = false;
};

}  // namespace xb::bench
