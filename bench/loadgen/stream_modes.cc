// The stream modes of bench/loadgen (see the comment at the top of loadgen.cc for the options):
//
// subscribe-latency  S streams (stream s registers topic s % T, fresh topics of this run, cursor
//   0) all acknowledged first; then --clients publishers send --envelopes per Publish round-robin
//   over the T topics at --rate publishes/s (0: back to back), each envelope carrying its send
//   time (steady clock, the last 8 bytes of the MLS payload). Latency = receive time of the frame
//   - send time, one sample per (envelope, subscriber), for envelopes sent in the measured
//   interval. After the publishers stop, waits up to --grace for the expected deliveries; reports
//   missing, out-of-order (a sequence id not above the stream's last) and wrong-topic envelopes.
// deliver  publishes --prefill envelopes to each of T fresh topics, then keeps S streams reading
//   from cursor 0 (stream s on topic s % T): a stream that reached its Started target is cancelled
//   and reopened. Reports envelopes received per second in the measured interval (catch-up
//   delivery rate), envelopes per Messages frame and wire bytes per envelope.
// idle-streams  opens a few streams first (one per channel, at least 100) and cancels them, so
//   connections and one-time allocations exist; reads the server's VmRSS; opens S streams, each
//   on its own empty topic, waits until all are acknowledged, reads VmRSS again; cancels them and
//   reads it a third time. Reports (open - before) / S in KiB.
// stream-verify  (stream_verify.cc) the correctness gate run before any of them.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loadgen.h"
#include "stream_client.h"
#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {

int RunStreamVerify(const Options& o);  // stream_verify.cc

namespace {

namespace v1 = ::xmtp::backend::v1;

constexpr uint64_t kNever = UINT64_MAX;

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

// Subscriber channels (one TCP connection each) and their generic stubs.
struct Channels {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;

  Channels(const std::string& target, size_t n) {
    for (size_t c = 0; c < n; ++c) {
      channels.push_back(MakeChannel(target, static_cast<int>(c)));
      stubs.push_back(std::make_unique<grpc::GenericStub>(channels.back()));
    }
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

class LatencyObserver : public BaseObserver {
 public:
  using BaseObserver::BaseObserver;

  void OnMessages(Stream& s, const FrameView& f, size_t frame_bytes,
                  Clock::time_point now) override {
    const uint64_t now_ns = SteadyNs(now);
    ++tally.frames;
    tally.frame_bytes += frame_bytes;
    for (const auto& e : f.envelopes) {
      Check(s, e);
      const uint64_t sent = ReadSendTime(e.data.data(), e.data.size());
      if (run_->Measured(sent) && now_ns >= sent) {
        const auto us =
            static_cast<uint32_t>(std::min<uint64_t>((now_ns - sent) / 1000, UINT32_MAX));
        latencies_us.push_back(us);
        auto [it, inserted] = spread_us.try_emplace(sent, us, us);
        if (!inserted) {
          it->second.first = std::min(it->second.first, us);
          it->second.second = std::max(it->second.second, us);
        }
        measured_received.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  std::vector<uint32_t> latencies_us;
  // Per publish (keyed by its send time): the earliest and the latest delivery to any
  // subscriber. The earliest is the server's publish-to-wire path; the latest adds the fan-out.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> spread_us;
  std::atomic<uint64_t> measured_received{0};
};

class DeliverObserver : public BaseObserver {
 public:
  DeliverObserver(RunState* run, StreamWorker** worker, Channels* channels)
      : BaseObserver(run), worker_(worker), channels_(channels) {}

  void OnReady(Stream& s, const FrameView& f, Clock::time_point now) override {
    BaseObserver::OnReady(s, f, now);
    s.target = f.targets.empty() ? 0 : f.targets[0].through_sequence_id;
    if (s.target == 0) {
      NoteProtocolError("Started target 0 on a prefilled topic");
      s.Cancel();
    }
  }

  void OnMessages(Stream& s, const FrameView& f, size_t frame_bytes,
                  Clock::time_point now) override {
    const bool measured = run_->Measured(SteadyNs(now));
    for (const auto& e : f.envelopes) Check(s, e);
    if (measured) {
      measured_envelopes += f.envelopes.size();
      ++measured_frames;
      measured_bytes += frame_bytes;
    }
    if (s.last_sequence_id >= s.target && !s.cancelled()) {
      ++completed;
      if (s.received != static_cast<uint64_t>(run_->options->prefill)) ++incomplete;
      s.Cancel();
    }
  }

  void OnDone(Stream& s, const grpc::Status& status) override {
    BaseObserver::OnDone(s, status);
    const bool ours = s.cancelled() && status.error_code() == grpc::StatusCode::CANCELLED;
    // Reopen a stream that ended because it was done, never one the server failed (that would
    // spin), never after the run.
    if (ours && s.ready() && !run_->stopping.load(std::memory_order_relaxed)) {
      StreamSpec again = s.spec();
      (*worker_)->Open(channels_->stubs[again.channel].get(), std::move(again));
    }
  }

  uint64_t measured_envelopes = 0;
  uint64_t measured_frames = 0;
  uint64_t measured_bytes = 0;
  uint64_t completed = 0;
  uint64_t incomplete = 0;

 private:
  StreamWorker** const worker_;  // the worker this observer serves (set after construction)
  Channels* const channels_;
};

class IdleObserver : public BaseObserver {
 public:
  using BaseObserver::BaseObserver;

  void OnReady(Stream& s, const FrameView& f, Clock::time_point now) override {
    BaseObserver::OnReady(s, f, now);
    for (const auto& t : f.targets) {
      if (t.through_sequence_id != 0) NoteProtocolError("a fresh topic with a non-zero target");
    }
  }

  void OnMessages(Stream& s, const FrameView& f, size_t, Clock::time_point) override {
    for (const auto& e : f.envelopes) Check(s, e);
  }
};

// Workers, each with its observer; stream i goes to channel i / per_channel and the worker of
// that channel (channel % workers).
template <typename Observer>
struct Pool {
  std::vector<std::unique_ptr<Observer>> observers;
  std::vector<std::unique_ptr<StreamWorker>> workers;

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

size_t ChannelCount(const Options& o, int streams) {
  return static_cast<size_t>((streams + o.streams_per_channel - 1) / o.streams_per_channel);
}

constexpr int kWorkers = 1;  // the load client runs on one CPU; one polling thread is enough

// Opens streams [first, first + n) with topics `topic_of(i)` and waits until they are all
// acknowledged or one failed. Returns seconds taken, or -1 (and prints why).
template <typename Observer, typename TopicOf>
double OpenAndWait(const Options& o, RunState& run, Pool<Observer>& pool, Channels& ch, int first,
                   int n, TopicOf topic_of) {
  const int ready0 = run.ready.load();
  const auto t0 = Clock::now();
  for (int i = first; i < first + n; ++i) {
    const size_t c = static_cast<size_t>(i / o.streams_per_channel) % ch.stubs.size();
    StreamSpec spec{.kind = o.stream,
                    .topics = {topic_of(i)},
                    .cursor = 0,
                    .channel = c,
                    .tag = static_cast<uint64_t>(i)};
    pool.workers[c % pool.workers.size()]->Open(ch.stubs[c].get(), std::move(spec));
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

template <typename Observer, typename... Args>
Pool<Observer> MakePool(RunState* run, Args... args) {
  Pool<Observer> pool;
  for (int w = 0; w < kWorkers; ++w) {
    pool.observers.push_back(std::make_unique<Observer>(run, args...));
    pool.workers.push_back(std::make_unique<StreamWorker>(pool.observers.back().get()));
  }
  return pool;
}

StreamTally MergeTallies(const auto& observers) {
  StreamTally t;
  for (const auto& obs : observers) t.Merge(obs->tally);
  return t;
}

// ---------------------------------------------------------------------------------------------
// subscribe-latency
// ---------------------------------------------------------------------------------------------

struct PublisherResult {
  uint64_t ok = 0;
  uint64_t envelopes_measured = 0;
  uint64_t expected = 0;  // deliveries owed for envelopes sent in the measured interval
  ErrorTally errors;
};

void RunPublisher(const Options& o, const RunState& run, int p, Clock::time_point stop,
                  const std::vector<uint64_t>& subscribers_of, PublisherResult& out) {
  auto channel = MakeChannel(o.target, 1000000 + p);
  auto stub = v1::PublishService::NewStub(channel);
  uint64_t topic_cursor = static_cast<uint64_t>(p);
  uint64_t counter = 0;
  const auto interval = o.rate > 0 ? Seconds(o.clients / o.rate) : Clock::duration::zero();
  auto next = Clock::now();
  v1::PublishRequest req;
  v1::PublishResponse resp;
  std::vector<uint64_t> topics(static_cast<size_t>(o.envelopes));
  while (true) {
    if (o.rate > 0) {
      next += interval;
      if (next >= stop) break;
      std::this_thread::sleep_until(next);
    } else if (Clock::now() >= stop) {
      break;
    }
    req.Clear();
    for (int e = 0; e < o.envelopes; ++e) {
      topics[static_cast<size_t>(e)] = topic_cursor % static_cast<uint64_t>(o.topics);
      topic_cursor += static_cast<uint64_t>(o.clients);
      req.add_envelopes()->mutable_group_message()->set_data(
          PrivateMessage(RunGroupId(run.run, topics[static_cast<size_t>(e)]), run.run,
                         static_cast<uint64_t>(p), counter++, static_cast<size_t>(o.payload)));
    }
    resp.Clear();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const uint64_t sent = SteadyNs(Clock::now());
    for (auto& env : *req.mutable_envelopes()) {
      StampSendTime(*env.mutable_group_message()->mutable_data(), sent);
    }
    const grpc::Status s = stub->Publish(&ctx, req, &resp);
    if (!s.ok()) {
      out.errors.Add(s.error_code(), s.error_message());
      continue;
    }
    ++out.ok;
    if (run.Measured(sent)) {
      out.envelopes_measured += static_cast<uint64_t>(o.envelopes);
      for (uint64_t t : topics) out.expected += subscribers_of[t];
    }
  }
}

int RunLatency(const Options& o) {
  RunState run;
  run.options = &o;
  run.run = RunNonce();
  const int n = o.subscribers;
  Channels ch(o.target, ChannelCount(o, n));
  auto pool = MakePool<LatencyObserver>(&run);
  const auto topic_of = [&](int i) { return TopicOf(RunGroupId(run.run, i % o.topics)); };
  const double open_s = OpenAndWait(o, run, pool, ch, 0, n, topic_of);
  if (open_s < 0) return OpenFailure(pool);
  std::vector<uint64_t> subscribers_of(static_cast<size_t>(o.topics));
  for (int i = 0; i < n; ++i) ++subscribers_of[static_cast<size_t>(i % o.topics)];

  const auto start = Clock::now();
  const auto measure_start = start + Seconds(o.warmup_s);
  const auto stop = measure_start + Seconds(o.duration_s);
  run.window_start_ns = SteadyNs(measure_start);
  run.window_stop_ns = SteadyNs(stop);
  std::vector<PublisherResult> pubs(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  for (int p = 0; p < o.clients; ++p) {
    threads.emplace_back(RunPublisher, std::cref(o), std::cref(run), p, stop,
                         std::cref(subscribers_of), std::ref(pubs[static_cast<size_t>(p)]));
  }
  std::this_thread::sleep_until(measure_start);
  const double cpu0 = ProcessCpuSeconds(o.server_pid);
  const double self0 = SelfCpuSeconds();
  std::this_thread::sleep_until(stop);
  const double cpu1 = ProcessCpuSeconds(o.server_pid);
  const double self1 = SelfCpuSeconds();
  for (auto& t : threads) t.join();

  PublisherResult pub;
  for (const auto& r : pubs) {
    pub.ok += r.ok;
    pub.envelopes_measured += r.envelopes_measured;
    pub.expected += r.expected;
    pub.errors.Merge(r.errors);
  }
  // Deliveries still in flight when the publishers stop get --grace seconds.
  const auto grace_end = Clock::now() + Seconds(o.grace_s);
  auto measured_received = [&] {
    uint64_t got = 0;
    for (const auto& obs : pool.observers) got += obs->measured_received.load();
    return got;
  };
  while (measured_received() < pub.expected && Clock::now() < grace_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run.stopping = true;
  pool.CancelAll();
  pool.Shutdown();

  StreamTally t = MergeTallies(pool.observers);
  std::vector<uint32_t> lat;
  for (const auto& obs : pool.observers) {
    lat.insert(lat.end(), obs->latencies_us.begin(), obs->latencies_us.end());
  }
  std::sort(lat.begin(), lat.end());
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> spread;
  for (const auto& obs : pool.observers) {
    for (const auto& [sent, fl] : obs->spread_us) {
      auto [it, inserted] = spread.try_emplace(sent, fl);
      if (!inserted) {
        it->second.first = std::min(it->second.first, fl.first);
        it->second.second = std::max(it->second.second, fl.second);
      }
    }
  }
  std::vector<uint32_t> first, last;
  for (const auto& [sent, fl] : spread) {
    first.push_back(fl.first);
    last.push_back(fl.second);
  }
  std::sort(first.begin(), first.end());
  std::sort(last.begin(), last.end());
  const uint64_t received = lat.size();
  const uint64_t missing = pub.expected > received ? pub.expected - received : 0;
  const double secs = o.duration_s;
  const char* kind = o.stream == StreamKind::kStatic ? "static" : "bidi";
  std::printf(
      "loadgen subscribe-latency: target %s, %d %s streams on %zu connections over %d topics; "
      "%d publisher(s) at %.0f publishes/s (0 = back to back), %d envelope(s) of %d bytes each; "
      "streams open in %.2f s; %.1f s measured after %.1f s warm-up\n",
      o.target.c_str(), n, kind, ch.stubs.size(), o.topics, o.clients, o.rate, o.envelopes,
      o.payload, open_s, secs, o.warmup_s);
  std::printf("  published %" PRIu64 " envelopes in the interval (%" PRIu64
              " publish errors); deliveries expected %" PRIu64 ", received %" PRIu64
              " (missing %" PRIu64 ", %.0f/s); out-of-order %" PRIu64 ", wrong topic %" PRIu64
              ", streams failed %" PRIu64 " (%s), protocol errors %" PRIu64 "%s%s\n",
              pub.envelopes_measured, pub.errors.total(), pub.expected, received, missing,
              static_cast<double>(received) / secs, t.out_of_order, t.wrong_topic, t.stream_errors,
              t.errors.Codes().c_str(), t.protocol_errors,
              t.first_protocol_error.empty() ? "" : ": ", t.first_protocol_error.c_str());
  std::printf(
      "  latency us: p50 %u p90 %u p99 %u p99.9 %u max %u; server cpu %.2f s, loadgen "
      "cpu %.2f s\n",
      Percentile(lat, 0.5), Percentile(lat, 0.9), Percentile(lat, 0.99), Percentile(lat, 0.999),
      lat.empty() ? 0u : lat.back(), cpu1 - cpu0, self1 - self0);
  std::printf("  per publish, first subscriber reached us: p50 %u p99 %u; last: p50 %u p99 %u\n",
              Percentile(first, 0.5), Percentile(first, 0.99), Percentile(last, 0.5),
              Percentile(last, 0.99));
  std::printf(
      "RESULT mode=subscribe-latency stream=%s subscribers=%d topics=%d channels=%zu rate=%.1f "
      "publishers=%d envelopes=%d payload=%d open_s=%.3f secs=%.3f published=%" PRIu64
      " pub_errors=%" PRIu64 " expected=%" PRIu64 " received=%" PRIu64 " missing=%" PRIu64
      " out_of_order=%" PRIu64 " wrong_topic=%" PRIu64 " stream_errors=%" PRIu64
      " error_codes=%s protocol_errors=%" PRIu64
      " deliveries_per_s=%.1f p50_us=%u p90_us=%u p99_us=%u p999_us=%u max_us=%u "
      "first_p50_us=%u first_p99_us=%u last_p50_us=%u last_p99_us=%u "
      "server_cpu_s=%.3f load_cpu_s=%.3f\n",
      kind, n, o.topics, ch.stubs.size(), o.rate, o.clients, o.envelopes, o.payload, open_s, secs,
      pub.envelopes_measured, pub.errors.total(), pub.expected, received, missing, t.out_of_order,
      t.wrong_topic, t.stream_errors, t.errors.Codes().c_str(), t.protocol_errors,
      static_cast<double>(received) / secs, Percentile(lat, 0.5), Percentile(lat, 0.9),
      Percentile(lat, 0.99), Percentile(lat, 0.999), lat.empty() ? 0u : lat.back(),
      Percentile(first, 0.5), Percentile(first, 0.99), Percentile(last, 0.5),
      Percentile(last, 0.99), cpu0 >= 0 ? cpu1 - cpu0 : -1.0, self1 - self0);
  if (!pub.errors.first.empty()) std::printf("FIRST_ERROR publish: %s\n", pub.errors.first.c_str());
  if (!t.errors.first.empty()) std::printf("FIRST_ERROR stream: %s\n", t.errors.first.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------
// deliver
// ---------------------------------------------------------------------------------------------

// Publishes --prefill envelopes to each of --topics fresh topics, --envelopes per request.
bool Prefill(const Options& o, uint64_t run) {
  auto stub = v1::PublishService::NewStub(MakeChannel(o.target, 1000000));
  uint64_t counter = 0;
  for (int t = 0; t < o.topics; ++t) {
    for (int done = 0; done < o.prefill;) {
      v1::PublishRequest req;
      const int k = std::min(o.envelopes, o.prefill - done);
      for (int e = 0; e < k; ++e) {
        req.add_envelopes()->mutable_group_message()->set_data(
            PrivateMessage(RunGroupId(run, static_cast<uint64_t>(t)), run, 0, counter++,
                           static_cast<size_t>(o.payload)));
      }
      v1::PublishResponse resp;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
      const grpc::Status s = stub->Publish(&ctx, req, &resp);
      if (!s.ok() || resp.envelope_metas_size() != k) {
        std::printf("loadgen: prefill Publish failed: %d %s\n", s.error_code(),
                    s.error_message().c_str());
        if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) std::exit(3);
        return false;
      }
      done += k;
    }
  }
  return true;
}

int RunDeliver(const Options& o) {
  RunState run;
  run.options = &o;
  run.run = RunNonce();
  const auto p0 = Clock::now();
  if (!Prefill(o, run.run)) return 1;
  const double prefill_s = std::chrono::duration<double>(Clock::now() - p0).count();
  const int n = o.subscribers;
  Channels ch(o.target, ChannelCount(o, n));
  std::vector<StreamWorker*> worker_of(kWorkers);
  Pool<DeliverObserver> pool;
  for (int w = 0; w < kWorkers; ++w) {
    pool.observers.push_back(std::make_unique<DeliverObserver>(&run, &worker_of[w], &ch));
    pool.workers.push_back(std::make_unique<StreamWorker>(pool.observers.back().get()));
    worker_of[w] = pool.workers.back().get();
  }
  const auto start = Clock::now();
  const auto measure_start = start + Seconds(o.warmup_s);
  const auto stop = measure_start + Seconds(o.duration_s);
  run.window_start_ns = SteadyNs(measure_start);
  run.window_stop_ns = SteadyNs(stop);
  const auto topic_of = [&](int i) { return TopicOf(RunGroupId(run.run, i % o.topics)); };
  const double open_s = OpenAndWait(o, run, pool, ch, 0, n, topic_of);
  if (open_s < 0) return OpenFailure(pool);
  std::this_thread::sleep_until(measure_start);
  const double cpu0 = ProcessCpuSeconds(o.server_pid);
  const double self0 = SelfCpuSeconds();
  std::this_thread::sleep_until(stop);
  const double cpu1 = ProcessCpuSeconds(o.server_pid);
  const double self1 = SelfCpuSeconds();
  run.stopping = true;
  pool.CancelAll();
  pool.Shutdown();

  StreamTally t = MergeTallies(pool.observers);
  uint64_t env = 0, frames = 0, bytes = 0, completed = 0, incomplete = 0;
  for (const auto& obs : pool.observers) {
    env += obs->measured_envelopes;
    frames += obs->measured_frames;
    bytes += obs->measured_bytes;
    completed += obs->completed;
    incomplete += obs->incomplete;
  }
  const double secs = o.duration_s;
  const double eps = static_cast<double>(env) / secs;
  const double per_frame = frames ? static_cast<double>(env) / static_cast<double>(frames) : 0;
  const double bytes_per_env = env ? static_cast<double>(bytes) / static_cast<double>(env) : 0;
  const double server_cpu = cpu0 >= 0 ? cpu1 - cpu0 : -1.0;
  std::printf(
      "loadgen deliver: target %s, %d streams on %zu connections over %d topics of %d "
      "envelopes (%d-byte payloads, prefilled in %.1f s); %.1f s measured after %.1f s\n",
      o.target.c_str(), n, ch.stubs.size(), o.topics, o.prefill, o.payload, prefill_s, secs,
      o.warmup_s);
  std::printf("  envelopes %" PRIu64 " (%.0f/s) in %" PRIu64
              " frames (%.1f per frame, %.0f wire bytes per envelope); catch-ups completed %" PRIu64
              " (incomplete %" PRIu64 "); out-of-order %" PRIu64 ", wrong topic %" PRIu64
              ", streams failed %" PRIu64 " (%s), protocol errors %" PRIu64
              "%s%s; server cpu %.2f s, loadgen cpu %.2f s\n",
              env, eps, frames, per_frame, bytes_per_env, completed, incomplete, t.out_of_order,
              t.wrong_topic, t.stream_errors, t.errors.Codes().c_str(), t.protocol_errors,
              t.first_protocol_error.empty() ? "" : ": ", t.first_protocol_error.c_str(),
              server_cpu, self1 - self0);
  std::printf(
      "RESULT mode=deliver stream=%s streams=%d topics=%d prefill=%d payload=%d "
      "channels=%zu secs=%.3f envelopes=%" PRIu64 " eps=%.1f frames=%" PRIu64
      " env_per_frame=%.2f bytes_per_env=%.1f completed=%" PRIu64 " incomplete=%" PRIu64
      " out_of_order=%" PRIu64 " wrong_topic=%" PRIu64 " stream_errors=%" PRIu64
      " error_codes=%s protocol_errors=%" PRIu64 " server_cpu_s=%.3f load_cpu_s=%.3f\n",
      o.stream == StreamKind::kStatic ? "static" : "bidi", n, o.topics, o.prefill, o.payload,
      ch.stubs.size(), secs, env, eps, frames, per_frame, bytes_per_env, completed, incomplete,
      t.out_of_order, t.wrong_topic, t.stream_errors, t.errors.Codes().c_str(), t.protocol_errors,
      server_cpu, self1 - self0);
  if (!t.errors.first.empty()) std::printf("FIRST_ERROR stream: %s\n", t.errors.first.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------
// idle-streams
// ---------------------------------------------------------------------------------------------

int RunIdle(const Options& o) {
  RunState run;
  run.options = &o;
  run.run = RunNonce();
  const int n = o.subscribers;
  Channels ch(o.target, ChannelCount(o, n));
  auto pool = MakePool<IdleObserver>(&run);
  // Every stream has a topic of its own; the warm-up streams take indices n, n + 1, ...
  const auto topic_of = [&](int i) { return TopicOf(RunGroupId(run.run, i)); };
  const int warm = std::max(static_cast<int>(ch.stubs.size()), std::min(n, 100));
  {
    // Warm-up stream w goes to channel w % channels: OpenAndWait maps index i to channel
    // i / per_channel, so spread the indices by per_channel.
    Options spread = o;
    spread.streams_per_channel = 1;
    if (OpenAndWait(spread, run, pool, ch, n, warm, topic_of) < 0) return OpenFailure(pool);
    pool.CancelAll();
    if (!pool.WaitIdle(60)) {
      std::printf("loadgen: warm-up streams did not end\n");
      return 1;
    }
  }
  const auto settle = [&] { std::this_thread::sleep_for(Seconds(o.settle_s)); };
  settle();
  const long before = ResidentKib(o.server_pid);
  const long self_before = ResidentKib(getpid());
  const double open_s = OpenAndWait(o, run, pool, ch, 0, n, topic_of);
  if (open_s < 0) return OpenFailure(pool);
  settle();
  const long open = ResidentKib(o.server_pid);
  const long self_open = ResidentKib(getpid());
  pool.CancelAll();
  const bool ended = pool.WaitIdle(60);
  settle();
  const long closed = ResidentKib(o.server_pid);
  pool.Shutdown();
  StreamTally t = MergeTallies(pool.observers);
  const double per_stream = static_cast<double>(open - before) / n;
  const double self_per_stream = static_cast<double>(self_open - self_before) / n;
  std::printf(
      "loadgen idle-streams: target %s, %d %s streams (one empty topic each) on %zu "
      "connections, opened in %.2f s; server VmRSS %ld KiB before, %ld KiB with them "
      "open, %ld KiB after they closed%s: %.2f KiB per stream (loadgen: %.2f KiB per "
      "stream); streams failed %" PRIu64 " (%s), protocol errors %" PRIu64 "%s%s\n",
      o.target.c_str(), n, o.stream == StreamKind::kStatic ? "static" : "bidi", ch.stubs.size(),
      open_s, before, open, closed, ended ? "" : " (not all ended)", per_stream, self_per_stream,
      t.stream_errors, t.errors.Codes().c_str(), t.protocol_errors,
      t.first_protocol_error.empty() ? "" : ": ", t.first_protocol_error.c_str());
  std::printf(
      "RESULT mode=idle-streams stream=%s streams=%d channels=%zu open_s=%.3f "
      "rss_before_kib=%ld rss_open_kib=%ld rss_closed_kib=%ld kib_per_stream=%.3f "
      "load_kib_per_stream=%.3f stream_errors=%" PRIu64
      " error_codes=%s "
      "protocol_errors=%" PRIu64 "\n",
      o.stream == StreamKind::kStatic ? "static" : "bidi", n, ch.stubs.size(), open_s, before, open,
      closed, per_stream, self_per_stream, t.stream_errors, t.errors.Codes().c_str(),
      t.protocol_errors);
  return 0;
}

}  // namespace

int RunStreamMode(const Options& o) {
  switch (o.mode) {
    case Mode::kSubscribeLatency:
      return RunLatency(o);
    case Mode::kDeliver:
      return RunDeliver(o);
    case Mode::kIdleStreams:
      return RunIdle(o);
    case Mode::kStreamVerify:
      return RunStreamVerify(o);
    default:
      return 2;
  }
}

}  // namespace xb::bench
