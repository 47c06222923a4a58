// Topics (API.md 3.1): one kind byte followed by the identifier the payload routes to. This file
// knows the kind table and the identifier lengths; it never looks inside a payload (envelope.h
// does that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::validate {

// The kind byte. Values are wire-visible and never reassigned (TOPIC-001).
enum class TopicKind : uint8_t {
  kGroupMessage = 0,
  kWelcome = 1,
  kIdentityUpdate = 2,
  kKeyPackage = 3,
  kCommitLog = 4,
};

inline constexpr size_t kGroupIdBytes = 16;
inline constexpr size_t kInstallationKeyBytes = 32;
inline constexpr size_t kInboxIdBytes = 32;

// Identifier length for `kind`: 16 (group message, commit log) or 32 (welcome, identity update,
// key package). `kind` must be one of the enumerators.
size_t IdentifierLength(TopicKind kind);

// TOPIC-003: OK when `topic` is a known kind byte followed by an identifier of that kind's length;
// otherwise INVALID_ARGUMENT with a plain message that never quotes the topic bytes (empty topic,
// unknown kind, wrong identifier length).
Status ValidateRequestTopic(std::string_view topic);

// The kind of a topic that passed ValidateRequestTopic (checked: aborts on an empty topic or an
// unknown kind byte).
TopicKind KindOf(std::string_view valid_topic);

// The identifier part of a topic that passed ValidateRequestTopic.
std::string_view IdentifierOf(std::string_view valid_topic);

// TOPIC-001: kind byte followed by `identifier`. Precondition (checked): `identifier` has
// IdentifierLength(kind) bytes; the caller refuses other lengths first (TOPIC-002).
std::string MakeTopic(TopicKind kind, std::string_view identifier);

}  // namespace xb::validate
