#include "api/v3/commit_log_reads.h"

#include <string>
#include <utility>
#include <vector>

#include "api/encoded_response.h"
#include "api/request_bounds.h"
#include "api/v3/rows.h"
#include "api/v3/v3_paging.h"
#include "api/v3/wire.h"
#include "mls/api/v1/mls.pb.h"
#include "rpc/unary.h"
#include "validate/topic.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace mls = xmtp::mls::api::v1;

namespace {

constexpr uint64_t kMaxCommitLogReads = 20;  // node-go's maxBatchQueries

struct CommitLogRead {
  std::string group_id;
  std::string topic;
  V3Paging paging;
};

Result<std::vector<CommitLogRead>> ReadsOf(const mls::BatchQueryCommitLogRequest& request) {
  if (request.requests().empty()) {
    return InvalidArgument("a commit log query holds 1 to 20 requests");
  }
  std::vector<CommitLogRead> reads;
  for (const auto& r : request.requests()) {
    XB_TRY(std::string topic, TopicOf(validate::TopicKind::kCommitLog, r.group_id(), "group id"));
    XB_TRY(V3Paging paging, PagingOf(r.paging_info(), /*commit_log=*/true));
    reads.push_back(CommitLogRead{r.group_id(), std::move(topic), paging});
  }
  return reads;
}

// Each read is one QueryCommitLogResponse{group_id, commit_log_entries, paging_info}; they share
// the response budget, which a batch past it fails as a whole (OUT_OF_RANGE).
store::StoreResult<EncodedRead> ReadBatch(store::Store& store,
                                          const std::vector<CommitLogRead>& reads,
                                          uint64_t max_bytes) {
  EncodedRead batch;
  std::string response;
  for (const CommitLogRead& read : reads) {
    auto page = store.Query({store::TopicCursor{read.topic, read.paging.cursor}}, read.paging.limit,
                            max_bytes);
    if (!page.ok()) {
      return std::move(page).error();
    }
    response.clear();
    AppendLengthField(response, 1, read.group_id);
    const uint64_t room = max_bytes > batch.message.size() ? max_bytes - batch.message.size() : 0;
    const V3Page written = AppendV3Page(response, page.value().envelopes, false, read.paging,
                                        AppendCommitLogEntry, 2, 3, room);
    batch.invariant = written.invariant;
    if (written.invariant) {
      return batch;
    }
    if (page.value().over_budget || written.over_budget || written.cut) {
      batch.over_budget = true;
      return batch;
    }
    if (!AppendEntry(batch, response, max_bytes)) {
      return batch;
    }
  }
  return batch;
}

// implements: issue 33 (docs/v3-api.md 3.8)
asio::awaitable<Status> BatchQueryCommitLog(const ApiContext& ctx,
                                            const mls::BatchQueryCommitLogRequest& request,
                                            rpc::Call& call) {
  XB_TRY_CO(std::vector<CommitLogRead> reads, ReadsOf(request));
  XB_RETURN_IF_ERROR_CO(co_await call.ReserveResponse(
      WorstResponseMemory(ctx.limits, reads.size() * kMaxV3PageSize)));
  auto job = [store = ctx.store, reads = std::move(reads),
              max_bytes = ctx.limits.max_response_bytes]() {
    return ReadBatch(*store, reads, max_bytes);
  };
  co_return FinishEncodedRead(ctx, co_await ctx.db->Run(std::move(job), call.ended_flag()), call);
}

}  // namespace

void AddBatchQueryCommitLog(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.mls.api.v1.MlsApi/BatchQueryCommitLog", rpc::CallKind::kUnary,
             rpc::UnaryWritten<mls::BatchQueryCommitLogRequest>(
                 [&context](const mls::BatchQueryCommitLogRequest& request, rpc::Call& call) {
                   return BatchQueryCommitLog(context, request, call);
                 },
                 AtMost(1, kMaxCommitLogReads, "a commit log query holds 1 to 20 requests")));
}

}  // namespace xb::api::v3
