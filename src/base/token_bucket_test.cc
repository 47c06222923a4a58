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

}  // namespace
}  // namespace xb
