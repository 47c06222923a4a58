// bench/loadgen: a gRPC load client for xmtp-backend (grpc++ sync stubs, one thread and one
// HTTP/2 connection per client). Unlike h2load it sends distinct valid envelopes, so every
// Publish stores new rows. Built by bench/publish.sh into a private directory; the main build
// never includes it (CI must not depend on grpc++).
//
//   loadgen --target HOST:PORT --mode publish|query|newest|verify [options]
//     --clients N      concurrent clients (threads, each with its own channel)     [1]
//     --envelopes E    envelopes per Publish request                               [1]
//     --payload B      size of each MLS PrivateMessage (GroupMessage.data), bytes  [1024]
//     --topics T       distinct group topics; client c takes c, c+N, c+2N, ... (N =  [64]
//                      clients), so with T a multiple of N no two clients share a
//                      group (concurrent writers to one group are the rare case)
//     --limit L        Query limit (query mode; cursor 0, one topic per request)   [10]
//     --duration S     measured seconds                                            [5]
//     --warmup S       unmeasured seconds before the measured ones                 [1]
//     --server-pid P   read the server's utime+stime from /proc/P/stat around the measured interval
//
// Prints a human summary and one line "RESULT key=value ..." for scripts. Exit status 0 when
// the run completed (non-OK statuses are counted, not fatal), 1 when --mode verify fails, 2 on
// bad arguments. Nothing here asserts a timing.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;
using Clock = std::chrono::steady_clock;

enum class Mode { kPublish, kQuery, kNewest, kVerify };

struct Options {
  std::string target;
  Mode mode = Mode::kPublish;
  int clients = 1;
  int envelopes = 1;
  int payload = 1024;
  int topics = 64;
  int limit = 10;
  double duration_s = 5;
  double warmup_s = 1;
  long server_pid = 0;
};

constexpr size_t kGroupIdSize = 16;
constexpr auto kCallDeadline = std::chrono::seconds(10);

// The 16-byte group id of topic index `i`: "xbbench\0" + big-endian i.
std::string GroupId(uint64_t i) {
  std::string id = std::string("xbbench", 7) + '\0';
  for (int s = 56; s >= 0; s -= 8) id.push_back(static_cast<char>((i >> s) & 0xff));
  return id;
}

// API topic of a group: kind byte 0x00 + group id.
std::string GroupTopic(uint64_t i) { return std::string(1, '\0') + GroupId(i); }

void PutUint(std::string& out, uint64_t v, int bytes) {
  for (int s = (bytes - 1) * 8; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}

// RFC 9420 §2.1.2 variable-length vector: 1, 2 or 4 byte length prefix.
void PutVector(std::string& out, const std::string& v) {
  const uint64_t n = v.size();
  if (n < 64) {
    PutUint(out, n, 1);
  } else if (n < 16384) {
    PutUint(out, 0x4000 | n, 2);
  } else {
    PutUint(out, 0x80000000u | n, 4);
  }
  out += v;
}

size_t VectorPrefix(size_t n) { return n < 64 ? 1 : (n < 16384 ? 2 : 4); }

// A serialized MLS PrivateMessage (RFC 9420 §6.3) of about `payload` bytes for group `topic`;
// distinct for every (run, client, counter): they are the first 24 bytes of the ciphertext.
std::string PrivateMessage(uint64_t topic, uint64_t run, uint64_t client, uint64_t counter,
                           size_t payload) {
  const std::string sender_data(16, '\x5a');
  // version, wire_format, group_id<V>, epoch, content_type, authenticated_data<V> (empty),
  // encrypted_sender_data<V>, then ciphertext<V>.
  const size_t fixed = 2 + 2 + 1 + kGroupIdSize + 8 + 1 + 1 + 1 + sender_data.size();
  size_t ct_len = 24;
  if (payload > fixed + 1 + 24) {
    ct_len = payload - fixed - 1;
    if (VectorPrefix(ct_len) > 1) ct_len = payload - fixed - 2;
    if (VectorPrefix(ct_len) > 2) ct_len = payload - fixed - 4;
  }
  std::string ct;
  ct.reserve(ct_len);
  PutUint(ct, run, 8);
  PutUint(ct, client, 8);
  PutUint(ct, counter, 8);
  uint64_t x = run ^ (client << 32) ^ counter ^ 0x9e3779b97f4a7c15ull;
  while (ct.size() < ct_len) {  // xorshift filler, so rows do not compress to nothing
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ct.push_back(static_cast<char>(x & 0xff));
  }
  std::string m;
  m.reserve(payload + 8);
  PutUint(m, 1, 2);  // mls10
  PutUint(m, 2, 2);  // mls_private_message
  PutVector(m, GroupId(topic));
  PutUint(m, 1, 8);  // epoch
  PutUint(m, 1, 1);  // content_type: application
  PutVector(m, "");  // authenticated_data
  PutVector(m, sender_data);
  PutVector(m, ct);
  return m;
}

std::unique_ptr<v1::PublishService::Stub> PublishStub(const std::shared_ptr<grpc::Channel>& ch) {
  return v1::PublishService::NewStub(ch);
}

// One channel per client: a distinct channel argument keeps gRPC from sharing one subchannel
// (one TCP connection) among them.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, int client) {
  grpc::ChannelArguments args;
  args.SetInt("xb.bench.client", client);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

struct ClientStats {
  std::vector<uint32_t> latencies_us;  // measured interval only
  uint64_t ok = 0;
  uint64_t envelopes = 0;          // publish: envelopes stored; query: envelopes returned
  uint64_t empty = 0;              // query/newest: OK responses that returned nothing
  std::map<int, uint64_t> errors;  // grpc status code -> count (measured interval)
  uint64_t warmup_errors = 0;
  std::string first_error;
};

struct Shared {
  const Options* options;
  uint64_t run;
  Clock::time_point measure_start;
  Clock::time_point stop;
};

void RecordError(ClientStats& st, const grpc::Status& s, bool measured) {
  if (measured) {
    ++st.errors[s.error_code()];
  } else {
    ++st.warmup_errors;
  }
  if (st.first_error.empty()) {
    st.first_error = std::to_string(s.error_code()) + " " + s.error_message();
  }
}

// The client's next topic: a stride of `clients` keeps concurrent clients on disjoint topics. A
// plain round-robin from offset `client` made neighbouring clients hit the same topic one
// request apart, which measured topic-lock queueing instead of publish throughput.
uint64_t NextTopic(uint64_t& cursor, const Options& o) {
  const uint64_t topic = cursor % static_cast<uint64_t>(o.topics);
  cursor += static_cast<uint64_t>(o.clients);
  return topic;
}

void RunClient(const Shared& sh, int client, ClientStats& st) {
  const Options& o = *sh.options;
  auto channel = MakeChannel(o.target, client);
  auto publish = PublishStub(channel);
  auto query = v1::QueryService::NewStub(channel);
  uint64_t counter = 0;
  uint64_t topic_cursor = static_cast<uint64_t>(client);
  st.latencies_us.reserve(1 << 16);
  v1::PublishRequest preq;
  v1::PublishResponse presp;
  v1::QueryRequest qreq;
  v1::QueryResponse qresp;
  v1::QueryNewestRequest nreq;
  v1::QueryNewestResponse nresp;
  while (true) {
    const auto t0 = Clock::now();
    if (t0 >= sh.stop) break;
    const bool measured = t0 >= sh.measure_start;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    grpc::Status s;
    uint64_t got = 0;
    // Latency is timed around the call alone; building the request is not part of it.
    switch (o.mode) {
      case Mode::kPublish: {
        preq.Clear();
        for (int e = 0; e < o.envelopes; ++e) {
          const uint64_t topic = NextTopic(topic_cursor, o);
          preq.add_envelopes()->mutable_group_message()->set_data(
              PrivateMessage(topic, sh.run, static_cast<uint64_t>(client), counter++,
                             static_cast<size_t>(o.payload)));
        }
        presp.Clear();
        const auto c0 = Clock::now();
        s = publish->Publish(&ctx, preq, &presp);
        const auto c1 = Clock::now();
        if (s.ok() && presp.envelope_metas_size() != o.envelopes) {
          s = grpc::Status(
              grpc::StatusCode::INTERNAL,
              "loadgen: wrong envelope_metas count " + std::to_string(presp.envelope_metas_size()));
        }
        got = static_cast<uint64_t>(presp.envelope_metas_size());
        if (measured && s.ok()) {
          st.latencies_us.push_back(static_cast<uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(c1 - c0).count()));
        }
        break;
      }
      case Mode::kQuery: {
        qreq.Clear();
        auto* q = qreq.add_queries();
        q->mutable_topic()->set_topic(GroupTopic(NextTopic(topic_cursor, o)));
        q->mutable_cursor()->set_sequence_id(0);
        qreq.set_limit(static_cast<uint32_t>(o.limit));
        qresp.Clear();
        const auto c0 = Clock::now();
        s = query->Query(&ctx, qreq, &qresp);
        const auto c1 = Clock::now();
        got = static_cast<uint64_t>(qresp.envelopes_size());
        if (measured && s.ok()) {
          st.latencies_us.push_back(static_cast<uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(c1 - c0).count()));
        }
        break;
      }
      case Mode::kNewest: {
        nreq.Clear();
        nreq.add_topics()->set_topic(GroupTopic(NextTopic(topic_cursor, o)));
        nresp.Clear();
        const auto c0 = Clock::now();
        s = query->QueryNewest(&ctx, nreq, &nresp);
        const auto c1 = Clock::now();
        for (const auto& r : nresp.results()) {
          if (r.has_meta() && r.meta().cursor().sequence_id() > 0) ++got;
        }
        if (measured && s.ok()) {
          st.latencies_us.push_back(static_cast<uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(c1 - c0).count()));
        }
        break;
      }
      case Mode::kVerify:
        return;
    }
    if (!s.ok()) {
      RecordError(st, s, measured);
      continue;
    }
    if (measured) {
      ++st.ok;
      st.envelopes += got;
      if (got == 0) ++st.empty;
    }
  }
}

// CPU seconds (utime + stime) of `pid` so far, or -1.
double ProcessCpuSeconds(long pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 (1-based) are utime, stime
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint64_t RunNonce() {
  std::random_device rd;
  const uint64_t t =
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t;
}

// Publish one request of `envelopes` to a fresh topic, then read it back with Query and
// QueryNewest. Prints what it checked; returns whether everything matched.
bool Verify(const Options& o) {
  const uint64_t run = RunNonce();
  const uint64_t topic = 1000000 + (run % 1000000);  // outside the load topics
  auto channel = MakeChannel(o.target, 0);
  auto publish = PublishStub(channel);
  auto query = v1::QueryService::NewStub(channel);
  v1::PublishRequest preq;
  for (int e = 0; e < o.envelopes; ++e) {
    preq.add_envelopes()->mutable_group_message()->set_data(
        PrivateMessage(topic, run, 0, static_cast<uint64_t>(e), static_cast<size_t>(o.payload)));
  }
  v1::PublishResponse presp;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const grpc::Status s = publish->Publish(&ctx, preq, &presp);
    if (!s.ok()) {
      std::printf("verify: Publish failed: grpc-status %d %s\n", s.error_code(),
                  s.error_message().c_str());
      return false;
    }
  }
  if (presp.envelope_metas_size() != o.envelopes) {
    std::printf("verify: Publish returned %d envelope_metas, want %d\n",
                presp.envelope_metas_size(), o.envelopes);
    return false;
  }
  uint64_t last = 0;
  for (const auto& m : presp.envelope_metas()) {
    if (m.topic().topic() != GroupTopic(topic) || m.cursor().sequence_id() <= last) {
      std::printf("verify: envelope_meta has the wrong topic or a non-increasing sequence_id\n");
      return false;
    }
    last = m.cursor().sequence_id();
  }
  v1::QueryRequest qreq;
  auto* q = qreq.add_queries();
  q->mutable_topic()->set_topic(GroupTopic(topic));
  q->mutable_cursor()->set_sequence_id(0);
  qreq.set_limit(static_cast<uint32_t>(o.envelopes + 10));
  v1::QueryResponse qresp;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const grpc::Status s = query->Query(&ctx, qreq, &qresp);
    if (!s.ok()) {
      std::printf("verify: Query failed: grpc-status %d %s\n", s.error_code(),
                  s.error_message().c_str());
      return false;
    }
  }
  if (qresp.envelopes_size() != o.envelopes) {
    std::printf("verify: Query returned %d envelopes, want %d\n", qresp.envelopes_size(),
                o.envelopes);
    return false;
  }
  for (int e = 0; e < o.envelopes; ++e) {
    const auto& got = qresp.envelopes(e);
    if (got.envelope().group_message().data() != preq.envelopes(e).group_message().data() ||
        got.meta().cursor().sequence_id() != presp.envelope_metas(e).cursor().sequence_id()) {
      std::printf("verify: Query envelope %d differs from what was published\n", e);
      return false;
    }
  }
  v1::QueryNewestRequest nreq;
  nreq.add_topics()->set_topic(GroupTopic(topic));
  v1::QueryNewestResponse nresp;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const grpc::Status s = query->QueryNewest(&ctx, nreq, &nresp);
    if (!s.ok()) {
      std::printf("verify: QueryNewest failed: grpc-status %d %s\n", s.error_code(),
                  s.error_message().c_str());
      return false;
    }
  }
  if (nresp.results_size() != 1 || nresp.results(0).meta().cursor().sequence_id() != last) {
    std::printf("verify: QueryNewest did not return the last published sequence_id %" PRIu64 "\n",
                last);
    return false;
  }
  std::printf("verify: ok: Publish of %d envelope(s) of %d bytes -> %d metas (ids up to %" PRIu64
              "); Query returned the same %d envelopes; QueryNewest returned id %" PRIu64 "\n",
              o.envelopes, o.payload, presp.envelope_metas_size(), last, qresp.envelopes_size(),
              last);
  return true;
}

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kPublish:
      return "publish";
    case Mode::kQuery:
      return "query";
    case Mode::kNewest:
      return "newest";
    case Mode::kVerify:
      return "verify";
  }
  return "?";
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "loadgen: %s\nusage: loadgen --target HOST:PORT --mode publish|query|newest|verify "
               "[--clients N] [--envelopes E] [--payload B] [--topics T] [--limit L] "
               "[--duration S] [--warmup S] [--server-pid P]\n",
               why);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + a).c_str());
    const std::string v = argv[++i];
    char* end = nullptr;
    const double num = std::strtod(v.c_str(), &end);
    const bool numeric = end != v.c_str() && *end == '\0';
    auto positive_int = [&](int& out) {
      if (!numeric || num < 1 || num != static_cast<int>(num)) {
        Usage((a + " wants a positive integer").c_str());
      }
      out = static_cast<int>(num);
    };
    if (a == "--target") {
      o.target = v;
    } else if (a == "--mode") {
      if (v == "publish") {
        o.mode = Mode::kPublish;
      } else if (v == "query") {
        o.mode = Mode::kQuery;
      } else if (v == "newest") {
        o.mode = Mode::kNewest;
      } else if (v == "verify") {
        o.mode = Mode::kVerify;
      } else {
        Usage("unknown --mode");
      }
    } else if (a == "--clients") {
      positive_int(o.clients);
    } else if (a == "--envelopes") {
      positive_int(o.envelopes);
    } else if (a == "--payload") {
      positive_int(o.payload);
    } else if (a == "--topics") {
      positive_int(o.topics);
    } else if (a == "--limit") {
      positive_int(o.limit);
    } else if (a == "--duration" || a == "--warmup") {
      if (!numeric || num < 0 || (a == "--duration" && num <= 0))
        Usage((a + " wants seconds").c_str());
      (a == "--duration" ? o.duration_s : o.warmup_s) = num;
    } else if (a == "--server-pid") {
      if (!numeric || num < 1) Usage("--server-pid wants a pid");
      o.server_pid = static_cast<long>(num);
    } else {
      Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.target.empty()) Usage("--target is required");
  return o;
}

uint32_t Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size()));
  if (i >= sorted.size()) i = sorted.size() - 1;
  return sorted[i];
}

int Main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  if (o.mode == Mode::kVerify) return Verify(o) ? 0 : 1;

  Shared sh;
  sh.options = &o;
  sh.run = RunNonce();
  const auto start = Clock::now();
  sh.measure_start = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.warmup_s));
  sh.stop = sh.measure_start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(o.duration_s));
  std::vector<ClientStats> stats(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  threads.reserve(stats.size());
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back(RunClient, std::cref(sh), c, std::ref(stats[static_cast<size_t>(c)]));
  }
  std::this_thread::sleep_until(sh.measure_start);
  const double cpu0 = ProcessCpuSeconds(o.server_pid);
  const auto m0 = Clock::now();
  for (auto& t : threads) t.join();
  const auto m1 = Clock::now();
  const double cpu1 = ProcessCpuSeconds(o.server_pid);
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
  std::string error_codes;
  for (const auto& [code, n] : errors) {
    error_codes +=
        (error_codes.empty() ? "" : ",") + std::to_string(code) + ":" + std::to_string(n);
  }
  std::printf(
      "loadgen %s: target %s, %d clients, %d envelope(s)/request, %d-byte payload, %d "
      "topics, limit %d, %.1f s measured after %.1f s warm-up\n",
      ModeName(o.mode), o.target.c_str(), o.clients, o.envelopes, o.payload, o.topics, o.limit,
      secs, o.warmup_s);
  std::printf("  ok requests %" PRIu64 " (%.0f req/s), envelopes %" PRIu64
              " (%.0f env/s), "
              "empty %" PRIu64 ", errors %" PRIu64 " (+%" PRIu64 " in warm-up)%s%s\n",
              all.ok, rps, all.envelopes, static_cast<double>(all.envelopes) / secs, all.empty,
              error_total, all.warmup_errors,
              all.first_error.empty() ? "" : ", first: ", all.first_error.c_str());
  std::printf("  latency us: p50 %u p90 %u p99 %u max %u; server cpu %.2f s\n",
              Percentile(lat, 0.50), Percentile(lat, 0.90), Percentile(lat, 0.99),
              lat.empty() ? 0u : lat.back(), server_cpu);
  std::printf("RESULT mode=%s clients=%d envelopes=%d payload=%d ok=%" PRIu64 " errors=%" PRIu64
              " warmup_errors=%" PRIu64 " error_codes=%s empty=%" PRIu64
              " secs=%.3f rps=%.1f eps=%.1f p50_us=%u p90_us=%u p99_us=%u max_us=%u "
              "server_cpu_s=%.3f\n",
              ModeName(o.mode), o.clients, o.envelopes, o.payload, all.ok, error_total,
              all.warmup_errors, error_codes.empty() ? "-" : error_codes.c_str(), all.empty, secs,
              rps, static_cast<double>(all.envelopes) / secs, Percentile(lat, 0.50),
              Percentile(lat, 0.90), Percentile(lat, 0.99), lat.empty() ? 0u : lat.back(),
              server_cpu);
  if (!all.first_error.empty()) {
    std::printf("FIRST_ERROR %s\n", all.first_error.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace xb::bench

int main(int argc, char** argv) { return xb::bench::Main(argc, argv); }
