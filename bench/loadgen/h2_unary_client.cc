#include "h2_unary_client.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame_decoder.h"
#include "h2_connection.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

constexpr char kPublishPath[] = "/xmtp.backend.v1.PublishService/Publish";
constexpr char kQueryPath[] = "/xmtp.backend.v1.QueryService/Query";
constexpr char kQueryNewestPath[] = "/xmtp.backend.v1.QueryService/QueryNewest";
constexpr char kV3SendPath[] = "/xmtp.mls.api.v1.MlsApi/SendGroupMessages";
constexpr char kV3QueryPath[] = "/xmtp.mls.api.v1.MlsApi/QueryGroupMessages";
// kCallDeadline as a grpc-timeout value (PROTOCOL-HTTP2: "Timeout"), which grpc++ sends too.
constexpr char kGrpcTimeout[] = "10S";
static_assert(kCallDeadline == std::chrono::seconds(10));
constexpr auto kReconnectDelay = std::chrono::seconds(1);
constexpr auto kDeadlineCheck = std::chrono::milliseconds(100);
constexpr int kIdleWaitMs = 100;  // the longest epoll wait: deadlines are checked this often
constexpr auto kPaceCatchUp = std::chrono::seconds(1);  // --rate: a client further behind skips
constexpr size_t kReadBuffer = 256 << 10;
constexpr int kMaxEvents = 64;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "loadgen: h2 transport: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

// The response decoders count what the grpc transport counts from the parsed message, straight
// from the wire bytes (field numbers of proto/xmtp/backend/v1/backend.proto). False when the
// bytes are not well-formed protobuf. A field with an unexpected wire type is skipped, as
// protobuf's parser keeps it as an unknown field.

// PublishResponse { repeated EnvelopeMeta envelope_metas = 1; }, and
// QueryResponse { repeated ServerEnvelope envelopes = 1; Continuation continuation = 2; }: the
// number of field-1 entries.
bool CountRepeatedField1(std::string_view bytes, uint64_t* got) {
  WireReader r(bytes);
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 2) {
      r.Bytes();
      ++*got;
    } else {
      r.Skip(wt);
    }
  }
  return r.ok();
}

// The first varint field 1 of a message (Cursor.sequence_id), through the submessage field 1
// (EnvelopeMeta.cursor) when `depth` is 2. Repeated occurrences: the last wins, as in protobuf.
bool Field1(std::string_view bytes, int depth, uint64_t* value) {
  WireReader r(bytes);
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && depth > 1 && wt == 2) {
      if (!Field1(r.Bytes(), depth - 1, value)) return false;
    } else if (f == 1 && depth == 1 && wt == 0) {
      *value = r.Varint();
    } else {
      r.Skip(wt);
    }
  }
  return r.ok();
}

// QueryNewestResponse { repeated Result results = 1; }, Result { Topic topic = 1; EnvelopeMeta
// meta = 2; ... }: the results whose meta carries a sequence id above 0.
bool CountNewest(std::string_view bytes, uint64_t* got) {
  WireReader r(bytes);
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f != 1 || wt != 2) {
      r.Skip(wt);
      continue;
    }
    WireReader result(r.Bytes());
    uint64_t sequence_id = 0;
    uint32_t rf, rwt;
    while (result.Next(&rf, &rwt)) {
      if (rf == 2 && rwt == 2) {
        if (!Field1(result.Bytes(), 2, &sequence_id)) return false;
      } else {
        result.Skip(rwt);
      }
    }
    if (!result.ok()) return false;
    if (sequence_id > 0) ++*got;
  }
  return r.ok();
}

// Where the clients connect: the target resolved once per driver.
struct Endpoint {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string authority;  // HOST:PORT, as grpc++ sends it
  std::string error;      // non-empty: the target did not resolve
};

// One closed-loop client: its own connection, one call at a time; the object carries each call
// in turn (H2Call::Reset). Driver thread only.
class H2UnaryClient final : public H2Call {
 public:
  enum class Next { kStarted, kWaiting, kDone };

  // `ended` is the driver's list of clients whose call ended (End appends this).
  H2UnaryClient(const UnaryRun& run, int client, ClientStats* stats, const Endpoint& endpoint,
                int epoll_fd, std::vector<H2UnaryClient*>* ended)
      : run_(run),
        o_(*run.options),
        stats_(*stats),
        requests_(run, client),
        endpoint_(endpoint),
        epoll_fd_(epoll_fd),
        ended_(ended) {
    stats_.latencies_us.reserve(1 << 16);
    if (o_.rate > 0) {
      // --rate: each client calls every clients/rate seconds, the clients' first calls spread
      // over one such interval.
      pace_ = Seconds(static_cast<double>(o_.clients) / o_.rate);
      due_ = Clock::now() + Seconds(static_cast<double>(client) / o_.rate);
    }
    switch (o_.mode) {
      case Mode::kQuery:
        path_ = kQueryPath;
        break;
      case Mode::kNewest:
        path_ = kQueryNewestPath;
        break;
      case Mode::kV3Send:
        path_ = kV3SendPath;
        break;
      case Mode::kV3Query:
        path_ = kV3QueryPath;
        break;
      default:
        path_ = kPublishPath;
    }
  }

  // Starts the next call at `now` (the driver's clock): kDone once run.stop has passed; kWaiting
  // (until wake_at()) before the client's turn under --rate, or while a failed connection may
  // not be replaced yet. A call may end at once (End: its connection failed from the start).
  Next StartNext(Clock::time_point now) {
    if (now >= run_.stop) return Next::kDone;
    if (now < due_) {
      wake_at_ = due_;
      return Next::kWaiting;
    }
    if (polled_ == nullptr || polled_->conn().draining()) {
      const bool failed = polled_ != nullptr ? polled_->conn().closed() : !endpoint_.error.empty();
      if (failed && now < connect_at_ + kReconnectDelay) {
        wake_at_ = connect_at_ + kReconnectDelay;
        return Next::kWaiting;
      }
      polled_.reset();  // its call has ended: nothing is left on it
      connect_at_ = now;
      if (endpoint_.error.empty()) {
        polled_ = std::make_unique<PolledConnection>(
            epoll_fd_, std::make_unique<H2Connection>(endpoint_.addr, endpoint_.addr_len,
                                                      endpoint_.authority));
        polled_->Watch(this);
      }
    }
    if (pace_ != Clock::duration::zero()) {
      // The next turn on a fixed grid, so the rate holds when the loop wakes late; a client
      // held up for longer (a stalled server) resumes at once rather than in a burst.
      due_ = std::max(due_ + pace_, now - kPaceCatchUp);
    }
    // Latency is timed from the call's start; building the request is not part of it.
    measured_ = now >= run_.measure_start;
    switch (o_.mode) {
      case Mode::kQuery:
        requests_.NextQuery(&qreq_);
        qreq_.SerializeToString(&request_);
        break;
      case Mode::kNewest:
        requests_.NextNewest(&nreq_);
        nreq_.SerializeToString(&request_);
        break;
      case Mode::kV3Query:
        requests_.NextV3Query(&request_);
        break;
      default:  // publish, v3-send: SendGroupMessagesRequest is PublishRequest on the wire
        requests_.NextPublish(&preq_);
        preq_.SerializeToString(&request_);
    }
    Reset();
    SetRequest(request_, RequestEnd::kHalfClose);
    messages_ = 0;
    got_ = 0;
    undecodable_ = false;
    deadline_exceeded_ = false;
    in_flight_ = true;
    started_ = Clock::now();
    if (polled_ == nullptr) {
      End(grpc::Status(grpc::StatusCode::UNAVAILABLE, endpoint_.error));
    } else {
      polled_->conn().Start(this, path_, kGrpcTimeout);
    }
    return Next::kStarted;
  }

  // After kWaiting: when StartNext may start a call.
  Clock::time_point wake_at() const { return wake_at_; }

  // Readiness of the connection's socket.
  void OnEvents(uint32_t events, uint8_t* buf, size_t size) {
    if (polled_ == nullptr) return;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) polled_->conn().OnReadable(buf, size);
    if (events & EPOLLOUT) polled_->conn().OnWritable();
  }

  // Hands the connection's queued frames to the kernel (may end the call: the connection failed).
  void Flush() {
    dirty_ = false;
    if (polled_ != nullptr) (void)polled_->Flush();
  }
  // Asks for a Flush before the driver waits again; false when one was asked for already.
  bool MarkDirty() { return !std::exchange(dirty_, true); }

  // A call in flight for kCallDeadline is reset and ends DEADLINE_EXCEEDED; true when it was
  // (its RST_STREAM wants a Flush).
  bool ExpireDeadline(Clock::time_point now) {
    if (!in_flight_ || deadline_exceeded_ || now - started_ < kCallDeadline) return false;
    deadline_exceeded_ = true;
    if (connection() != nullptr) connection()->Cancel(this);  // ends it now or once RST is sent
    return true;
  }

  void End(const grpc::Status& s) override {
    const auto finished = Clock::now();
    in_flight_ = false;
    grpc::Status status = s;
    if (deadline_exceeded_) {
      status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded");
    } else if (status.ok() && messages_ != 1) {
      // grpc++'s words for an OK unary call without a response message.
      status = grpc::Status(grpc::StatusCode::INTERNAL,
                            messages_ == 0 ? "No message returned for unary request"
                                           : "loadgen: more than one response message");
    } else if (status.ok() && undecodable_) {
      status = grpc::Status(grpc::StatusCode::INTERNAL, "loadgen: a response that does not decode");
    }
    RecordCall(stats_, o_, measured_, finished - started_, status, got_);
    ended_->push_back(this);
  }

 private:
  void OnResponseMessage(std::string_view bytes, Clock::time_point) override {
    if (++messages_ > 1) return;
    const bool ok =
        o_.mode == Mode::kNewest ? CountNewest(bytes, &got_) : CountRepeatedField1(bytes, &got_);
    undecodable_ = !ok;
  }
  // The call ends INTERNAL with the reason (H2Call); nothing to add.
  void OnFramingError(const char*) override {}

  // Const after construction.
  const UnaryRun& run_;
  const Options& o_;
  ClientStats& stats_;
  UnaryRequests requests_;
  const Endpoint& endpoint_;
  const int epoll_fd_;
  std::vector<H2UnaryClient*>* const ended_;
  const char* path_;

  std::unique_ptr<PolledConnection> polled_;  // the client's connection
  Clock::time_point connect_at_{};            // when the last connection attempt began
  Clock::time_point wake_at_{};               // see wake_at()
  // --rate: the time between this client's calls (zero: closed loop) and its next turn.
  Clock::duration pace_ = Clock::duration::zero();
  Clock::time_point due_{};
  bool dirty_ = false;
  // The call in flight (or the last one).
  bool in_flight_ = false;
  bool measured_ = false;
  bool deadline_exceeded_ = false;
  Clock::time_point started_;
  int messages_ = 0;
  uint64_t got_ = 0;
  bool undecodable_ = false;
  // Request scratch, reused call after call.
  v1::PublishRequest preq_;
  v1::QueryRequest qreq_;
  v1::QueryNewestRequest nreq_;
  std::string request_;
};

// The epoll wait: until the first waiting client's wake_at() (rounded up), at most kIdleWaitMs.
int WaitMs(const std::vector<H2UnaryClient*>& waiting, Clock::time_point now) {
  auto wait = std::chrono::milliseconds(kIdleWaitMs);
  for (const H2UnaryClient* c : waiting) {
    if (c->wake_at() <= now) return 0;
    wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(c->wake_at() - now));
  }
  return static_cast<int>(wait.count());
}

}  // namespace

// The loop: calls that ended (End appends their client to `ready`) start their next call at the
// top of the next iteration, so a connection is never replaced from inside its own callbacks;
// then every connection that was read from or started a call is flushed, in one write each, and
// the thread waits for readiness.
void DriveH2Clients(const UnaryRun& run, UnaryClients specs) {
  Endpoint endpoint;
  endpoint.authority = run.options->target;
  endpoint.error = ResolveTarget(endpoint.authority, &endpoint.addr, &endpoint.addr_len);
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) Die("epoll_create1");
  std::vector<uint8_t> buf(kReadBuffer);

  // Declared before the clients, which append to it until they are destroyed.
  std::vector<H2UnaryClient*> ready;
  std::vector<std::unique_ptr<H2UnaryClient>> clients;
  for (const auto& [client, stats] : specs) {
    clients.push_back(
        std::make_unique<H2UnaryClient>(run, client, stats, endpoint, epoll.get(), &ready));
    ready.push_back(clients.back().get());
  }
  size_t active = clients.size();
  std::vector<H2UnaryClient*> starting, waiting, dirty;
  auto mark_dirty = [&dirty](H2UnaryClient* c) {
    if (c->MarkDirty()) dirty.push_back(c);
  };
  auto next_deadline_check = Clock::now() + kDeadlineCheck;
  epoll_event events[kMaxEvents];
  while (true) {
    const auto now = Clock::now();
    for (size_t i = 0; i < waiting.size();) {
      if (now >= waiting[i]->wake_at() || now >= run.stop) {
        ready.push_back(waiting[i]);
        waiting[i] = waiting.back();
        waiting.pop_back();
      } else {
        ++i;
      }
    }
    starting.swap(ready);  // a call that ends at once appends to `ready` for the next round
    for (H2UnaryClient* c : starting) {
      switch (c->StartNext(now)) {
        case H2UnaryClient::Next::kStarted:
          mark_dirty(c);
          break;
        case H2UnaryClient::Next::kWaiting:
          waiting.push_back(c);
          break;
        case H2UnaryClient::Next::kDone:
          --active;
          break;
      }
    }
    starting.clear();
    if (now >= next_deadline_check) {
      next_deadline_check = now + kDeadlineCheck;
      for (auto& c : clients) {
        if (c->ExpireDeadline(now)) mark_dirty(c.get());
      }
    }
    for (H2UnaryClient* c : dirty) c->Flush();  // a failed connection ends its call: `ready`
    dirty.clear();
    if (active == 0) break;
    const int timeout = !ready.empty() ? 0 : WaitMs(waiting, Clock::now());
    const int n = ::epoll_wait(epoll.get(), events, kMaxEvents, timeout);
    if (n < 0 && errno != EINTR) Die("epoll_wait");
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<H2UnaryClient*>(events[i].data.ptr);
      c->OnEvents(events[i].events, buf.data(), buf.size());
      mark_dirty(c);
    }
  }
}

}  // namespace xb::bench
