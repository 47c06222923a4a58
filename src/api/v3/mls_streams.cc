#include "api/v3/mls_streams.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/request_bounds.h"
#include "api/static_stream.h"
#include "api/v3/stream_rows.h"
#include "mls/api/v1/mls.pb.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace mls = xmtp::mls::api::v1;

namespace {

constexpr uint32_t kFilters = 1;  // Subscribe{Group,Welcome}MessagesRequest.filters

// One kind of V3 stream: its topic prefix and identifier length.
struct FilterKind {
  char prefix;
  size_t id_bytes;
  std::string_view wrong_length;  // the INVALID_ARGUMENT message for an id of another length
};

constexpr FilterKind kGroupFilters{0x00, 16, "a group_id is not 16 bytes"};
constexpr FilterKind kWelcomeFilters{0x01, 32, "an installation_key is not 32 bytes"};

// The registrations of a request's filters, in request order: one per distinct topic, from the
// lowest cursor that names it (as API-242 merges). `filters` holds (id, id_cursor) pairs.
Result<std::vector<store::TopicCursor>> Registrations(
    const FilterKind& kind, const std::vector<std::pair<std::string_view, uint64_t>>& filters) {
  std::vector<store::TopicCursor> adds;
  adds.reserve(filters.size());
  std::unordered_map<std::string, size_t> index;
  for (const auto& [id, cursor] : filters) {
    if (id.size() != kind.id_bytes) {
      return InvalidArgument(std::string(kind.wrong_length));
    }
    XB_RETURN_IF_ERROR(CheckStreamCursor(cursor));
    std::string topic(1, kind.prefix);
    topic.append(id);
    const auto after = static_cast<int64_t>(cursor);
    auto [it, inserted] = index.try_emplace(topic, adds.size());
    if (inserted) {
      adds.push_back(store::TopicCursor{std::move(topic), after});
    } else {
      adds[it->second].after = std::min(adds[it->second].after, after);
    }
  }
  return adds;
}

// Parses a V3 subscribe request (counted before it is parsed, as SubscribeStatic is) into its
// filters' (id, id_cursor) pairs and their registrations.
template <typename Request, typename Id>
Result<std::vector<store::TopicCursor>> FilterTopics(const ApiContext& ctx,
                                                     const std::string& message,
                                                     const FilterKind& kind, Id id) {
  XB_RETURN_IF_ERROR(CheckAtMost(message, kFilters, ctx.limits.max_static_topics,
                                 "too many filters for one stream"));
  Request request;
  if (!request.ParseFromString(message)) {
    return InvalidArgument("request is malformed");
  }
  std::vector<std::pair<std::string_view, uint64_t>> filters;
  filters.reserve(static_cast<size_t>(request.filters_size()));
  for (const auto& filter : request.filters()) {
    filters.emplace_back(id(filter), filter.id_cursor());
  }
  return Registrations(kind, filters);
}

// implements: docs/v3-api.md G3 (one response message per row, the V3 encoding), G4 (headers at
// admission: no Started), G5 (no keepalive message)
StaticStreamProtocol V3Protocol() {
  StaticStreamProtocol protocol;
  protocol.wire = fanout::StreamWire::RowPerMessage(EncodeStreamRow, TranscodeStreamRow);
  return protocol;
}

// implements: issue 33 (docs/v3-api.md 4.1)
asio::awaitable<void> SubscribeGroupMessages(const ApiContext& ctx,
                                             std::shared_ptr<rpc::Call> call) {
  co_await ServeStaticStream(ctx, call, V3Protocol(), [&ctx](const std::string& message) {
    // Q2: zero filters are accepted; the stream stays open and silent.
    return FilterTopics<mls::SubscribeGroupMessagesRequest>(
        ctx, message, kGroupFilters,
        [](const auto& filter) -> std::string_view { return filter.group_id(); });
  });
}

// implements: issue 33 (docs/v3-api.md 4.2)
asio::awaitable<void> SubscribeWelcomeMessages(const ApiContext& ctx,
                                               std::shared_ptr<rpc::Call> call) {
  co_await ServeStaticStream(
      ctx, call, V3Protocol(),
      [&ctx](const std::string& message) -> Result<std::vector<store::TopicCursor>> {
        XB_TRY(auto adds,
               FilterTopics<mls::SubscribeWelcomeMessagesRequest>(
                   ctx, message, kWelcomeFilters, [](const auto& filter) -> std::string_view {
                     return filter.installation_key();
                   }));
        if (adds.empty()) {
          return InvalidArgument("no valid filters provided");  // as node-go
        }
        return adds;
      });
}

}  // namespace

void AddMlsStreams(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages", rpc::CallKind::kServerStream,
             [&context](std::shared_ptr<rpc::Call> call) {
               return SubscribeGroupMessages(context, call);
             });
  router.Add("/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages", rpc::CallKind::kServerStream,
             [&context](std::shared_ptr<rpc::Call> call) {
               return SubscribeWelcomeMessages(context, call);
             });
}

}  // namespace xb::api::v3
