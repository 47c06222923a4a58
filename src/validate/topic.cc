#include "validate/topic.h"

#include "base/check.h"

namespace xb::validate {
namespace {

bool IsKnownKind(uint8_t byte) { return byte <= static_cast<uint8_t>(TopicKind::kCommitLog); }

}  // namespace

size_t IdentifierLength(TopicKind kind) {
  switch (kind) {
    case TopicKind::kGroupMessage:
    case TopicKind::kCommitLog:
      return kGroupIdBytes;
    case TopicKind::kWelcome:
    case TopicKind::kKeyPackage:
      return kInstallationKeyBytes;
    case TopicKind::kIdentityUpdate:
      return kInboxIdBytes;
  }
  XB_CHECK(false && "unknown TopicKind");
  return 0;
}

// implements: TOPIC-003
Status ValidateRequestTopic(std::string_view topic) {
  // Messages are fixed texts: a request topic is client data and never goes into a status.
  if (topic.empty()) {
    return InvalidArgument("topic is empty");
  }
  const auto kind_byte = static_cast<uint8_t>(topic.front());
  if (!IsKnownKind(kind_byte)) {
    return InvalidArgument("topic kind is unknown");
  }
  if (topic.size() - 1 != IdentifierLength(static_cast<TopicKind>(kind_byte))) {
    return InvalidArgument("topic identifier has the wrong length for its kind");
  }
  return Status::Ok();
}

TopicKind KindOf(std::string_view valid_topic) {
  XB_CHECK(!valid_topic.empty());
  const auto kind_byte = static_cast<uint8_t>(valid_topic.front());
  XB_CHECK(IsKnownKind(kind_byte));
  return static_cast<TopicKind>(kind_byte);
}

std::string_view IdentifierOf(std::string_view valid_topic) {
  XB_CHECK(!valid_topic.empty());
  return valid_topic.substr(1);
}

// implements: TOPIC-001
std::string MakeTopic(TopicKind kind, std::string_view identifier) {
  XB_CHECK(identifier.size() == IdentifierLength(kind));
  std::string topic;
  topic.reserve(1 + identifier.size());
  topic.push_back(static_cast<char>(kind));
  topic.append(identifier);
  return topic;
}

}  // namespace xb::validate
