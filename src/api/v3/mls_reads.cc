#include "api/v3/mls_reads.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/encoded_response.h"
#include "api/request_bounds.h"
#include "api/v3/commit_log_reads.h"
#include "api/v3/rows.h"
#include "api/v3/v3_paging.h"
#include "api/v3/wire.h"
#include "mls/api/v1/mls.pb.h"
#include "rpc/unary.h"
#include "validate/topic.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace mls = xmtp::mls::api::v1;
using validate::TopicKind;

namespace {

bool WriteGroupMessage(std::string& out, uint32_t number, const store::StoredEnvelopeView& row) {
  return AppendGroupMessage(out, number, row, /*with_content=*/true);
}

// implements: issue 33 (docs/v3-api.md 3.5) — one topic, a page in either direction: ascending is
// Store::Query (API-240), descending Store::QueryBefore (G1), both on the primary.
asio::awaitable<Status> QueryMessages(const ApiContext& ctx, TopicKind kind,
                                      std::string_view identifier, const char* field,
                                      const mls::PagingInfo& paging_info, RowWriter writer,
                                      rpc::Call& call) {
  XB_TRY_CO(std::string topic, TopicOf(kind, identifier, field));
  XB_TRY_CO(V3Paging paging, PagingOf(paging_info, /*commit_log=*/false));
  XB_RETURN_IF_ERROR_CO(
      co_await call.ReserveResponse(WorstResponseMemory(ctx.limits, paging.limit)));
  auto job = [store = ctx.store, topic = std::move(topic), paging, writer,
              max_bytes = ctx.limits.max_response_bytes]() -> store::StoreResult<EncodedRead> {
    auto read =
        paging.ascending
            ? store->Query({store::TopicCursor{topic, paging.cursor}}, paging.limit, max_bytes)
            : store->QueryBefore(topic, paging.cursor, paging.limit, max_bytes);
    if (!read.ok()) {
      return std::move(read).error();
    }
    EncodedRead encoded;
    const V3Page page = AppendV3Page(encoded.message, read.value().envelopes,
                                     read.value().over_budget, paging, writer, 1, 2, max_bytes);
    encoded.invariant = page.invariant;
    encoded.over_budget = page.over_budget;
    return encoded;
  };
  co_return FinishEncodedRead(ctx, co_await ctx.db->Run(std::move(job), call.ended_flag()), call);
}

// Distinct topics in first-appearance order, and each request position's index among them.
struct Positions {
  std::vector<std::string> topics;
  std::vector<size_t> of_position;
};

Result<Positions> PositionsOf(TopicKind kind,
                              const google::protobuf::RepeatedPtrField<std::string>& identifiers,
                              const char* field) {
  Positions positions;
  std::unordered_map<std::string, size_t> index;
  for (const std::string& identifier : identifiers) {
    XB_TRY(std::string topic, TopicOf(kind, identifier, field));
    auto [it, inserted] = index.emplace(topic, positions.topics.size());
    if (inserted) {
      positions.topics.push_back(std::move(topic));
    }
    positions.of_position.push_back(it->second);
  }
  return positions;
}

// Newest rows of `topics` (distinct), read `chunk` topics at a time, by topic.
store::StoreResult<std::unordered_map<std::string, store::StoredEnvelope>> NewestByTopic(
    store::Store& store, const std::vector<std::string>& topics, size_t chunk, bool with_payload,
    bool primary) {
  std::unordered_map<std::string, store::StoredEnvelope> by_topic;
  for (size_t at = 0; at < topics.size(); at += chunk) {
    const std::vector<std::string> part(
        topics.begin() + static_cast<ptrdiff_t>(at),
        topics.begin() + static_cast<ptrdiff_t>(std::min(topics.size(), at + chunk)));
    auto read =
        primary ? store.NewestOnPrimary(part, with_payload) : store.Newest(part, with_payload);
    if (!read.ok()) {
      return std::move(read).error();
    }
    for (auto& row : read.value()) {
      std::string topic = row.meta.topic;
      by_topic.emplace(std::move(topic), std::move(row));
    }
  }
  return by_topic;
}

// implements: issue 33 (docs/v3-api.md 3.4, G6, Q3) — one entry per request position, empty where
// the installation has no key package; read on the primary.
asio::awaitable<Status> FetchKeyPackages(const ApiContext& ctx,
                                         const mls::FetchKeyPackagesRequest& request,
                                         rpc::Call& call) {
  XB_TRY_CO(Positions positions,
            PositionsOf(TopicKind::kKeyPackage, request.installation_keys(), "installation key"));
  XB_RETURN_IF_ERROR_CO(
      co_await call.ReserveResponse(WorstResponseMemory(ctx.limits, positions.topics.size())));
  auto job = [store = ctx.store, positions = std::move(positions),
              chunk = std::max<uint64_t>(1, ctx.limits.max_newest_full_topics),
              max_bytes = ctx.limits.max_response_bytes]() -> store::StoreResult<EncodedRead> {
    auto rows = NewestByTopic(*store, positions.topics, chunk, true, /*primary=*/true);
    if (!rows.ok()) {
      return std::move(rows).error();
    }
    EncodedRead encoded;
    for (size_t topic : positions.of_position) {
      const auto found = rows.value().find(positions.topics[topic]);
      std::string_view package;
      if (found != rows.value().end()) {
        const auto bytes = StoredKeyPackage(store::StoredEnvelopeView::Of(found->second));
        if (!bytes) {
          encoded.invariant = true;
          return encoded;
        }
        package = *bytes;
      }
      if (!AppendEntry(encoded, package, max_bytes)) {
        return encoded;
      }
    }
    return encoded;
  };
  co_return FinishEncodedRead(ctx, co_await ctx.db->Run(std::move(job), call.ended_flag()), call);
}

// implements: issue 33 (docs/v3-api.md 3.6) — one Response per request position; the message
// without content carries only its metadata. May read the replica (API.md 3.6).
asio::awaitable<Status> GetNewestGroupMessage(const ApiContext& ctx,
                                              const mls::GetNewestGroupMessageRequest& request,
                                              rpc::Call& call) {
  if (request.group_ids().empty()) {
    co_return InvalidArgument("no group ids provided");
  }
  const bool full = request.include_content();
  const uint64_t bound =
      full ? ctx.limits.max_newest_full_topics : ctx.limits.max_newest_metadata_topics;
  if (static_cast<uint64_t>(request.group_ids_size()) > bound) {
    co_return InvalidArgument("too many group ids in one request");
  }
  XB_TRY_CO(Positions positions,
            PositionsOf(TopicKind::kGroupMessage, request.group_ids(), "group id"));
  XB_RETURN_IF_ERROR_CO(
      co_await call.ReserveResponse(full ? WorstResponseMemory(ctx.limits, positions.topics.size())
                                         : 2 * positions.of_position.size() * 128));
  auto job = [store = ctx.store, positions = std::move(positions), full,
              max_bytes = ctx.limits.max_response_bytes]() -> store::StoreResult<EncodedRead> {
    auto rows = NewestByTopic(*store, positions.topics, positions.topics.size(), full, false);
    if (!rows.ok()) {
      return std::move(rows).error();
    }
    EncodedRead encoded;
    std::string response;
    for (size_t topic : positions.of_position) {
      const auto found = rows.value().find(positions.topics[topic]);
      response.clear();
      if (found != rows.value().end() &&
          !AppendGroupMessage(response, 1, store::StoredEnvelopeView::Of(found->second), full)) {
        encoded.invariant = true;
        return encoded;
      }
      if (!AppendEntry(encoded, response, max_bytes)) {
        return encoded;
      }
    }
    return encoded;
  };
  co_return FinishEncodedRead(ctx, co_await ctx.db->Run(std::move(job), call.ended_flag()), call);
}

}  // namespace

void AddMlsReads(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.mls.api.v1.MlsApi/QueryGroupMessages", rpc::CallKind::kUnary,
             rpc::UnaryWritten<mls::QueryGroupMessagesRequest>(
                 [&context](const mls::QueryGroupMessagesRequest& request, rpc::Call& call) {
                   return QueryMessages(context, TopicKind::kGroupMessage, request.group_id(),
                                        "group id", request.paging_info(), WriteGroupMessage, call);
                 }));
  router.Add("/xmtp.mls.api.v1.MlsApi/QueryWelcomeMessages", rpc::CallKind::kUnary,
             rpc::UnaryWritten<mls::QueryWelcomeMessagesRequest>(
                 [&context](const mls::QueryWelcomeMessagesRequest& request, rpc::Call& call) {
                   return QueryMessages(context, TopicKind::kWelcome, request.installation_key(),
                                        "installation key", request.paging_info(),
                                        AppendWelcomeMessage, call);
                 }));
  router.Add(
      "/xmtp.mls.api.v1.MlsApi/FetchKeyPackages", rpc::CallKind::kUnary,
      rpc::UnaryWritten<mls::FetchKeyPackagesRequest>(
          [&context](const mls::FetchKeyPackagesRequest& request, rpc::Call& call) {
            return FetchKeyPackages(context, request, call);
          },
          AtMost(1, context.limits.max_query_topics, "too many installation keys in one request")));
  router.Add("/xmtp.mls.api.v1.MlsApi/GetNewestGroupMessage", rpc::CallKind::kUnary,
             rpc::UnaryWritten<mls::GetNewestGroupMessageRequest>(
                 [&context](const mls::GetNewestGroupMessageRequest& request, rpc::Call& call) {
                   return GetNewestGroupMessage(context, request, call);
                 },
                 AtMost(1,
                        std::max(context.limits.max_newest_metadata_topics,
                                 context.limits.max_newest_full_topics),
                        "too many group ids in one request")));
  AddBatchQueryCommitLog(router, context);
}

}  // namespace xb::api::v3
