#include "api/quota_buckets.h"

#include <functional>

#include "base/check.h"

namespace xb::api {

// implements: issue 32 (quotas)
QuotaBuckets::QuotaBuckets(QuotaRate rate, size_t max_buckets)
    : rate_(rate), shard_capacity_(max_buckets / kShards) {
  XB_CHECK(rate.per_second > 0 && rate.burst >= 1 && shard_capacity_ >= 1);
}

QuotaBuckets::Shard& QuotaBuckets::ShardOf(std::string_view key) {
  return shards_[std::hash<std::string_view>{}(key) % kShards];
}

TokenBucket& QuotaBuckets::Touch(Shard& shard, std::string_view key, Clock::time_point now) {
  if (auto it = shard.index.find(key); it != shard.index.end()) {
    shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
    return it->second->bucket;
  }
  // Bounded: a full shard gives up its least recently used bucket before it takes a new one.
  if (shard.lru.size() >= shard_capacity_) {
    shard.index.erase(shard.lru.back().key);
    shard.lru.pop_back();
  }
  shard.lru.push_front(Entry{std::string(key), TokenBucket(rate_.per_second, rate_.burst, now)});
  shard.index.emplace(shard.lru.front().key, shard.lru.begin());
  return shard.lru.front().bucket;
}

void QuotaBuckets::DropIdle(Shard& shard, Clock::time_point now) {
  // Two per take: idle buckets leave faster than takes make new ones, without a sweep thread.
  for (int i = 0; i < 2 && shard.lru.size() > 1 && shard.lru.back().bucket.Full(now); ++i) {
    shard.index.erase(shard.lru.back().key);
    shard.lru.pop_back();
  }
}

Expected<void, QuotaBuckets::Clock::duration> QuotaBuckets::Take(std::string_view key,
                                                                 double tokens,
                                                                 Clock::time_point now) {
  Shard& shard = ShardOf(key);
  std::lock_guard lock(shard.mu);
  TokenBucket& bucket = Touch(shard, key, now);
  if (!bucket.Take(tokens, now)) {
    return bucket.WaitFor(tokens, now);
  }
  DropIdle(shard, now);
  return {};
}

void QuotaBuckets::Refund(std::string_view key, double tokens) {
  Shard& shard = ShardOf(key);
  std::lock_guard lock(shard.mu);
  if (auto it = shard.index.find(key); it != shard.index.end()) {
    it->second->bucket.Credit(tokens);
  }
}

size_t QuotaBuckets::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    total += shard.lru.size();
  }
  return total;
}

}  // namespace xb::api
