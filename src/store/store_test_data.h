// Test data for store tests (the conformance suite and each engine's own tests): topics of every
// kind, a stand-in hash, publish items and requests. Test-only; header-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/store.h"

namespace xb::store::test_data {

// A TOPIC-001 topic: the kind byte, then an identifier of `id_len` bytes that depends on `n`.
inline std::string Topic(uint8_t kind, size_t id_len, uint8_t n) {
  std::string topic(1 + id_len, '\0');
  topic[0] = static_cast<char>(kind);
  for (size_t i = 1; i < topic.size(); ++i) {
    topic[i] = static_cast<char>(n * 7 + i);
  }
  return topic;
}
inline std::string GroupTopic(uint8_t n) { return Topic(0x00, 16, n); }
inline std::string WelcomeTopic(uint8_t n) { return Topic(0x01, 32, n); }
inline std::string IdentityTopic(uint8_t n) { return Topic(0x02, 32, n); }
inline std::string KeyPackageTopic(uint8_t n) { return Topic(0x03, 32, n); }
inline std::string CommitLogTopic(uint8_t n) { return Topic(0x04, 16, n); }

// A stand-in for SHA-256 (the store never recomputes hashes): distinct inputs, distinct hashes.
inline Hash HashOf(std::string_view bytes) {
  Hash hash{};
  for (size_t lane = 0; lane < 4; ++lane) {
    uint64_t h = 14695981039346656037ULL ^ (lane * 0x9e3779b97f4a7c15ULL);
    for (char c : bytes) {
      h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
    }
    for (size_t b = 0; b < 8; ++b) {
      hash[lane * 8 + b] = static_cast<uint8_t>(h >> (8 * b));
    }
  }
  return hash;
}

inline PublishItem Item(const std::string& topic, const std::string& payload,
                        RetentionClass retention = RetentionClass::kGroupMessage) {
  PublishItem item;
  item.topic = topic;
  item.payload = payload;
  item.message_hash = HashOf(payload);
  item.retention = retention;
  return item;
}

// An identity update validated against identity-topic head `head` (API-232).
inline PublishItem IdentityItem(const std::string& topic, const std::string& payload,
                                int64_t head) {
  PublishItem item = Item(topic, payload, RetentionClass::kExempt);
  item.identity_validated_head = head;
  return item;
}

inline CommitPublishRequest Request(std::vector<PublishItem> items,
                                    std::chrono::milliseconds budget = std::chrono::seconds(30)) {
  CommitPublishRequest request;
  request.items = std::move(items);
  request.deadline = Clock::now() + budget;
  return request;
}

}  // namespace xb::store::test_data
