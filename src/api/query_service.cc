#include "api/query_service.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "api/encoded_response.h"
#include "api/envelope_codec.h"
#include "api/request_bounds.h"
#include "api/store_status.h"
#include "base/thread_priority.h"
#include "base/varint.h"
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

// A length-delimited field of `length` bytes with a one-byte tag, as it is on the wire.
size_t FieldBytes(size_t length) { return 1 + VarintSize(length) + length; }

// Writes a one-byte tag and `length`; the field's bytes follow. Returns where they go.
char* PutFieldHeader(char* at, uint8_t tag, uint64_t length) {
  *at++ = static_cast<char>(tag);
  return PutVarint(at, length);
}

char* PutBytes(char* at, std::string_view bytes) {
  if (!bytes.empty()) {
    std::memcpy(at, bytes.data(), bytes.size());
  }
  return at + bytes.size();
}

// Each row's ServerEnvelope head and its stored payload verbatim (API-211: already our canonical
// ClientEnvelope encoding), each row's payload freed once copied: the same bytes protobuf writes
// for the message.
EncodedRead EncodeQueryPage(store::QueryPage& page, uint64_t max_response_bytes) {
  EncodedRead out;
  std::vector<uint32_t> heads;
  heads.reserve(page.envelopes.size());
  char head[kMaxServerEnvelopeHead];
  uint64_t size = 0;
  for (const auto& row : page.envelopes) {
    const size_t h = WriteServerEnvelopeHead(store::StoredEnvelopeView::Of(row), head);
    if (h == 0) {
      out.invariant = true;
      return out;
    }
    heads.push_back(static_cast<uint32_t>(h));
    size += FieldBytes(h + row.payload.size());  // QueryResponse.envelopes = 1
  }
  // QueryResponse.continuation = 2, always set; Continuation.has_more = 1.
  const std::string_view continuation =
      page.has_more ? std::string_view("\x12\x02\x08\x01", 4) : std::string_view("\x12\x00", 2);
  size += continuation.size();
  if (page.over_budget || size > max_response_bytes) {
    out.over_budget = true;
    return out;
  }
  out.message.reserve(size);
  char field[16];
  for (auto& row : page.envelopes) {
    const size_t h = WriteServerEnvelopeHead(store::StoredEnvelopeView::Of(row), head);
    const char* field_end = PutFieldHeader(field, 0x0a, h + row.payload.size());  // envelopes = 1
    out.message.append(field, static_cast<size_t>(field_end - field));
    out.message.append(head, h);
    AppendInTurns(out.message, row.payload);
    std::string().swap(row.payload);
  }
  out.message.append(continuation);
  return out;
}

// Validates a Query's topics and cursors (API-241..243) into distinct store cursors.
Result<std::vector<store::TopicCursor>> QueryCursors(const ApiContext& ctx,
                                                     const v1::QueryRequest& request) {
  // API-242: the bound counts entries before repeated topics merge.
  if (static_cast<uint64_t>(request.queries_size()) > ctx.limits.max_query_topics) {
    return InvalidArgument("too many topics in one query");
  }
  std::vector<store::TopicCursor> topics;
  std::unordered_map<std::string, size_t> position;
  for (const auto& q : request.queries()) {
    XB_RETURN_IF_ERROR(validate::ValidateRequestTopic(q.topic().topic()));
    // implements: API-243
    if (validate::KindOf(q.topic().topic()) == validate::TopicKind::kKeyPackage) {
      return InvalidArgument("key package topics cannot be queried; use QueryNewest");
    }
    XB_RETURN_IF_ERROR(CheckCursor(q.cursor().sequence_id()));
    const auto cursor = static_cast<int64_t>(q.cursor().sequence_id());
    auto [it, inserted] = position.emplace(q.topic().topic(), topics.size());
    if (inserted) {
      topics.push_back(store::TopicCursor{q.topic().topic(), cursor});
    } else {
      // implements: API-242 — a repeated topic reads from its lowest cursor.
      topics[it->second].after = std::min(topics[it->second].after, cursor);
    }
  }
  return topics;
}

asio::awaitable<Status> Query(const ApiContext& ctx, const v1::QueryRequest& request,
                              rpc::Call& call) {
  auto cursors = QueryCursors(ctx, request);
  if (!cursors.ok()) {
    co_return cursors.status();
  }
  std::vector<store::TopicCursor> topics = std::move(cursors).value();
  // implements: API-241
  uint32_t limit = request.limit();
  if (limit == 0) {
    limit = ctx.limits.default_query_limit;
  } else if (limit > ctx.limits.max_query_limit) {
    limit = ctx.limits.max_query_limit;
  }
  EncodedRead encoded;
  if (!topics.empty()) {
    XB_RETURN_IF_ERROR_CO(co_await call.ReserveResponse(WorstResponseMemory(ctx.limits, limit)));
    // The store stops reading once the payloads alone pass the response budget; the page is
    // encoded on the same pool thread.
    auto result_job = [store = ctx.store, topics = std::move(topics), limit,
                       max_bytes =
                           ctx.limits.max_response_bytes]() -> store::StoreResult<EncodedRead> {
      auto read = store->Query(topics, limit, max_bytes);
      if (!read.ok()) {
        return std::move(read).error();
      }
      return EncodeQueryPage(read.value(), max_bytes);
    };
    // A call ended before the read starts (its client went away) does not read the store.
    auto result = co_await ctx.db->Run(std::move(result_job), call.ended_flag());
    if (!result.ok()) {
      co_return StoreErrorStatus(result.error(), ctx);
    }
    encoded = std::move(result).value();
  } else {
    encoded.message = std::string("\x12\x00", 2);  // the continuation alone
  }
  if (encoded.invariant) {
    co_return UndecodableEnvelopeStatus(ctx);
  }
  if (encoded.over_budget) {
    co_return OverResponseBudget();
  }
  co_return QueueEncoded(std::move(encoded.message), call);
}

// One QueryNewestResponse.Result without its envelope: topic (1) and meta (2), as protobuf writes
// them. The envelope (3), when wanted, is the stored payload verbatim and follows them.
std::string NewestResultHead(const store::StoredEnvelope& row) {
  v1::QueryNewestResponse::Result result;
  result.mutable_topic()->set_topic(row.meta.topic);
  ToWire(row.meta, result.mutable_meta());
  return result.SerializeAsString();
}

// implements: API-244 — one result per distinct topic that has a visible envelope. Encoded on
// the DB pool thread that read the rows, as a Query page is.
EncodedRead EncodeNewest(std::vector<store::StoredEnvelope>& rows, bool full,
                         uint64_t max_response_bytes) {
  EncodedRead out;
  std::vector<std::string> heads;
  heads.reserve(rows.size());
  uint64_t size = 0;
  for (const auto& row : rows) {
    heads.push_back(NewestResultHead(row));
    size += FieldBytes(heads.back().size() + (full ? FieldBytes(row.payload.size()) : 0));
  }
  if (size > max_response_bytes) {
    out.over_budget = true;
    return out;
  }
  out.message.resize(size);
  char* at = out.message.data();
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t envelope = full ? FieldBytes(rows[i].payload.size()) : 0;
    at = PutFieldHeader(at, 0x0a, heads[i].size() + envelope);  // results = 1
    at = PutBytes(at, heads[i]);
    if (full) {
      at = PutFieldHeader(at, 0x1a, rows[i].payload.size());  // Result.envelope = 3
      at = PutBytes(at, rows[i].payload);
      std::string().swap(rows[i].payload);
    }
  }
  return out;
}

asio::awaitable<Status> QueryNewest(const ApiContext& ctx, const v1::QueryNewestRequest& request,
                                    rpc::Call& call) {
  const bool full = request.include_full_envelope();
  const uint64_t bound =
      full ? ctx.limits.max_newest_full_topics : ctx.limits.max_newest_metadata_topics;
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
  if (topics.empty()) {
    co_return QueueEncoded(std::string(), call);
  }
  const uint64_t worst = full ? WorstResponseMemory(ctx.limits, topics.size())
                              : 2 * topics.size() * (kMaxServerEnvelopeHead + 16);
  XB_RETURN_IF_ERROR_CO(co_await call.ReserveResponse(worst));
  auto result_job = [store = ctx.store, topics = std::move(topics), full,
                     max_bytes =
                         ctx.limits.max_response_bytes]() -> store::StoreResult<EncodedRead> {
    auto read = store->Newest(topics, full);
    if (!read.ok()) {
      return std::move(read).error();
    }
    return EncodeNewest(read.value(), full, max_bytes);
  };
  co_return FinishEncodedRead(ctx, co_await ctx.db->Run(std::move(result_job), call.ended_flag()),
                              call);
}

asio::awaitable<Status> Get(const ApiContext& ctx, const v1::GetRequest& request, rpc::Call& call) {
  if (request.sequence_id() == 0 || request.sequence_id() > kMaxCursor) {
    co_return InvalidArgument("sequence_id must be in 1..9223372036854775807");
  }
  const auto id = static_cast<int64_t>(request.sequence_id());
  XB_RETURN_IF_ERROR_CO(co_await call.ReserveResponse(WorstResponseMemory(ctx.limits, 1)));
  auto result_job = [store = ctx.store, id] { return store->Get(id); };
  auto result = co_await ctx.db->Run(std::move(result_job), call.ended_flag());
  if (!result.ok()) {
    co_return StoreErrorStatus(result.error(), ctx);
  }
  auto& row = result.value();
  if (!row) {
    co_return NotFound("no visible envelope has that id");
  }
  // The response is one ServerEnvelope: its head, then the stored payload verbatim.
  char head[kMaxServerEnvelopeHead];
  const size_t h = WriteServerEnvelopeHead(store::StoredEnvelopeView::Of(*row), head);
  if (h == 0) {
    co_return UndecodableEnvelopeStatus(ctx);
  }
  const size_t size = h + row->payload.size();
  if (size > ctx.limits.max_response_bytes) {
    co_return OverResponseBudget();
  }
  Status queued = call.WriteNowInPlace(
      size, [&](char* at) { PutBytes(PutBytes(at, std::string_view(head, h)), row->payload); });
  call.TrimReservation(size + rpc::kFrameHeaderBytes);
  co_return queued;
}

}  // namespace

void AddQueryService(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.backend.v1.QueryService/Query", rpc::CallKind::kUnary,
             rpc::UnaryWritten<v1::QueryRequest>(
                 [&context](const v1::QueryRequest& request, rpc::Call& call) {
                   return Query(context, request, call);
                 },
                 AtMost(1, context.limits.max_query_topics, "too many topics in one query")));
  router.Add("/xmtp.backend.v1.QueryService/QueryNewest", rpc::CallKind::kUnary,
             rpc::UnaryWritten<v1::QueryNewestRequest>(
                 [&context](const v1::QueryNewestRequest& request, rpc::Call& call) {
                   return QueryNewest(context, request, call);
                 },
                 // The larger bound here; the one for the request's kind after the parse.
                 AtMost(1,
                        std::max(context.limits.max_newest_metadata_topics,
                                 context.limits.max_newest_full_topics),
                        "too many topics in one newest query")));
  router.Add(
      "/xmtp.backend.v1.QueryService/Get", rpc::CallKind::kUnary,
      rpc::UnaryWritten<v1::GetRequest>([&context](const v1::GetRequest& request, rpc::Call& call) {
        return Get(context, request, call);
      }));
}

}  // namespace xb::api
