// --mode subscribe-latency (see stream_modes.cc for all the stream modes).
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loadgen.h"
#include "stream_run.h"
#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

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

// ---------------------------------------------------------------------------------------------
// subscribe-latency
// ---------------------------------------------------------------------------------------------

// --publish-log: one line per Publish call as it ends, written through (line-buffered) so that a
// reader (bench/soak.sh) sees it while the run goes on. Publisher threads share it: each line is
// one fwrite, which stdio locks.
class PublishLog {
 public:
  explicit PublishLog(const std::string& path) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr) {
      std::fprintf(stderr, "loadgen: cannot write %s\n", path.c_str());
      std::exit(2);
    }
    std::setvbuf(file_, nullptr, _IOLBF, 1 << 16);
  }
  ~PublishLog() {
    if (file_ != nullptr) std::fclose(file_);
  }
  PublishLog(const PublishLog&) = delete;
  PublishLog& operator=(const PublishLog&) = delete;

  // "<sent ns> <latency us> <grpc code> <topic hex>:<id> ..." (no pairs for a failed call).
  void Write(uint64_t sent_ns, uint64_t latency_us, int code, const v1::PublishResponse& resp) {
    if (file_ == nullptr) return;
    static constexpr char kHex[] = "0123456789abcdef";
    std::string line =
        std::to_string(sent_ns) + " " + std::to_string(latency_us) + " " + std::to_string(code);
    for (const auto& m : resp.envelope_metas()) {
      if (code != 0) break;  // a failed call acknowledged nothing
      line += ' ';
      for (const unsigned char c : m.topic().topic()) {
        line += kHex[c >> 4];
        line += kHex[c & 15];
      }
      line += ':' + std::to_string(m.cursor().sequence_id());
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), file_);
  }

 private:
  FILE* file_ = nullptr;
};

struct PublisherResult {
  uint64_t ok = 0;
  uint64_t envelopes_measured = 0;
  uint64_t expected = 0;  // deliveries owed for envelopes sent in the measured interval
  ErrorTally errors;
};

void RunPublisher(const Options& o, const RunState& run, int p, Clock::time_point stop,
                  const std::vector<uint64_t>& subscribers_of, PublishLog& log,
                  PublisherResult& out) {
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
    log.Write(sent, (SteadyNs(Clock::now()) - sent) / 1000, s.error_code(), resp);
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

// --publishes-file: one line per measured publish, in send order.
void WritePublishes(const std::string& path,
                    const std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>>& spread) {
  std::vector<std::pair<uint64_t, std::pair<uint32_t, uint32_t>>> rows(spread.begin(),
                                                                       spread.end());
  std::sort(rows.begin(), rows.end());
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "loadgen: cannot write %s\n", path.c_str());
    return;
  }
  for (const auto& [sent, fl] : rows) {
    std::fprintf(f, "%.3f %" PRIu32 " %" PRIu32 " %" PRIu64 "\n", (sent - rows.front().first) / 1e6,
                 fl.first, fl.second, sent);
  }
  std::fclose(f);
}

}  // namespace

int RunLatency(const Options& o) {
  RunState run;
  run.options = &o;
  run.run = RunNonce();
  const int n = o.subscribers;
  const size_t channels = ChannelCount(o, n);
  auto pool = MakePool<LatencyObserver>(&run, channels);
  const auto topic_of = [&](int i) { return TopicOf(RunGroupId(run.run, i % o.topics)); };
  const double open_s = OpenAndWait(o, run, pool, 0, n, topic_of);
  if (open_s < 0) return OpenFailure(pool);
  // Said at once, so a script watching the run knows when publishing starts.
  std::printf("loadgen subscribe-latency: %d streams acknowledged in %.2f s; publishing\n", n,
              open_s);
  std::fflush(stdout);
  PublishLog log(o.publish_log);
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
                         std::cref(subscribers_of), std::ref(log),
                         std::ref(pubs[static_cast<size_t>(p)]));
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
  if (!o.publishes_file.empty()) {
    WritePublishes(o.publishes_file, spread);
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
      "loadgen subscribe-latency: target %s, %d %s streams on %zu connections (%s transport) "
      "over %d topics; %d publisher(s) at %.0f publishes/s (0 = back to back), %d envelope(s) of "
      "%d bytes each; streams open in %.2f s; %.1f s measured after %.1f s warm-up\n",
      o.target.c_str(), n, kind, channels, TransportName(o.transport), o.topics, o.clients, o.rate,
      o.envelopes, o.payload, open_s, secs, o.warmup_s);
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
      "RESULT mode=subscribe-latency transport=%s stream=%s subscribers=%d topics=%d channels=%zu "
      "rate=%.1f "
      "publishers=%d envelopes=%d payload=%d open_s=%.3f secs=%.3f published=%" PRIu64
      " pub_errors=%" PRIu64 " expected=%" PRIu64 " received=%" PRIu64 " missing=%" PRIu64
      " out_of_order=%" PRIu64 " wrong_topic=%" PRIu64 " stream_errors=%" PRIu64
      " error_codes=%s protocol_errors=%" PRIu64
      " deliveries_per_s=%.1f p50_us=%u p90_us=%u p99_us=%u p999_us=%u max_us=%u "
      "first_p50_us=%u first_p99_us=%u last_p50_us=%u last_p99_us=%u "
      "server_cpu_s=%.3f load_cpu_s=%.3f\n",
      TransportName(o.transport), kind, n, o.topics, channels, o.rate, o.clients, o.envelopes,
      o.payload, open_s, secs, pub.envelopes_measured, pub.errors.total(), pub.expected, received,
      missing, t.out_of_order, t.wrong_topic, t.stream_errors, t.errors.Codes().c_str(),
      t.protocol_errors, static_cast<double>(received) / secs, Percentile(lat, 0.5),
      Percentile(lat, 0.9), Percentile(lat, 0.99), Percentile(lat, 0.999),
      lat.empty() ? 0u : lat.back(), Percentile(first, 0.5), Percentile(first, 0.99),
      Percentile(last, 0.5), Percentile(last, 0.99), cpu0 >= 0 ? cpu1 - cpu0 : -1.0, self1 - self0);
  if (!pub.errors.first.empty()) std::printf("FIRST_ERROR publish: %s\n", pub.errors.first.c_str());
  if (!t.errors.first.empty()) std::printf("FIRST_ERROR stream: %s\n", t.errors.first.c_str());
  return 0;
}

}  // namespace xb::bench
