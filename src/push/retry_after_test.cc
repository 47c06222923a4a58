#include "push/retry_after.h"

#include <gtest/gtest.h>

namespace xb::push {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

// 1994-11-06 08:49:37 UTC.
const system_clock::time_point kNow = system_clock::from_time_t(784111777);

// verifies: PUSH-259
TEST(ParseRetryAfter, ReadsDecimalSecondsCappedAt300) {
  EXPECT_EQ(ParseRetryAfter("0", kNow), seconds(0));
  EXPECT_EQ(ParseRetryAfter("120", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter(" 7 ", kNow), seconds(7));
  EXPECT_EQ(ParseRetryAfter("301", kNow), seconds(300));
  EXPECT_EQ(ParseRetryAfter("99999999999999999999999", kNow), seconds(300));
}

// verifies: PUSH-259
TEST(ParseRetryAfter, ReadsAnImfFixdateRelativeToNow) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:50:37 GMT", kNow), seconds(60));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kNow), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:00:00 GMT", kNow), seconds(0));  // floor 0
  EXPECT_EQ(ParseRetryAfter("Mon, 07 Nov 1994 08:49:37 GMT", kNow), seconds(300));
}

// verifies: PUSH-259
TEST(ParseRetryAfter, IgnoresNegativeAndUnparsableValues) {
  EXPECT_EQ(ParseRetryAfter("-5", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("1.5", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("soon", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 UTC", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Foo 1994 08:49:37 GMT", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", kNow), std::nullopt);
}

}  // namespace
}  // namespace xb::push
