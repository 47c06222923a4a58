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
// subscribe-latency lives in stream_latency.cc, the parts the modes share in stream_run.h; the
// streams go through the --transport worker (subscriber_worker.h), which the modes never name.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loadgen.h"
#include "stream_run.h"
#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

class DeliverObserver : public BaseObserver {
 public:
  DeliverObserver(RunState* run, SubscriberWorker** worker) : BaseObserver(run), worker_(worker) {}

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
      (*worker_)->Open(s.spec());
    }
  }

  uint64_t measured_envelopes = 0;
  uint64_t measured_frames = 0;
  uint64_t measured_bytes = 0;
  uint64_t completed = 0;
  uint64_t incomplete = 0;

 private:
  SubscriberWorker** const worker_;  // the worker this observer serves (set after construction)
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
  std::vector<SubscriberWorker*> worker_of(kWorkers);
  Pool<DeliverObserver> pool;
  pool.channels = ChannelCount(o, n);
  for (int w = 0; w < kWorkers; ++w) {
    pool.observers.push_back(std::make_unique<DeliverObserver>(&run, &worker_of[w]));
    pool.workers.push_back(MakeSubscriberWorker(o, pool.observers.back().get()));
    worker_of[w] = pool.workers.back().get();
  }
  const auto start = Clock::now();
  const auto measure_start = start + Seconds(o.warmup_s);
  const auto stop = measure_start + Seconds(o.duration_s);
  run.window_start_ns = SteadyNs(measure_start);
  run.window_stop_ns = SteadyNs(stop);
  const auto topic_of = [&](int i) { return TopicOf(RunGroupId(run.run, i % o.topics)); };
  const double open_s = OpenAndWait(o, run, pool, 0, n, topic_of);
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
      "loadgen deliver: target %s, %d streams on %zu connections (%s transport) over %d topics "
      "of %d envelopes (%d-byte payloads, prefilled in %.1f s); %.1f s measured after %.1f s\n",
      o.target.c_str(), n, pool.channels, TransportName(o.transport), o.topics, o.prefill,
      o.payload, prefill_s, secs, o.warmup_s);
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
      "RESULT mode=deliver transport=%s stream=%s streams=%d topics=%d prefill=%d payload=%d "
      "channels=%zu secs=%.3f envelopes=%" PRIu64 " eps=%.1f frames=%" PRIu64
      " env_per_frame=%.2f bytes_per_env=%.1f completed=%" PRIu64 " incomplete=%" PRIu64
      " out_of_order=%" PRIu64 " wrong_topic=%" PRIu64 " stream_errors=%" PRIu64
      " error_codes=%s protocol_errors=%" PRIu64 " server_cpu_s=%.3f load_cpu_s=%.3f\n",
      TransportName(o.transport), o.stream == StreamKind::kStatic ? "static" : "bidi", n, o.topics,
      o.prefill, o.payload, pool.channels, secs, env, eps, frames, per_frame, bytes_per_env,
      completed, incomplete, t.out_of_order, t.wrong_topic, t.stream_errors,
      t.errors.Codes().c_str(), t.protocol_errors, server_cpu, self1 - self0);
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
  const size_t channels = ChannelCount(o, n);
  auto pool = MakePool<IdleObserver>(&run, channels);
  // Every stream has a topic of its own; the warm-up streams take indices n, n + 1, ...
  const auto topic_of = [&](int i) { return TopicOf(RunGroupId(run.run, i)); };
  const int warm = std::max(static_cast<int>(channels), std::min(n, 100));
  {
    // Warm-up stream w goes to channel w % channels: OpenAndWait maps index i to channel
    // i / per_channel, so spread the indices by per_channel.
    Options spread = o;
    spread.streams_per_channel = 1;
    if (OpenAndWait(spread, run, pool, n, warm, topic_of) < 0) return OpenFailure(pool);
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
  const double open_s = OpenAndWait(o, run, pool, 0, n, topic_of);
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
      "connections (%s transport), opened in %.2f s; server VmRSS %ld KiB before, %ld KiB with "
      "them "
      "open, %ld KiB after they closed%s: %.2f KiB per stream (loadgen: %.2f KiB per "
      "stream); streams failed %" PRIu64 " (%s), protocol errors %" PRIu64 "%s%s\n",
      o.target.c_str(), n, o.stream == StreamKind::kStatic ? "static" : "bidi", channels,
      TransportName(o.transport), open_s, before, open, closed, ended ? "" : " (not all ended)",
      per_stream, self_per_stream, t.stream_errors, t.errors.Codes().c_str(), t.protocol_errors,
      t.first_protocol_error.empty() ? "" : ": ", t.first_protocol_error.c_str());
  std::printf(
      "RESULT mode=idle-streams transport=%s stream=%s streams=%d channels=%zu open_s=%.3f "
      "rss_before_kib=%ld rss_open_kib=%ld rss_closed_kib=%ld kib_per_stream=%.3f "
      "load_kib_per_stream=%.3f stream_errors=%" PRIu64
      " error_codes=%s "
      "protocol_errors=%" PRIu64 "\n",
      TransportName(o.transport), o.stream == StreamKind::kStatic ? "static" : "bidi", n, channels,
      open_s, before, open, closed, per_stream, self_per_stream, t.stream_errors,
      t.errors.Codes().c_str(), t.protocol_errors);
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
