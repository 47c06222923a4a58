// The publish rules both engines share (STORE.md 2.2, 3.1, 9.1; OPS-020): what an identity topic
// looks like, the retention period of a row's class, and the checked expiry arithmetic. Pure,
// constexpr, engine-neutral: the engines (store/sqlite/publish.cc, store/postgres/publish_*.cc)
// keep only their SQL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "store/store.h"

namespace xb::store {

inline constexpr int64_t kNanosPerSecond = 1000000000;

// TOPIC-001: an identity topic is the kind byte 0x02 and a 32-byte inbox id.
inline constexpr uint8_t kIdentityTopicKind = 0x02;
inline constexpr size_t kInboxIdBytes = 32;
inline constexpr size_t kIdentityTopicLength = 1 + kInboxIdBytes;

// The topic's kind byte says identity (whatever its length).
constexpr bool HasIdentityKind(std::string_view topic) {
  return !topic.empty() && static_cast<uint8_t>(topic[0]) == kIdentityTopicKind;
}

// A well-formed identity topic: the kind byte and exactly one inbox id. Identity changes are
// projected only for these (STORE.md 2.2).
constexpr bool IsInboxTopic(std::string_view topic) {
  return topic.size() == kIdentityTopicLength && HasIdentityKind(topic);
}

// STORE.md 9.1: the configured period of `retention`'s class; nullopt for kExempt (stored NULL,
// 0 on the wire, whatever is configured: OPS-001).
constexpr std::optional<uint64_t> RetentionPeriod(RetentionClass retention,
                                                  const RetentionSeconds& seconds) {
  switch (retention) {
    case RetentionClass::kGroupMessage:
      return seconds.group_message;
    case RetentionClass::kWelcome:
      return seconds.welcome;
    case RetentionClass::kKeyPackage:
      return seconds.key_package;
    case RetentionClass::kExempt:
      return std::nullopt;
  }
  return std::nullopt;
}

// implements: OPS-020 (expiry arithmetic is checked at publish time)
// server_ns + seconds x 10^9, or nullopt when the period or the sum does not fit a signed 64-bit
// nanosecond count.
constexpr std::optional<int64_t> CheckedExpiryNs(int64_t server_ns, uint64_t seconds) {
  if (seconds > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / kNanosPerSecond)) {
    return std::nullopt;
  }
  int64_t expiry = 0;
  if (__builtin_add_overflow(server_ns, static_cast<int64_t>(seconds) * kNanosPerSecond, &expiry)) {
    return std::nullopt;
  }
  return expiry;
}

}  // namespace xb::store
