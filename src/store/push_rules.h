// The push rules both engines share (PUSH.md 3.2, 11): the constant-time secret hash compare and
// the retention threshold. Pure and engine-neutral: the engines (store/sqlite/push.cc,
// store/postgres/push.cc) keep only their SQL.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "store/store.h"

namespace xb::store {

// implements: PUSH-253 (the stored secret hash is compared in constant time)
// True when `stored` is exactly the 32 bytes of `hash`; the time taken does not depend on where
// the bytes first differ.
inline bool SecretHashEquals(std::string_view stored, const Hash& hash) {
  if (stored.size() != hash.size()) {
    return false;
  }
  uint8_t diff = 0;
  for (size_t i = 0; i < hash.size(); ++i) {
    diff |= static_cast<uint8_t>(static_cast<uint8_t>(stored[i]) ^ hash[i]);
  }
  return diff == 0;
}

inline std::string_view HashView(const Hash& hash) {
  return std::string_view(reinterpret_cast<const char*>(hash.data()), hash.size());
}

// PUSH.md 11: recipients with renewed_ns < now_ns - ttl_seconds * 10^9 are expired. A TTL longer
// than the clock's whole range expires nothing (INT64_MIN: renewed_ns is never negative).
constexpr int64_t ExpiryThresholdNs(int64_t now_ns, uint64_t ttl_seconds) {
  constexpr int64_t kNanos = 1000000000;
  if (now_ns < 0 || ttl_seconds > static_cast<uint64_t>(now_ns / kNanos)) {
    return std::numeric_limits<int64_t>::min();
  }
  return now_ns - static_cast<int64_t>(ttl_seconds) * kNanos;
}

}  // namespace xb::store
