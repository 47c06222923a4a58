#include "fanout/token_bucket.h"

#include <gtest/gtest.h>

namespace xb::fanout {
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

}  // namespace
}  // namespace xb::fanout
