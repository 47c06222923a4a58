#include "api/update_entries.h"

#include <string>
#include <unordered_set>

#include "api/static_stream.h"

namespace xb::api {

namespace {

fanout::Ending Invalid(Status status) {
  return fanout::Ending{std::move(status), telemetry::StreamEndReason::kInvalid};
}

}  // namespace

// implements: API-251 (topic checks), API.md 3.12 (max_update_adds, max_update_removes,
// max_stream_topics)
std::optional<fanout::Ending> CheckUpdateEntries(const ApiContext& ctx,
                                                 const fanout::StreamSession& session,
                                                 const UpdateEntries& entries,
                                                 TopicRule topic_rule) {
  const auto& limits = ctx.limits;
  if (entries.adds.size() > limits.max_update_adds) {
    return Invalid(InvalidArgument("too many adds in one update"));
  }
  if (entries.removes.size() > limits.max_update_removes) {
    return Invalid(InvalidArgument("too many removes in one update"));
  }
  std::unordered_set<std::string_view> seen;
  auto check = [&](std::string_view topic) -> Status {
    XB_RETURN_IF_ERROR(topic_rule(topic));
    if (!seen.insert(topic).second) {
      return InvalidArgument("a topic appears more than once in one update");
    }
    return Status::Ok();
  };
  size_t newly = 0;
  for (const auto& [topic, cursor] : entries.adds) {
    Status s = topic_rule(topic);
    if (s.ok()) {
      s = CheckStreamCursor(cursor);
    }
    if (s.ok() && !seen.insert(topic).second) {
      s = InvalidArgument("a topic appears more than once in one update");
    }
    if (!s.ok()) {
      return Invalid(std::move(s));
    }
    newly += session.IsRegistered(std::string(topic)) ? 0 : 1;
  }
  size_t leaving = 0;
  for (std::string_view topic : entries.removes) {
    if (Status s = check(topic); !s.ok()) {
      return Invalid(std::move(s));
    }
    leaving += session.IsRegistered(std::string(topic)) ? 1 : 0;
  }
  if (session.registered() + newly - leaving > limits.max_stream_topics) {
    return Invalid(InvalidArgument("too many topics registered on one stream"));
  }
  return std::nullopt;
}

}  // namespace xb::api
