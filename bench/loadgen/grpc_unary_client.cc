#include "grpc_unary_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <vector>

#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

// One closed-loop client: its own channel, one call outstanding at a time, the next started
// when the last completes.
class UnaryClient {
 public:
  UnaryClient(const UnaryRun& run, int client, ClientStats* stats)
      : run_(run), o_(*run.options), stats_(*stats), requests_(run, client) {
    auto channel = MakeChannel(o_.target, client);
    publish_ = v1::PublishService::NewStub(channel);
    query_ = v1::QueryService::NewStub(channel);
    stats_.latencies_us.reserve(1 << 16);
  }

  // Starts the next call on `cq`, or returns false once the run's stop time has passed.
  bool Start(grpc::CompletionQueue* cq) {
    const auto t0 = Clock::now();
    if (t0 >= run_.stop) return false;
    measured_ = t0 >= run_.measure_start;
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    status_ = grpc::Status();
    // Latency is timed from the call's start; building the request is not part of it.
    switch (o_.mode) {
      case Mode::kPublish:
        requests_.NextPublish(&preq_);
        presp_.Clear();
        Launch(publish_call_, publish_->PrepareAsyncPublish(ctx_.get(), preq_, cq), &presp_);
        return true;
      case Mode::kQuery:
        requests_.NextQuery(&qreq_);
        qresp_.Clear();
        Launch(query_call_, query_->PrepareAsyncQuery(ctx_.get(), qreq_, cq), &qresp_);
        return true;
      case Mode::kNewest:
        requests_.NextNewest(&nreq_);
        nresp_.Clear();
        Launch(newest_call_, query_->PrepareAsyncQueryNewest(ctx_.get(), nreq_, cq), &nresp_);
        return true;
      case Mode::kVerify:
      case Mode::kSubscribeLatency:
      case Mode::kDeliver:
      case Mode::kIdleStreams:
      case Mode::kStreamVerify:
        return false;  // not unary load modes: Main runs them elsewhere
      case Mode::kV3Send:
      case Mode::kV3Query:
        return false;  // h2 only (Parse refuses them here)
    }
    return false;
  }

  // The outstanding call completed: record it.
  void Complete() {
    const auto finished = Clock::now();
    uint64_t got = 0;
    switch (o_.mode) {
      case Mode::kPublish:
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
    RecordCall(stats_, o_, measured_, finished - started_, status_, got);
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

  const UnaryRun& run_;
  const Options& o_;
  ClientStats& stats_;
  UnaryRequests requests_;
  std::unique_ptr<v1::PublishService::Stub> publish_;
  std::unique_ptr<v1::QueryService::Stub> query_;
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

}  // namespace

void DriveGrpcClients(const UnaryRun& run, UnaryClients specs) {
  std::vector<std::unique_ptr<UnaryClient>> clients;
  for (const auto& [client, stats] : specs) {
    clients.push_back(std::make_unique<UnaryClient>(run, client, stats));
  }
  grpc::CompletionQueue cq;
  size_t outstanding = 0;
  for (auto& c : clients) {
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

}  // namespace xb::bench
