// The unary load modes (publish, query, newest) as both of their transports share them: the
// run's clock, the requests a client sends, how a finished call is counted, and the driver
// signature. The transports are grpc_unary_client.h (grpc++ async stubs on completion-queue
// threads) and h2_unary_client.h (libnghttp2 sessions on epoll threads); RunUnaryMode
// (unary_run.cc, declared in loadgen.h) starts --threads drivers of the --transport one, each
// with its share of the --clients, and reports. Both transports send the same request bytes and
// count the same things, so their figures compare.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loadgen.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::bench {

// Const for the whole run; read by every driver thread.
struct UnaryRun {
  const Options* options = nullptr;
  uint64_t run = 0;  // nonce: the envelopes differ from every other run's
  Clock::time_point measure_start;
  Clock::time_point stop;  // no call starts at or after this
};

// What one client counted. Written by the thread that drives the client only, read after it
// stopped.
struct ClientStats {
  std::vector<uint32_t> latencies_us;  // measured interval only
  uint64_t ok = 0;
  uint64_t envelopes = 0;          // publish: envelopes stored; query: envelopes returned
  uint64_t empty = 0;              // OK responses that returned nothing (query/newest)
  std::map<int, uint64_t> errors;  // grpc status code -> count (measured interval)
  uint64_t warmup_errors = 0;
  std::string first_error;  // "CODE message" of the client's first non-OK call
};

// The requests of one client, the same for both transports: every PrivateMessage distinct per
// (run, client, counter), topics taken with a stride of --clients from offset `client` (so with
// --topics a multiple of --clients no two clients share a group: a plain round-robin from offset
// `client` made neighbouring clients hit the same topic one request apart, which measured
// topic-lock queueing instead of publish throughput).
class UnaryRequests {
 public:
  UnaryRequests(const UnaryRun& run, int client);

  // Fill `req` (cleared first) with the client's next request of that kind: Publish of
  // --envelopes group messages of --payload bytes; Query of one topic from cursor 0 with
  // --limit; QueryNewest of one topic.
  void NextPublish(::xmtp::backend::v1::PublishRequest* req);
  void NextQuery(::xmtp::backend::v1::QueryRequest* req);
  void NextNewest(::xmtp::backend::v1::QueryNewestRequest* req);
  // QueryGroupMessagesRequest{group_id, paging_info{ASCENDING, --limit}} of the topic NextQuery
  // would read, encoded by hand (field numbers of proto/mls/api/v1/mls.proto).
  void NextV3Query(std::string* bytes);

 private:
  uint64_t NextTopic();

  const UnaryRun& run_;
  const uint64_t client_;
  uint64_t counter_ = 0;
  uint64_t topic_cursor_;
};

// Counts one finished call into `st`. `status` is how it ended; `got` what its response held
// (publish: envelope_metas; query: envelopes; newest: results with a sequence id); `latency`
// from the call's start to its end. A publish that returned other than --envelopes metas counts
// as INTERNAL. `measured`: the call started inside the measured interval; the others count as
// warm-up (only their errors, into warmup_errors).
void RecordCall(ClientStats& st, const Options& o, bool measured, Clock::duration latency,
                const grpc::Status& status, uint64_t got);

// A transport's driver: runs `clients` (client index, its stats) on the calling thread, one
// call in flight per client, until run.stop has passed and every call started has ended.
using UnaryClients = std::vector<std::pair<int, ClientStats*>>;
using UnaryDriver = void (*)(const UnaryRun& run, UnaryClients clients);

}  // namespace xb::bench
