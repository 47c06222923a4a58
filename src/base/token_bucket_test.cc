#include "base/token_bucket.h"

#include <gtest/gtest.h>

namespace xb {
namespace {

using std::chrono::milliseconds;

// verifies: API-258 (bucket starts full with `burst` tokens, refills at `rate` per second)
TEST(TokenBucketTest, StartsFullThenRefillsAtTheRate) {
  const auto t0 = TokenBucket::Clock::now();
  TokenBucket bucket(10, 3, t0);
  EXPECT_TRUE(bucket.Take(t0));
  EXPECT_TRUE(bucket.Take(t0));
  EXPECT_TRUE(bucket.Take(t0));
  EXPECT_FALSE(bucket.Take(t0));
  EXPECT_FALSE(bucket.Take(t0 + milliseconds(50)));  // half a token
  EXPECT_TRUE(bucket.Take(t0 + milliseconds(100)));  // one token after 100 ms at 10/s
  EXPECT_FALSE(bucket.Take(t0 + milliseconds(100)));
  // Never more than the burst, however long it rested.
  const auto later = t0 + std::chrono::seconds(100);
  int taken = 0;
  while (bucket.Take(later)) {
    ++taken;
  }
  EXPECT_EQ(taken, 3);
}

// Credit adds earned tokens, a fraction at a time, and never lifts the bucket past its burst.
TEST(TokenBucketTest, CreditAddsUpToTheBurst) {
  const auto t0 = TokenBucket::Clock::now();
  TokenBucket bucket(1, 4, t0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(bucket.Take(t0));
  }
  EXPECT_FALSE(bucket.Take(t0));
  bucket.Credit(0.5);
  EXPECT_FALSE(bucket.Take(t0));
  bucket.Credit(0.5);
  EXPECT_TRUE(bucket.Take(t0));
  bucket.Credit(100);
  int taken = 0;
  while (bucket.Take(t0)) {
    ++taken;
  }
  EXPECT_EQ(taken, 4);
}

// verifies: issue 32 (quotas) — several tokens at once: min(n, burst) must be there, a take above
// the burst leaves a debt, and WaitFor says when a take would succeed
TEST(TokenBucketTest, TakeSeveralAndWaitFor) {
  const auto t0 = TokenBucket::Clock::now();
  TokenBucket bucket(0.5, 4, t0);
  EXPECT_TRUE(bucket.Full(t0));
  EXPECT_EQ(bucket.WaitFor(4, t0), TokenBucket::Clock::duration::zero());
  EXPECT_TRUE(bucket.Take(3, t0));
  EXPECT_FALSE(bucket.Full(t0));
  EXPECT_FALSE(bucket.Take(2, t0));                      // one left, nothing taken
  EXPECT_EQ(bucket.WaitFor(2, t0), milliseconds(2000));  // one more token at 0.5 per second
  EXPECT_TRUE(bucket.Take(2, t0 + milliseconds(2000)));
  EXPECT_TRUE(bucket.Full(t0 + milliseconds(10000)));
  EXPECT_TRUE(bucket.Take(10, t0 + milliseconds(10000)));  // full: 4 there, 6 owed
  EXPECT_EQ(bucket.WaitFor(1, t0 + milliseconds(10000)), milliseconds(14000));
}

}  // namespace
}  // namespace xb
