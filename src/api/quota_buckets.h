// QuotaBuckets: one token bucket per caller key (a principal or a client address), in a map whose
// size is bounded whatever the callers do (issue 32, per-caller quotas; docs/configuration.md,
// Per-caller quotas).
//
// A key's bucket is made full on its first take. A bucket that has refilled to full is no
// different from a new one, so it may be dropped at any time: each take drops the shard's least
// recently used buckets that are full. When a shard still holds its share of `max_buckets`, a new
// key evicts the least recently used bucket, full or not (an evicted caller gets a full bucket
// back: memory is bounded at the price of a little leniency towards callers nobody saw lately).
//
// Threading: Take may be called from every worker thread at once; it never suspends and holds one
// of kShards mutexes for a hash lookup and a list splice.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/expected.h"
#include "base/token_bucket.h"

namespace xb::api {

struct QuotaRate {
  double per_second = 0;  // 0: off
  double burst = 0;       // at least 1 when per_second is set
};

class QuotaBuckets {
 public:
  using Clock = TokenBucket::Clock;
  static constexpr size_t kShards = 16;

  // Precondition: rate.per_second > 0, rate.burst >= 1, max_buckets >= kShards.
  QuotaBuckets(QuotaRate rate, size_t max_buckets);
  QuotaBuckets(const QuotaBuckets&) = delete;
  QuotaBuckets& operator=(const QuotaBuckets&) = delete;

  // Takes `tokens` from `key`'s bucket (TokenBucket::Take: min(tokens, burst) must be there). On
  // refusal nothing is taken and the error is how long until the take would succeed.
  Expected<void, Clock::duration> Take(std::string_view key, double tokens, Clock::time_point now);

  // Gives back `tokens` taken from `key`'s bucket (a call refused by another quota after this one
  // took); nothing when the bucket is gone meanwhile.
  void Refund(std::string_view key, double tokens);

  // Buckets held, over every shard (takes every shard's mutex in turn; for tests and metrics).
  size_t size() const;

 private:
  struct Entry {
    std::string key;
    TokenBucket bucket;
  };
  using Lru = std::list<Entry>;  // most recently used first
  struct Shard {
    mutable std::mutex mu;
    Lru lru;                                                    // guarded by mu
    std::unordered_map<std::string_view, Lru::iterator> index;  // keys view lru's; guarded by mu
  };

  Shard& ShardOf(std::string_view key);
  // The shard's bucket for `key`, made (evicting if need be) when absent, moved to the front.
  TokenBucket& Touch(Shard& shard, std::string_view key, Clock::time_point now);
  // Drops up to two full buckets from the least recently used end.
  void DropIdle(Shard& shard, Clock::time_point now);

  // Const after construction.
  const QuotaRate rate_;
  const size_t shard_capacity_;
  std::array<Shard, kShards> shards_;
};

}  // namespace xb::api
