#include "api/query_service.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "api/envelope_codec.h"
#include "api/store_status.h"
#include "rpc/unary.h"
#include "validate/topic.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;

namespace {

constexpr uint64_t kMaxCursor = static_cast<uint64_t>(INT64_MAX);

Status CheckCursor(uint64_t cursor) {
  if (cursor > kMaxCursor) {
    return InvalidArgument("a cursor is above 9223372036854775807");
  }
  return Status::Ok();
}

asio::awaitable<Result<v1::QueryResponse>> Query(const ApiContext& ctx,
                                                 const v1::QueryRequest& request) {
  const auto& limits = ctx.limits;
  // API-242: the bound counts entries before repeated topics merge.
  if (static_cast<uint64_t>(request.queries_size()) > limits.max_query_topics) {
    co_return InvalidArgument("too many topics in one query");
  }
  std::vector<store::TopicCursor> topics;
  std::unordered_map<std::string, size_t> position;
  for (const auto& q : request.queries()) {
    XB_RETURN_IF_ERROR_CO(validate::ValidateRequestTopic(q.topic().topic()));
    // implements: API-243
    if (validate::KindOf(q.topic().topic()) == validate::TopicKind::kKeyPackage) {
      co_return InvalidArgument("key package topics cannot be queried; use QueryNewest");
    }
    XB_RETURN_IF_ERROR_CO(CheckCursor(q.cursor().sequence_id()));
    const auto cursor = static_cast<int64_t>(q.cursor().sequence_id());
    auto [it, inserted] = position.emplace(q.topic().topic(), topics.size());
    if (inserted) {
      topics.push_back(store::TopicCursor{q.topic().topic(), cursor});
    } else {
      // implements: API-242 — a repeated topic reads from its lowest cursor.
      topics[it->second].after = std::min(topics[it->second].after, cursor);
    }
  }
  // implements: API-241
  uint32_t limit = request.limit();
  if (limit == 0) {
    limit = limits.default_query_limit;
  } else if (limit > limits.max_query_limit) {
    limit = limits.max_query_limit;
  }
  v1::QueryResponse response;
  response.mutable_continuation();  // always set
  if (topics.empty()) {
    co_return response;
  }
  auto result_job = [store = ctx.store, topics = std::move(topics), limit] {
    return store->Query(topics, limit);
  };
  auto result = co_await ctx.db->Run(std::move(result_job));
  if (auto* error = std::get_if<store::StoreError>(&result)) {
    co_return StoreErrorStatus(*error, ctx);
  }
  auto& page = std::get<store::QueryPage>(result);
  for (const auto& row : page.envelopes) {
    if (!ToWire(row, response.add_envelopes())) {
      co_return UndecodableEnvelopeStatus(ctx);
    }
  }
  response.mutable_continuation()->set_has_more(page.has_more);
  co_return response;
}

asio::awaitable<Result<v1::QueryNewestResponse>> QueryNewest(
    const ApiContext& ctx, const v1::QueryNewestRequest& request) {
  const uint64_t bound = request.include_full_envelope() ? ctx.limits.max_newest_full_topics
                                                         : ctx.limits.max_newest_metadata_topics;
  if (static_cast<uint64_t>(request.topics_size()) > bound) {
    co_return InvalidArgument("too many topics in one newest query");
  }
  std::vector<std::string> topics;
  std::unordered_map<std::string, bool> seen;
  for (const auto& t : request.topics()) {
    XB_RETURN_IF_ERROR_CO(validate::ValidateRequestTopic(t.topic()));
    if (seen.emplace(t.topic(), true).second) {
      topics.push_back(t.topic());
    }
  }
  v1::QueryNewestResponse response;
  if (topics.empty()) {
    co_return response;
  }
  const bool full = request.include_full_envelope();
  auto result_job = [store = ctx.store, topics = std::move(topics), full] {
    return store->Newest(topics, full);
  };
  auto result = co_await ctx.db->Run(std::move(result_job));
  if (auto* error = std::get_if<store::StoreError>(&result)) {
    co_return StoreErrorStatus(*error, ctx);
  }
  // implements: API-244 — one result per distinct topic that has a visible envelope.
  for (const auto& row : std::get<std::vector<store::StoredEnvelope>>(result)) {
    auto* r = response.add_results();
    r->mutable_topic()->set_topic(row.meta.topic);
    ToWire(row.meta, r->mutable_meta());
    if (full && !r->mutable_envelope()->ParseFromString(row.payload)) {
      co_return UndecodableEnvelopeStatus(ctx);
    }
  }
  co_return response;
}

asio::awaitable<Result<v1::ServerEnvelope>> Get(const ApiContext& ctx,
                                                const v1::GetRequest& request) {
  if (request.sequence_id() == 0 || request.sequence_id() > kMaxCursor) {
    co_return InvalidArgument("sequence_id must be in 1..9223372036854775807");
  }
  const auto id = static_cast<int64_t>(request.sequence_id());
  auto result_job = [store = ctx.store, id] { return store->Get(id); };
  auto result = co_await ctx.db->Run(std::move(result_job));
  if (auto* error = std::get_if<store::StoreError>(&result)) {
    co_return StoreErrorStatus(*error, ctx);
  }
  auto& row = std::get<std::optional<store::StoredEnvelope>>(result);
  if (!row) {
    co_return NotFound("no visible envelope has that id");
  }
  v1::ServerEnvelope envelope;
  if (!ToWire(*row, &envelope)) {
    co_return UndecodableEnvelopeStatus(ctx);
  }
  co_return envelope;
}

}  // namespace

void AddQueryService(rpc::Router& router, const ApiContext& context) {
  const uint64_t max_response = context.limits.max_response_bytes;
  router.Add("/xmtp.backend.v1.QueryService/Query", rpc::CallKind::kUnary,
             rpc::Unary<v1::QueryRequest, v1::QueryResponse>(
                 [&context](const v1::QueryRequest& request, rpc::Call&) {
                   return Query(context, request);
                 },
                 max_response));
  router.Add("/xmtp.backend.v1.QueryService/QueryNewest", rpc::CallKind::kUnary,
             rpc::Unary<v1::QueryNewestRequest, v1::QueryNewestResponse>(
                 [&context](const v1::QueryNewestRequest& request, rpc::Call&) {
                   return QueryNewest(context, request);
                 },
                 max_response));
  router.Add(
      "/xmtp.backend.v1.QueryService/Get", rpc::CallKind::kUnary,
      rpc::Unary<v1::GetRequest, v1::ServerEnvelope>(
          [&context](const v1::GetRequest& request, rpc::Call&) { return Get(context, request); },
          max_response));
}

}  // namespace xb::api
