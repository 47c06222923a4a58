// bench/loadgen: a gRPC load client for xmtp-backend. Unlike h2load it sends distinct valid
// envelopes, so every Publish stores new rows. Two client transports, picked by --transport for
// the unary and the stream modes alike: libnghttp2 sessions on epoll threads (the default) or
// grpc++. The unary modes (unary_run.h) give each client its own HTTP/2 connection and one call
// in flight, driven from --threads threads: over h2 (h2_unary_client.h) a call costs a fraction
// of the client CPU grpc++'s async stubs take (grpc_unary_client.h, about 150 us a call), which
// matters on a machine where the client shares the CPUs with the server and PostgreSQL. verify
// always uses grpc++ sync stubs. The stream modes (stream_modes.cc) drive thousands of subscriber
// streams from one worker thread (h2_stream_client.h or stream_client.h); their publishers use
// grpc++ sync stubs. Built by bench/publish.sh, bench/streams.sh and bench/soak.sh into a private
// directory; the main build never includes it (only CI's soak step needs grpc++).
//
//   loadgen --target HOST:PORT --mode MODE [options]
//   unary modes: publish | query | newest | verify | v3-send | v3-query
//     v3-send and v3-query are publish's and query's requests through the V3 API (issue 33):
//     MlsApi SendGroupMessages (the PublishRequest bytes: the same wire format) and
//     QueryGroupMessages ascending from id 0 with --limit (at most 100); h2 transport only
//     --clients N      concurrent clients, each with its own HTTP/2 connection and  [1]
//                      one call in flight
//     --threads K      threads driving the clients (epoll loops for h2,            [1]
//                      completion queues for grpc); client c goes to thread c % K
//     --transport X    h2 (libnghttp2, h2c) or grpc (grpc++ async stubs)           [h2]
//     --envelopes E    envelopes per Publish request                               [1]
//     --payload B      size of each MLS PrivateMessage (GroupMessage.data), bytes  [1024]
//     --topics T       distinct group topics; client c takes c, c+N, c+2N, ... (N =  [64]
//                      clients), so with T a multiple of N no two clients share a
//                      group (concurrent writers to one group are the rare case)
//     --limit L        Query limit (query mode; cursor 0, one topic per request)   [10]
//     --duration S     measured seconds                                            [5]
//     --warmup S       unmeasured seconds before the measured ones                 [1]
//     --server-pid P   read the server's utime+stime from /proc/P/stat around the measured interval
//     --rate R         calls per second over all clients, each client on its own fixed  [0 =
//                      schedule (clients/R s apart), still one call in flight; h2 only  closed
//                      (bench/prune.sh's steady publishing)                             loop]
//     Besides the server's CPU, the client's own (getrusage, all its threads) over the measured
//     interval is reported, and divided by the calls that ended in it (client_cpu_us_per_call).
//   stream modes: subscribe-latency | deliver | idle-streams | stream-verify (stream_modes.cc)
//     --subscribers S  subscriber streams; stream s registers topic s % T (fresh topics per run)
//     --topics T       topics the streams and the publishers use
//     --stream K       static (SubscribeStatic) or bidi (Subscribe + one Update)   [static]
//     --transport X    the subscriber streams' client: h2 (libnghttp2, h2c) or     [h2]
//                      grpc (grpc++ generic async API); stream-verify checks it too
//     --streams-per-channel M  streams sharing one HTTP/2 connection            [100]
//     --rate R         subscribe-latency: publishes per second over all --clients  [0 = closed
//     loop]
//     --grace S        subscribe-latency: wait for deliveries after publishing     [2]
//     --publishes-file F  subscribe-latency: also write one line per measured publish to F,
//                      in send order: "<ms since the first> <first us> <last us> <sent ns>"
//                      (the earliest and the latest delivery to any subscriber; the send time
//                      on CLOCK_MONOTONIC, as `perf record -k CLOCK_MONOTONIC` stamps events),
//                      to find which publishes were slow and whether the time went before or
//                      in the fan-out
//     --publish-log F  subscribe-latency: also append one line per Publish call to F as it
//                      ends, written through at once (bench/soak.sh reads it while the run
//                      goes on): "<sent ns> <latency us> <grpc code> <topic hex>:<id> ..." (the
//                      send time on CLOCK_MONOTONIC; a topic:id pair per acknowledged envelope,
//                      none for a failed call)
//     --prefill N      deliver: envelopes published to each topic first           [10000]
//     --settle S       idle-streams: pause before each RSS reading                 [2]
//     --open-timeout S every stream must have started within this                 [120]
//
// Prints a human summary and one line "RESULT key=value ..." for scripts. Exit status 0 when
// the run completed (non-OK statuses are counted, not fatal), 1 when --mode verify fails or a
// stream mode could not run, 2 on bad arguments, 3 when the server does not serve the stream RPC
// (UNIMPLEMENTED). Nothing here asserts a timing.
#include "loadgen.h"

#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, int client) {
  grpc::ChannelArguments args;
  args.SetInt("xb.bench.client", client);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

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

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

long ResidentKib(long pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

uint64_t RunNonce() {
  std::random_device rd;
  const uint64_t t =
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t;
}

uint32_t Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size()));
  if (i >= sorted.size()) i = sorted.size() - 1;
  return sorted[i];
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
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
    case Mode::kSubscribeLatency:
      return "subscribe-latency";
    case Mode::kDeliver:
      return "deliver";
    case Mode::kIdleStreams:
      return "idle-streams";
    case Mode::kStreamVerify:
      return "stream-verify";
    case Mode::kV3Send:
      return "v3-send";
    case Mode::kV3Query:
      return "v3-query";
  }
  return "?";
}

const char* TransportName(Transport t) { return t == Transport::kGrpc ? "grpc" : "h2"; }

namespace {

namespace v1 = ::xmtp::backend::v1;

std::unique_ptr<v1::PublishService::Stub> PublishStub(const std::shared_ptr<grpc::Channel>& ch) {
  return v1::PublishService::NewStub(ch);
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
    preq.add_envelopes()->mutable_group_message()->set_data(PrivateMessage(
        GroupId(topic), run, 0, static_cast<uint64_t>(e), static_cast<size_t>(o.payload)));
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

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "loadgen: %s\nusage: loadgen --target HOST:PORT --mode publish|query|newest|verify|"
               "v3-send|v3-query|subscribe-latency|deliver|idle-streams|stream-verify [--clients "
               "N] [--threads K] "
               "[--transport h2|grpc] [--envelopes E] [--payload B] [--topics T] [--limit L] "
               "[--duration S] [--warmup S] [--server-pid P] [--subscribers S] "
               "[--stream static|bidi] [--streams-per-channel M] [--rate R] [--grace S] "
               "[--publishes-file F] [--publish-log F] [--prefill N] [--settle S] "
               "[--open-timeout S]\n(the comment at the top of "
               "bench/loadgen/loadgen.cc explains each)\n",
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
      } else if (v == "subscribe-latency") {
        o.mode = Mode::kSubscribeLatency;
      } else if (v == "deliver") {
        o.mode = Mode::kDeliver;
      } else if (v == "idle-streams") {
        o.mode = Mode::kIdleStreams;
      } else if (v == "stream-verify") {
        o.mode = Mode::kStreamVerify;
      } else if (v == "v3-send") {
        o.mode = Mode::kV3Send;
      } else if (v == "v3-query") {
        o.mode = Mode::kV3Query;
      } else {
        Usage("unknown --mode");
      }
    } else if (a == "--clients") {
      positive_int(o.clients);
    } else if (a == "--threads") {
      positive_int(o.threads);
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
    } else if (a == "--subscribers") {
      positive_int(o.subscribers);
    } else if (a == "--streams-per-channel") {
      positive_int(o.streams_per_channel);
    } else if (a == "--prefill") {
      positive_int(o.prefill);
    } else if (a == "--stream") {
      if (v == "static") {
        o.stream = StreamKind::kStatic;
      } else if (v == "bidi") {
        o.stream = StreamKind::kBidi;
      } else {
        Usage("--stream wants static or bidi");
      }
    } else if (a == "--transport") {
      if (v == "h2") {
        o.transport = Transport::kH2;
      } else if (v == "grpc") {
        o.transport = Transport::kGrpc;
      } else {
        Usage("--transport wants h2 or grpc");
      }
    } else if (a == "--rate" || a == "--grace" || a == "--settle" || a == "--open-timeout") {
      if (!numeric || num < 0 || (a == "--open-timeout" && num <= 0)) {
        Usage((a + " wants a non-negative number").c_str());
      }
      (a == "--rate"     ? o.rate
       : a == "--grace"  ? o.grace_s
       : a == "--settle" ? o.settle_s
                         : o.open_timeout_s) = num;
    } else if (a == "--publishes-file") {
      o.publishes_file = v;
    } else if (a == "--publish-log") {
      o.publish_log = v;
    } else if (a == "--server-pid") {
      if (!numeric || num < 1) Usage("--server-pid wants a pid");
      o.server_pid = static_cast<long>(num);
    } else {
      Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.target.empty()) Usage("--target is required");
  if ((o.mode == Mode::kV3Send || o.mode == Mode::kV3Query) && o.transport != Transport::kH2) {
    Usage("the v3 modes run on --transport h2 only");
  }
  if (o.mode == Mode::kV3Query && o.limit > 100) Usage("v3-query wants --limit 1..100");
  const bool unary = o.mode == Mode::kPublish || o.mode == Mode::kQuery ||
                     o.mode == Mode::kNewest || o.mode == Mode::kV3Send || o.mode == Mode::kV3Query;
  if (unary && o.rate > 0 && o.transport != Transport::kH2) {
    Usage("--rate in the unary modes runs on --transport h2 only");
  }
  return o;
}

int Main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  if (o.mode == Mode::kVerify) return Verify(o) ? 0 : 1;
  if (o.mode == Mode::kSubscribeLatency || o.mode == Mode::kDeliver ||
      o.mode == Mode::kIdleStreams || o.mode == Mode::kStreamVerify) {
    return RunStreamMode(o);
  }
  return RunUnaryMode(o);
}

}  // namespace
}  // namespace xb::bench

int main(int argc, char** argv) { return xb::bench::Main(argc, argv); }
