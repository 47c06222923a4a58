#include "rpc/timeout.h"

#include <gtest/gtest.h>

namespace xb::rpc {
namespace {

using std::chrono::nanoseconds;

TEST(GrpcTimeout, ParsesEveryUnit) {
  EXPECT_EQ(ParseGrpcTimeout("1H"), std::chrono::hours(1));
  EXPECT_EQ(ParseGrpcTimeout("2M"), std::chrono::minutes(2));
  EXPECT_EQ(ParseGrpcTimeout("3S"), std::chrono::seconds(3));
  EXPECT_EQ(ParseGrpcTimeout("400m"), std::chrono::milliseconds(400));
  EXPECT_EQ(ParseGrpcTimeout("5u"), std::chrono::microseconds(5));
  EXPECT_EQ(ParseGrpcTimeout("99999999n"), nanoseconds(99999999));
}

TEST(GrpcTimeout, RejectsMalformedValues) {
  EXPECT_FALSE(ParseGrpcTimeout(""));
  EXPECT_FALSE(ParseGrpcTimeout("S"));
  EXPECT_FALSE(ParseGrpcTimeout("10"));
  EXPECT_FALSE(ParseGrpcTimeout("1x"));
  EXPECT_FALSE(ParseGrpcTimeout("123456789S"));  // more than 8 digits
  EXPECT_FALSE(ParseGrpcTimeout("-1S"));
}

}  // namespace
}  // namespace xb::rpc
