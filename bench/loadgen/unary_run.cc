// RunUnaryMode and what both unary transports share (unary_run.h). The only file that knows both
// transports.
#include "unary_run.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpc_unary_client.h"
#include "h2_unary_client.h"

namespace xb::bench {

namespace v1 = ::xmtp::backend::v1;

UnaryRequests::UnaryRequests(const UnaryRun& run, int client)
    : run_(run), client_(static_cast<uint64_t>(client)), topic_cursor_(client_) {}

uint64_t UnaryRequests::NextTopic() {
  const Options& o = *run_.options;
  const uint64_t topic = topic_cursor_ % static_cast<uint64_t>(o.topics);
  topic_cursor_ += static_cast<uint64_t>(o.clients);
  return topic;
}

void UnaryRequests::NextPublish(v1::PublishRequest* req) {
  const Options& o = *run_.options;
  req->Clear();
  for (int e = 0; e < o.envelopes; ++e) {
    const uint64_t topic = NextTopic();
    req->add_envelopes()->mutable_group_message()->set_data(PrivateMessage(
        GroupId(topic), run_.run, client_, counter_++, static_cast<size_t>(o.payload)));
  }
}

void UnaryRequests::NextQuery(v1::QueryRequest* req) {
  req->Clear();
  auto* q = req->add_queries();
  q->mutable_topic()->set_topic(GroupTopic(NextTopic()));
  q->mutable_cursor()->set_sequence_id(0);
  req->set_limit(static_cast<uint32_t>(run_.options->limit));
}

void UnaryRequests::NextNewest(v1::QueryNewestRequest* req) {
  req->Clear();
  req->add_topics()->set_topic(GroupTopic(NextTopic()));
}

void UnaryRequests::NextV3Query(std::string* bytes) {
  const std::string group = GroupId(NextTopic());
  const auto limit = static_cast<uint32_t>(run_.options->limit);
  bytes->clear();
  bytes->push_back('\x0a');  // group_id = 1
  bytes->push_back(static_cast<char>(group.size()));
  bytes->append(group);
  // paging_info = 2: direction = 1 (ASCENDING), limit = 2; limits below 128 take one byte.
  bytes->append("\x12\x04\x08\x01\x10", 5);
  bytes->push_back(static_cast<char>(limit & 0x7f));
}

void RecordCall(ClientStats& st, const Options& o, bool measured, Clock::duration latency,
                const grpc::Status& status, uint64_t got) {
  grpc::Status s = status;
  if (s.ok() && o.mode == Mode::kV3Send) {
    got = static_cast<uint64_t>(o.envelopes);  // Empty on success: the request's were all stored
  }
  if (s.ok() && o.mode == Mode::kPublish && got != static_cast<uint64_t>(o.envelopes)) {
    s = grpc::Status(grpc::StatusCode::INTERNAL,
                     "loadgen: wrong envelope_metas count " + std::to_string(got));
  }
  if (!s.ok()) {
    if (measured) {
      ++st.errors[s.error_code()];
    } else {
      ++st.warmup_errors;
    }
    if (st.first_error.empty()) {
      st.first_error = std::to_string(s.error_code()) + " " + s.error_message();
    }
    return;
  }
  if (!measured) return;
  st.latencies_us.push_back(static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(latency).count()));
  ++st.ok;
  st.envelopes += got;
  if (got == 0) ++st.empty;
}

int RunUnaryMode(const Options& o) {
  UnaryRun run;
  run.options = &o;
  run.run = RunNonce();
  run.measure_start = Clock::now() + Seconds(o.warmup_s);
  run.stop = run.measure_start + Seconds(o.duration_s);
  const UnaryDriver drive = o.transport == Transport::kGrpc ? DriveGrpcClients : DriveH2Clients;

  std::vector<ClientStats> stats(static_cast<size_t>(o.clients));
  std::vector<UnaryClients> per_thread(static_cast<size_t>(o.threads));
  for (int c = 0; c < o.clients; ++c) {
    per_thread[static_cast<size_t>(c % o.threads)].emplace_back(c, &stats[static_cast<size_t>(c)]);
  }
  std::vector<std::thread> threads;
  for (auto& clients : per_thread) {
    if (!clients.empty()) threads.emplace_back(drive, std::cref(run), std::move(clients));
  }
  std::this_thread::sleep_until(run.measure_start);
  const double cpu0 = ProcessCpuSeconds(o.server_pid);
  const double self0 = SelfCpuSeconds();
  const auto m0 = Clock::now();
  for (auto& t : threads) t.join();
  const auto m1 = Clock::now();
  const double cpu1 = ProcessCpuSeconds(o.server_pid);
  const double self1 = SelfCpuSeconds();
  // The measured interval ends when the last in-flight request returns, a little after `stop`.
  const double secs = std::chrono::duration<double>(m1 - m0).count();

  ClientStats all;
  std::vector<uint32_t> lat;
  std::map<int, uint64_t> errors;
  uint64_t error_total = 0;
  for (const auto& st : stats) {
    all.ok += st.ok;
    all.envelopes += st.envelopes;
    all.empty += st.empty;
    all.warmup_errors += st.warmup_errors;
    if (all.first_error.empty()) all.first_error = st.first_error;
    lat.insert(lat.end(), st.latencies_us.begin(), st.latencies_us.end());
    for (const auto& [code, n] : st.errors) {
      errors[code] += n;
      error_total += n;
    }
  }
  std::sort(lat.begin(), lat.end());
  const double rps = static_cast<double>(all.ok) / secs;
  const double server_cpu = (cpu0 >= 0 && cpu1 >= 0) ? cpu1 - cpu0 : -1;
  // The client's own CPU (every thread of this process, grpc++'s included) per call that ended
  // in the measured interval, OK or not: what the load costs the CPU it shares with the server.
  const double client_cpu = self1 - self0;
  const uint64_t calls = all.ok + error_total;
  const double client_us_per_call =
      calls > 0 ? client_cpu * 1e6 / static_cast<double>(calls) : -1.0;
  std::string error_codes;
  for (const auto& [code, n] : errors) {
    error_codes +=
        (error_codes.empty() ? "" : ",") + std::to_string(code) + ":" + std::to_string(n);
  }
  std::printf(
      "loadgen %s: target %s, transport %s, %d clients on %zu thread(s), %d envelope(s)/request, "
      "%d-byte payload, %d topics, limit %d, %.1f s measured after %.1f s warm-up\n",
      ModeName(o.mode), o.target.c_str(), TransportName(o.transport), o.clients, threads.size(),
      o.envelopes, o.payload, o.topics, o.limit, secs, o.warmup_s);
  std::printf("  ok requests %" PRIu64 " (%.0f req/s), envelopes %" PRIu64
              " (%.0f env/s), "
              "empty %" PRIu64 ", errors %" PRIu64 " (+%" PRIu64 " in warm-up)%s%s\n",
              all.ok, rps, all.envelopes, static_cast<double>(all.envelopes) / secs, all.empty,
              error_total, all.warmup_errors,
              all.first_error.empty() ? "" : ", first: ", all.first_error.c_str());
  std::printf(
      "  latency us: p50 %u p90 %u p99 %u max %u; server cpu %.2f s; client cpu %.2f s "
      "(%.1f us per call)\n",
      Percentile(lat, 0.50), Percentile(lat, 0.90), Percentile(lat, 0.99),
      lat.empty() ? 0u : lat.back(), server_cpu, client_cpu, client_us_per_call);
  std::printf("RESULT mode=%s transport=%s clients=%d envelopes=%d payload=%d ok=%" PRIu64
              " errors=%" PRIu64 " warmup_errors=%" PRIu64 " error_codes=%s empty=%" PRIu64
              " secs=%.3f rps=%.1f eps=%.1f p50_us=%u p90_us=%u p99_us=%u max_us=%u "
              "server_cpu_s=%.3f client_cpu_s=%.3f client_cpu_us_per_call=%.1f rate=%.1f\n",
              ModeName(o.mode), TransportName(o.transport), o.clients, o.envelopes, o.payload,
              all.ok, error_total, all.warmup_errors,
              error_codes.empty() ? "-" : error_codes.c_str(), all.empty, secs, rps,
              static_cast<double>(all.envelopes) / secs, Percentile(lat, 0.50),
              Percentile(lat, 0.90), Percentile(lat, 0.99), lat.empty() ? 0u : lat.back(),
              server_cpu, client_cpu, client_us_per_call, o.rate);
  if (!all.first_error.empty()) {
    std::printf("FIRST_ERROR %s\n", all.first_error.c_str());
  }
  return 0;
}

}  // namespace xb::bench
