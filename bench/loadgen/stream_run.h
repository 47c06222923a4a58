// What the stream modes (stream_latency.cc, stream_modes.cc, stream_verify.cc) share: the run's
// measured window and counters, the observer behaviour common to every mode, and the pool of
// workers (of the transport --transport picks) that opens streams and waits for their
// acknowledgement. Header-only because most of it is templated on the mode's observer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loadgen.h"
#include "subscriber_worker.h"

namespace xb::bench {

// The modes (each returns the process exit status, see RunStreamMode).
int RunLatency(const Options& o);       // stream_latency.cc
int RunStreamVerify(const Options& o);  // stream_verify.cc

inline constexpr uint64_t kNever = UINT64_MAX;

// Counts non-OK statuses by code and keeps the first message.
struct ErrorTally {
  std::map<int, uint64_t> codes;
  std::string first;

  void Add(int code, const std::string& message) {
    ++codes[code];
    if (first.empty()) first = std::to_string(code) + " " + message;
  }
  void Merge(const ErrorTally& other) {
    for (const auto& [c, n] : other.codes) codes[c] += n;
    if (first.empty()) first = other.first;
  }
  uint64_t total() const {
    uint64_t n = 0;
    for (const auto& [c, k] : codes) n += k;
    return n;
  }
  std::string Codes() const {
    std::string out;
    for (const auto& [c, n] : codes) {
      out += (out.empty() ? "" : ",") + std::to_string(c) + ":" + std::to_string(n);
    }
    return out.empty() ? "-" : out;
  }
};

// State the main thread and every worker's observer share.
struct RunState {
  const Options* options = nullptr;
  uint64_t run = 0;
  std::atomic<uint64_t> window_start_ns{kNever};  // measured interval, steady-clock ns
  std::atomic<uint64_t> window_stop_ns{kNever};
  std::atomic<int> ready{0};   // streams acknowledged (first opening only, in deliver)
  std::atomic<int> failed{0};  // streams that ended before being acknowledged
  std::atomic<bool> stopping{false};

  bool Measured(uint64_t ns) const {
    return ns >= window_start_ns.load(std::memory_order_relaxed) &&
           ns < window_stop_ns.load(std::memory_order_relaxed);
  }
};

// Counters every observer keeps; merged after the workers are joined.
struct StreamTally {
  uint64_t received = 0;
  uint64_t frames = 0;
  uint64_t frame_bytes = 0;
  uint64_t out_of_order = 0;
  uint64_t wrong_topic = 0;
  uint64_t stream_errors = 0;  // acknowledged streams that ended without our cancel
  uint64_t protocol_errors = 0;
  std::string first_protocol_error;
  ErrorTally errors;

  void Merge(const StreamTally& o) {
    received += o.received;
    frames += o.frames;
    frame_bytes += o.frame_bytes;
    out_of_order += o.out_of_order;
    wrong_topic += o.wrong_topic;
    stream_errors += o.stream_errors;
    protocol_errors += o.protocol_errors;
    if (first_protocol_error.empty()) first_protocol_error = o.first_protocol_error;
    errors.Merge(o.errors);
  }
};

// The behaviour the three modes share: readiness, ends, protocol errors, order checks.
class BaseObserver : public StreamObserver {
 public:
  explicit BaseObserver(RunState* run) : run_(run) {}

  void OnReady(Stream& s, const FrameView& f, Clock::time_point) override {
    if (f.targets.size() != s.spec().topics.size()) {
      NoteProtocolError("acknowledgement with " + std::to_string(f.targets.size()) +
                        " targets for " + std::to_string(s.spec().topics.size()) + " topics");
    }
    if (!s.cancelled()) run_->ready.fetch_add(1, std::memory_order_relaxed);
  }

  void OnDone(Stream& s, const grpc::Status& status) override {
    const bool ours = s.cancelled() && status.error_code() == grpc::StatusCode::CANCELLED;
    if (!s.ready()) {
      if (!ours) {
        run_->failed.fetch_add(1, std::memory_order_relaxed);
        tally.errors.Add(status.error_code(), status.error_message());
      }
    } else if (!ours) {
      ++tally.stream_errors;
      tally.errors.Add(status.error_code(), status.error_message());
    }
  }

  void OnProtocolError(Stream&, const std::string& what) override { NoteProtocolError(what); }

  StreamTally tally;

 protected:
  // Counts, checks order and topic; returns whether envelope `e` is in order.
  void Check(Stream& s, const EnvelopeView& e) {
    ++tally.received;
    ++s.received;
    if (e.sequence_id <= s.last_sequence_id) ++tally.out_of_order;
    s.last_sequence_id = e.sequence_id;
    if (s.spec().topics.size() == 1 && e.topic != s.spec().topics[0]) ++tally.wrong_topic;
  }

  void NoteProtocolError(const std::string& what) {
    ++tally.protocol_errors;
    if (tally.first_protocol_error.empty()) tally.first_protocol_error = what;
  }

  RunState* const run_;
};

// Workers, each with its observer; stream i goes to channel (connection) i / per_channel of
// `channels`, served by worker channel % workers.
template <typename Observer>
struct Pool {
  size_t channels = 1;
  std::vector<std::unique_ptr<Observer>> observers;
  std::vector<std::unique_ptr<SubscriberWorker>> workers;

  size_t live() const {
    size_t n = 0;
    for (const auto& w : workers) n += w->live();
    return n;
  }
  void CancelAll() {
    for (auto& w : workers) w->CancelAll();
  }
  // Waits until no stream is live; false after `timeout`.
  bool WaitIdle(double timeout_s) const {
    const auto deadline = Clock::now() + Seconds(timeout_s);
    while (live() > 0) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  void Shutdown() {
    for (auto& w : workers) w->Shutdown();
  }
};

inline size_t ChannelCount(const Options& o, int streams) {
  return static_cast<size_t>((streams + o.streams_per_channel - 1) / o.streams_per_channel);
}

inline constexpr int kWorkers = 1;  // the load client runs on one CPU; one polling thread is enough

// Opens streams [first, first + n) with topics `topic_of(i)` and waits until they are all
// acknowledged or one failed. Returns seconds taken, or -1 (and prints why).
template <typename Observer, typename TopicOf>
double OpenAndWait(const Options& o, RunState& run, Pool<Observer>& pool, int first, int n,
                   TopicOf topic_of) {
  const int ready0 = run.ready.load();
  const auto t0 = Clock::now();
  for (int i = first; i < first + n; ++i) {
    const size_t c = static_cast<size_t>(i / o.streams_per_channel) % pool.channels;
    StreamSpec spec{.kind = o.stream,
                    .topics = {topic_of(i)},
                    .cursor = 0,
                    .channel = c,
                    .tag = static_cast<uint64_t>(i)};
    pool.workers[c % pool.workers.size()]->Open(std::move(spec));
  }
  const auto deadline = t0 + Seconds(o.open_timeout_s);
  while (run.ready.load() - ready0 < n) {
    if (run.failed.load() > 0) {
      std::printf("loadgen: %d stream(s) failed before being acknowledged\n", run.failed.load());
      return -1;
    }
    if (Clock::now() > deadline) {
      std::printf("loadgen: only %d of %d streams acknowledged within %.0f s\n",
                  run.ready.load() - ready0, n, o.open_timeout_s);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Exit status for a failed opening: 3 when the server does not implement the RPC.
template <typename Observer>
int OpenFailure(Pool<Observer>& pool) {
  pool.CancelAll();
  pool.Shutdown();
  ErrorTally errors;
  for (const auto& obs : pool.observers) errors.Merge(obs->tally.errors);
  std::printf("FIRST_ERROR %s\n", errors.first.c_str());
  return errors.codes.count(grpc::StatusCode::UNIMPLEMENTED) > 0 ? 3 : 1;
}

// A pool of kWorkers workers over `channels` connections; `run->options` picks the transport.
template <typename Observer, typename... Args>
Pool<Observer> MakePool(RunState* run, size_t channels, Args... args) {
  Pool<Observer> pool;
  pool.channels = channels;
  for (int w = 0; w < kWorkers; ++w) {
    pool.observers.push_back(std::make_unique<Observer>(run, args...));
    pool.workers.push_back(MakeSubscriberWorker(*run->options, pool.observers.back().get()));
  }
  return pool;
}

inline StreamTally MergeTallies(const auto& observers) {
  StreamTally t;
  for (const auto& obs : observers) t.Merge(obs->tally);
  return t;
}

}  // namespace xb::bench
