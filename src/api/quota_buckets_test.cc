#include "api/quota_buckets.h"

#include <gtest/gtest.h>

#include <string>

namespace xb::api {
namespace {

using std::chrono::milliseconds;
using Clock = QuotaBuckets::Clock;

// verifies: issue 32 (quotas) — a new key starts with its burst, then refills at the rate
TEST(QuotaBucketsTest, BurstThenRefillAtTheRate) {
  QuotaBuckets buckets(QuotaRate{.per_second = 10, .burst = 3}, 1024);
  const auto t0 = Clock::now();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(buckets.Take("alice", 1, t0).ok()) << i;
  }
  auto refused = buckets.Take("alice", 1, t0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), milliseconds(100));  // one token at 10 per second
  EXPECT_FALSE(buckets.Take("alice", 1, t0 + milliseconds(99)).ok());
  EXPECT_TRUE(buckets.Take("alice", 1, t0 + milliseconds(100)).ok());
  // Another key has a bucket of its own.
  EXPECT_TRUE(buckets.Take("bob", 3, t0).ok());
}

// verifies: issue 32 (quotas) — the retry delay is the time until the bucket holds the tokens
TEST(QuotaBucketsTest, RetryDelayIsTheTimeUntilTheTokensAreThere) {
  QuotaBuckets buckets(QuotaRate{.per_second = 2, .burst = 4}, 1024);
  const auto t0 = Clock::now();
  ASSERT_TRUE(buckets.Take("k", 4, t0).ok());
  auto refused = buckets.Take("k", 3, t0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), milliseconds(1500));
  // Waiting exactly the delay is enough; nothing was taken by the refusal.
  EXPECT_TRUE(buckets.Take("k", 3, t0 + refused.error()).ok());
}

// verifies: issue 32 (quotas) — a take above the burst needs a full bucket and leaves a debt, so
// the long-run rate holds however envelopes are grouped into requests
TEST(QuotaBucketsTest, TakeAboveTheBurstLeavesADebt) {
  QuotaBuckets buckets(QuotaRate{.per_second = 1, .burst = 5}, 1024);
  const auto t0 = Clock::now();
  ASSERT_TRUE(buckets.Take("k", 8, t0).ok());  // full: 5 there, 3 owed
  auto refused = buckets.Take("k", 1, t0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), std::chrono::seconds(4));  // repay 3, then one more
  EXPECT_TRUE(buckets.Take("k", 1, t0 + std::chrono::seconds(4)).ok());
}

// verifies: issue 32 (quotas) — refunded tokens are back, never above the burst
TEST(QuotaBucketsTest, RefundGivesTokensBack) {
  QuotaBuckets buckets(QuotaRate{.per_second = 1, .burst = 2}, 1024);
  const auto t0 = Clock::now();
  ASSERT_TRUE(buckets.Take("k", 2, t0).ok());
  buckets.Refund("k", 2);
  buckets.Refund("absent", 2);  // no bucket made
  EXPECT_TRUE(buckets.Take("k", 2, t0).ok());
  EXPECT_FALSE(buckets.Take("k", 1, t0).ok());
}

// verifies: issue 32 (quotas) — memory stays bounded under many keys (an attacker with many
// addresses): at most max_buckets are held, the least recently used go first
TEST(QuotaBucketsTest, ManyKeysStayWithinTheBound) {
  constexpr size_t kMax = 256;
  QuotaBuckets buckets(QuotaRate{.per_second = 1, .burst = 1}, kMax);
  const auto t0 = Clock::now();
  for (int i = 0; i < 100000; ++i) {
    // Each key's only token is taken: none of these buckets is idle (full).
    ASSERT_TRUE(buckets.Take("addr" + std::to_string(i), 1, t0).ok());
    ASSERT_LE(buckets.size(), kMax);
  }
  EXPECT_GE(buckets.size(), kMax / 2);  // shards fill unevenly, but they do fill
}

// verifies: issue 32 (quotas) — a recently used key survives the eviction of idle strangers
TEST(QuotaBucketsTest, EvictionTakesTheLeastRecentlyUsed) {
  constexpr size_t kMax = QuotaBuckets::kShards * 4;
  QuotaBuckets buckets(QuotaRate{.per_second = 0.001, .burst = 1}, kMax);
  const auto t0 = Clock::now();
  ASSERT_TRUE(buckets.Take("victim", 1, t0).ok());
  for (int i = 0; i < 10000; ++i) {
    // The victim is touched between strangers, so it is never its shard's least recent.
    ASSERT_FALSE(buckets.Take("victim", 1, t0).ok()) << i;
    ASSERT_TRUE(buckets.Take("stranger" + std::to_string(i), 1, t0).ok());
  }
}

// verifies: issue 32 (quotas) — buckets that refilled to full are dropped as idle
TEST(QuotaBucketsTest, IdleBucketsAreDropped) {
  QuotaBuckets buckets(QuotaRate{.per_second = 100, .burst = 1}, 4096);
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(buckets.Take("old" + std::to_string(i), 1, t0).ok());
  }
  EXPECT_EQ(buckets.size(), 1000u);
  // A second later every old bucket is full again; new traffic drops them as it goes.
  const auto later = t0 + std::chrono::seconds(1);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(buckets.Take("new" + std::to_string(i), 1, later).ok());
  }
  EXPECT_LT(buckets.size(), 1100u);
}

}  // namespace
}  // namespace xb::api
