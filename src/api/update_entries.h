// The topic checks one Subscribe Update (API.md 3.8, 3.12) and one XIP-83 Mutate
// (docs/v3-api.md 4.3) share: the counts within their bounds before anything merges, each topic
// valid by the protocol's rule and named once (adds and removes together), each cursor in range,
// and at most limits.max_stream_topics registered afterwards. Each failure ends the stream
// INVALID_ARGUMENT with nothing applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "api/context.h"
#include "base/status.h"
#include "fanout/registry.h"
#include "fanout/stream_session.h"

namespace xb::api {

struct UpdateEntries {
  std::vector<std::pair<std::string_view, uint64_t>> adds;  // topic, exclusive cursor
  std::vector<std::string_view> removes;
};

using TopicRule = Status (*)(std::string_view topic);

std::optional<fanout::Ending> CheckUpdateEntries(const ApiContext& ctx,
                                                 const fanout::StreamSession& session,
                                                 const UpdateEntries& entries,
                                                 TopicRule topic_rule);

}  // namespace xb::api
