#include "api/v3/identity_api.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "api/encoded_response.h"
#include "api/identity_service.h"
#include "api/publish_service.h"
#include "api/request_bounds.h"
#include "api/v3/publish_wrap.h"
#include "api/v3/rows.h"
#include "api/v3/v3_paging.h"
#include "api/v3/wire.h"
#include "identity/api/v1/identity.pb.h"
#include "rpc/unary.h"
#include "validate/inbox_id.h"
#include "validate/topic.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;
namespace idv1 = xmtp::identity::api::v1;

namespace {

// 3.12: the request's fields are v1's (1 identifier, 2 kind); the response's kind and inbox id
// are numbered the other way round (2 inbox_id, 3 kind).
asio::awaitable<Result<idv1::GetInboxIdsResponse>> GetInboxIds(
    const ApiContext& ctx, const idv1::GetInboxIdsRequest& request) {
  v1::GetInboxIdsRequest lookup;
  for (const auto& r : request.requests()) {
    auto* out = lookup.add_requests();
    out->set_identifier(r.identifier());
    out->set_identifier_kind(r.identifier_kind());
  }
  XB_TRY_CO(v1::GetInboxIdsResponse found, co_await LookupInboxIds(ctx, lookup));
  idv1::GetInboxIdsResponse response;
  for (const auto& f : found.responses()) {
    auto* out = response.add_responses();
    out->set_identifier(f.identifier());
    out->set_identifier_kind(f.identifier_kind());
    if (f.has_inbox_id()) {
      out->set_inbox_id(f.inbox_id());
    }
  }
  co_return response;
}

// 3.13: a signature entry numbers hash 4 and signature 3 (v1: 3 and 4); the answers match v1's.
asio::awaitable<Result<idv1::VerifySmartContractWalletSignaturesResponse>> VerifyScw(
    const ApiContext& ctx, const idv1::VerifySmartContractWalletSignaturesRequest& request,
    telemetry::SpanContext parent) {
  v1::VerifySmartContractWalletSignaturesRequest checks;
  for (const auto& s : request.signatures()) {
    auto* out = checks.add_signatures();
    out->set_account_id(s.account_id());
    if (s.has_block_number()) {
      out->set_block_number(s.block_number());
    }
    out->set_hash(s.hash());
    out->set_signature(s.signature());
  }
  XB_TRY_CO(v1::VerifySmartContractWalletSignaturesResponse verdicts,
            co_await VerifySmartContractWallets(ctx, checks, parent));
  idv1::VerifySmartContractWalletSignaturesResponse response;
  for (const auto& v : verdicts.responses()) {
    auto* out = response.add_responses();
    out->set_is_valid(v.is_valid());
    if (v.has_block_number()) {
      out->set_block_number(v.block_number());
    }
    if (v.has_error()) {
      out->set_error(v.error());
    }
  }
  co_return response;
}

// 3.10: the IdentityUpdate (field 1) is published as one identity-update envelope.
asio::awaitable<Result<idv1::PublishIdentityUpdateResponse>> PublishIdentityUpdate(
    const ApiContext& ctx, std::string request, PublishOrigin origin) {
  const std::optional<std::string_view> update = LastMessageField(request, 1);
  if (!update) {
    co_return InvalidArgument("request is malformed");
  }
  std::string wrapped = OneEnvelopeRequest(kEnvelopeIdentityUpdate, *update);
  XB_TRY_CO(auto published, co_await PublishEncoded(ctx, std::move(wrapped), std::move(origin)));
  (void)published;
  co_return idv1::PublishIdentityUpdateResponse();
}

// One GetIdentityUpdates entry: the inbox id as sent (echoed), its topic, and its cursor.
struct InboxRead {
  std::string inbox_id;
  std::string topic;
  int64_t after = 0;
};

Result<std::vector<InboxRead>> InboxReadsOf(const idv1::GetIdentityUpdatesRequest& request) {
  std::vector<InboxRead> reads;
  for (const auto& r : request.requests()) {
    const std::optional<std::string> inbox = validate::DecodeInboxId(r.inbox_id());
    if (!inbox) {
      return InvalidArgument("inbox id is not 64 hexadecimal characters");
    }
    if (r.sequence_id() > static_cast<uint64_t>(INT64_MAX)) {
      return InvalidArgument("sequence_id is above 9223372036854775807");
    }
    reads.push_back(InboxRead{r.inbox_id(),
                              validate::MakeTopic(validate::TopicKind::kIdentityUpdate, *inbox),
                              static_cast<int64_t>(r.sequence_id())});
  }
  return reads;
}

// Each distinct inbox's log read once, whole (at most max_identity_entries rows, API-234); each
// entry answered from its own cursor, in request order.
store::StoreResult<EncodedRead> ReadIdentityLogs(store::Store& store,
                                                 const std::vector<InboxRead>& reads,
                                                 uint64_t max_bytes) {
  std::unordered_map<std::string, std::vector<store::StoredEnvelope>> logs;
  for (const InboxRead& read : reads) {
    if (logs.contains(read.topic)) {
      continue;
    }
    auto history = store.History(read.topic);
    if (!history.ok()) {
      return std::move(history).error();
    }
    logs.emplace(read.topic, std::move(history).value());
  }
  EncodedRead encoded;
  std::string response;
  for (const InboxRead& read : reads) {
    response.clear();
    AppendLengthField(response, 1, read.inbox_id);
    for (const store::StoredEnvelope& row : logs[read.topic]) {
      if (row.meta.sequence_id > read.after &&
          !AppendIdentityUpdateLog(response, 2, store::StoredEnvelopeView::Of(row))) {
        encoded.invariant = true;
        return encoded;
      }
    }
    if (!AppendEntry(encoded, response, max_bytes)) {
      return encoded;
    }
  }
  return encoded;
}

// implements: issue 33 (docs/v3-api.md 3.11) — every row above each entry's cursor, unpaged, read
// on the primary (a client re-reads its identity right after publishing it).
asio::awaitable<Status> GetIdentityUpdates(const ApiContext& ctx,
                                           const idv1::GetIdentityUpdatesRequest& request,
                                           rpc::Call& call) {
  XB_TRY_CO(std::vector<InboxRead> reads, InboxReadsOf(request));
  XB_RETURN_IF_ERROR_CO(co_await call.ReserveResponse(
      WorstResponseMemory(ctx.limits, uint64_t{reads.size()} * ctx.limits.max_identity_entries)));
  auto job = [store = ctx.store, reads = std::move(reads),
              max_bytes = ctx.limits.max_response_bytes]() {
    return ReadIdentityLogs(*store, reads, max_bytes);
  };
  co_return FinishEncodedRead(ctx, co_await ctx.db->Run(std::move(job), call.ended_flag()), call);
}

}  // namespace

// implements: API-270, API-271 for the V3 IdentityApi (issue 33)
void AddIdentityApi(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate", rpc::CallKind::kUnary,
             rpc::UnaryBytes<idv1::PublishIdentityUpdateResponse>(
                 [&context](std::string request, rpc::Call& call) {
                   return PublishIdentityUpdate(context, std::move(request),
                                                OriginOf(context, call));
                 },
                 context.limits.max_response_bytes));
  router.Add("/xmtp.identity.api.v1.IdentityApi/GetIdentityUpdates", rpc::CallKind::kUnary,
             rpc::UnaryWritten<idv1::GetIdentityUpdatesRequest>(
                 [&context](const idv1::GetIdentityUpdatesRequest& request, rpc::Call& call) {
                   return GetIdentityUpdates(context, request, call);
                 },
                 AtMost(1, context.limits.max_query_topics, "too many inboxes in one request")));
  router.Add(
      "/xmtp.identity.api.v1.IdentityApi/GetInboxIds", rpc::CallKind::kUnary,
      rpc::Unary<idv1::GetInboxIdsRequest, idv1::GetInboxIdsResponse>(
          [&context](const idv1::GetInboxIdsRequest& request, rpc::Call&) {
            return GetInboxIds(context, request);
          },
          context.limits.max_response_bytes,
          AtMost(1, context.limits.max_lookup_identifiers, "too many identifiers in one lookup")));
  router.Add(
      "/xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures",
      rpc::CallKind::kUnary,
      rpc::Unary<idv1::VerifySmartContractWalletSignaturesRequest,
                 idv1::VerifySmartContractWalletSignaturesResponse>(
          [&context](const idv1::VerifySmartContractWalletSignaturesRequest& request,
                     rpc::Call& call) { return VerifyScw(context, request, call.trace_parent()); },
          context.limits.max_response_bytes,
          AtMost(1, context.limits.max_scw_signatures, "too many signatures in one verification")));
}

}  // namespace xb::api::v3
