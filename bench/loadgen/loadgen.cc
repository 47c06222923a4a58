// bench/loadgen: a gRPC load client for xmtp-backend (grpc++). Unlike h2load it sends distinct
// valid envelopes, so every Publish stores new rows. The unary modes give each client its own
// HTTP/2 connection and one call in flight, driven from completion-queue threads (async stubs).
// The stream modes (stream_modes.cc) drive thousands of subscriber streams from one worker thread
// over either transport (--transport): libnghttp2 on an epoll loop (h2_stream_client.h, the
// default: a few times cheaper per received message) or grpc++'s generic async API
// (stream_client.h); their publishers use grpc++ sync stubs. Built by bench/publish.sh and
// bench/streams.sh into a private directory; the main build never includes it (CI must not
// depend on grpc++ or libnghttp2).
//
//   loadgen --target HOST:PORT --mode MODE [options]
//   unary modes: publish | query | newest | verify
//     --clients N      concurrent clients, each with its own channel and one call  [1]
//                      in flight
//     --threads K      completion-queue threads driving the unary clients          [1]
//     --envelopes E    envelopes per Publish request                               [1]
//     --payload B      size of each MLS PrivateMessage (GroupMessage.data), bytes  [1024]
//     --topics T       distinct group topics; client c takes c, c+N, c+2N, ... (N =  [64]
//                      clients), so with T a multiple of N no two clients share a
//                      group (concurrent writers to one group are the rare case)
//     --limit L        Query limit (query mode; cursor 0, one topic per request)   [10]
//     --duration S     measured seconds                                            [5]
//     --warmup S       unmeasured seconds before the measured ones                 [1]
//     --server-pid P   read the server's utime+stime from /proc/P/stat around the measured interval
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

namespace {

namespace v1 = ::xmtp::backend::v1;

std::unique_ptr<v1::PublishService::Stub> PublishStub(const std::shared_ptr<grpc::Channel>& ch) {
  return v1::PublishService::NewStub(ch);
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

// One closed-loop client of the unary modes: its own channel (HTTP/2 connection), one call
// outstanding at a time, the next started when the last completes. Clients are driven by
// completion-queue threads rather than a thread each: 32 blocking threads took about 200 us of
// CPU per call here, on the core the benchmarks share with PostgreSQL.
class UnaryClient {
 public:
  UnaryClient(const Shared& sh, int client, ClientStats& st)
      : sh_(sh),
        o_(*sh.options),
        client_(client),
        st_(st),
        topic_cursor_(static_cast<uint64_t>(client)) {
    auto channel = MakeChannel(o_.target, client);
    publish_ = PublishStub(channel);
    query_ = v1::QueryService::NewStub(channel);
    st_.latencies_us.reserve(1 << 16);
  }

  // Starts the next call on `cq`, or returns false once the run's stop time has passed.
  bool Start(grpc::CompletionQueue* cq) {
    const auto t0 = Clock::now();
    if (t0 >= sh_.stop) return false;
    measured_ = t0 >= sh_.measure_start;
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    status_ = grpc::Status();
    // Latency is timed from the call's start; building the request is not part of it.
    switch (o_.mode) {
      case Mode::kPublish:
        preq_.Clear();
        for (int e = 0; e < o_.envelopes; ++e) {
          const uint64_t topic = NextTopic(topic_cursor_, o_);
          preq_.add_envelopes()->mutable_group_message()->set_data(
              PrivateMessage(GroupId(topic), sh_.run, static_cast<uint64_t>(client_), counter_++,
                             static_cast<size_t>(o_.payload)));
        }
        presp_.Clear();
        Launch(publish_call_, publish_->PrepareAsyncPublish(ctx_.get(), preq_, cq), &presp_);
        return true;
      case Mode::kQuery: {
        qreq_.Clear();
        auto* q = qreq_.add_queries();
        q->mutable_topic()->set_topic(GroupTopic(NextTopic(topic_cursor_, o_)));
        q->mutable_cursor()->set_sequence_id(0);
        qreq_.set_limit(static_cast<uint32_t>(o_.limit));
        qresp_.Clear();
        Launch(query_call_, query_->PrepareAsyncQuery(ctx_.get(), qreq_, cq), &qresp_);
        return true;
      }
      case Mode::kNewest:
        nreq_.Clear();
        nreq_.add_topics()->set_topic(GroupTopic(NextTopic(topic_cursor_, o_)));
        nresp_.Clear();
        Launch(newest_call_, query_->PrepareAsyncQueryNewest(ctx_.get(), nreq_, cq), &nresp_);
        return true;
      case Mode::kVerify:
      case Mode::kSubscribeLatency:
      case Mode::kDeliver:
      case Mode::kIdleStreams:
      case Mode::kStreamVerify:
        return false;  // not unary load modes: Main runs them elsewhere
    }
    return false;
  }

  // The outstanding call completed: record it.
  void Complete() {
    const auto finished = Clock::now();
    grpc::Status s = status_;
    uint64_t got = 0;
    switch (o_.mode) {
      case Mode::kPublish:
        if (s.ok() && presp_.envelope_metas_size() != o_.envelopes) {
          s = grpc::Status(grpc::StatusCode::INTERNAL,
                           "loadgen: wrong envelope_metas count " +
                               std::to_string(presp_.envelope_metas_size()));
        }
        got = static_cast<uint64_t>(presp_.envelope_metas_size());
        break;
      case Mode::kQuery:
        got = static_cast<uint64_t>(qresp_.envelopes_size());
        break;
      case Mode::kNewest:
        for (const auto& r : nresp_.results()) {
          if (r.has_meta() && r.meta().cursor().sequence_id() > 0) ++got;
        }
        break;
      default:
        break;
    }
    if (!s.ok()) {
      RecordError(st_, s, measured_);
      return;
    }
    if (measured_) {
      st_.latencies_us.push_back(static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(finished - started_).count()));
      ++st_.ok;
      st_.envelopes += got;
      if (got == 0) ++st_.empty;
    }
  }

 private:
  // Starts a prepared call; its completion comes back through the queue with this as the tag.
  template <typename Response>
  void Launch(std::unique_ptr<grpc::ClientAsyncResponseReader<Response>>& slot,
              std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> call, Response* response) {
    started_ = Clock::now();
    slot = std::move(call);
    slot->StartCall();
    slot->Finish(response, &status_, this);
  }

  const Shared& sh_;
  const Options& o_;
  const int client_;
  ClientStats& st_;
  std::unique_ptr<v1::PublishService::Stub> publish_;
  std::unique_ptr<v1::QueryService::Stub> query_;
  uint64_t counter_ = 0;
  uint64_t topic_cursor_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  grpc::Status status_;
  bool measured_ = false;
  Clock::time_point started_;
  v1::PublishRequest preq_;
  v1::PublishResponse presp_;
  v1::QueryRequest qreq_;
  v1::QueryResponse qresp_;
  v1::QueryNewestRequest nreq_;
  v1::QueryNewestResponse nresp_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::PublishResponse>> publish_call_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::QueryResponse>> query_call_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::QueryNewestResponse>> newest_call_;
};

// One completion-queue thread: runs `clients` until each has passed the stop time.
void RunClients(std::vector<UnaryClient*> clients) {
  grpc::CompletionQueue cq;
  size_t outstanding = 0;
  for (UnaryClient* c : clients) {
    if (c->Start(&cq)) ++outstanding;
  }
  while (outstanding > 0) {
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok)) break;
    auto* c = static_cast<UnaryClient*>(tag);
    c->Complete();  // a unary Finish always completes with ok; the status says how it went
    if (!c->Start(&cq)) --outstanding;
  }
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
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
  }
  return "?";
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "loadgen: %s\nusage: loadgen --target HOST:PORT --mode publish|query|newest|verify|"
               "subscribe-latency|deliver|idle-streams|stream-verify [--clients N] [--envelopes E] "
               "[--payload B] [--topics T] [--limit L] [--duration S] [--warmup S] "
               "[--server-pid P] [--subscribers S] [--stream static|bidi] [--transport h2|grpc] "
               "[--streams-per-channel M] [--rate R] [--grace S] [--prefill N] [--settle S] "
               "[--open-timeout S]\n(the comment at the top of bench/loadgen/loadgen.cc "
               "explains each)\n",
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

int Main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  if (o.mode == Mode::kVerify) return Verify(o) ? 0 : 1;
  if (o.mode == Mode::kSubscribeLatency || o.mode == Mode::kDeliver ||
      o.mode == Mode::kIdleStreams || o.mode == Mode::kStreamVerify) {
    return RunStreamMode(o);
  }

  Shared sh;
  sh.options = &o;
  sh.run = RunNonce();
  const auto start = Clock::now();
  sh.measure_start = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.warmup_s));
  sh.stop = sh.measure_start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(o.duration_s));
  std::vector<ClientStats> stats(static_cast<size_t>(o.clients));
  std::vector<std::unique_ptr<UnaryClient>> clients;
  std::vector<std::vector<UnaryClient*>> per_thread(static_cast<size_t>(o.threads));
  for (int c = 0; c < o.clients; ++c) {
    clients.push_back(std::make_unique<UnaryClient>(sh, c, stats[static_cast<size_t>(c)]));
    per_thread[static_cast<size_t>(c % o.threads)].push_back(clients.back().get());
  }
  std::vector<std::thread> threads;
  for (auto& group : per_thread) {
    threads.emplace_back(RunClients, group);
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
