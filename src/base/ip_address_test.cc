// Textual IP literals (base/ip_address.h): the forms RFC 3986 3.2.2 admits, and loopback.
#include "base/ip_address.h"

#include <gtest/gtest.h>

#include <string>

namespace xb {
namespace {

TEST(IpAddress, Ipv4DottedQuadOnly) {
  std::array<uint8_t, 4> v4{};
  ASSERT_TRUE(ParseIpv4("192.0.2.255", &v4));
  EXPECT_EQ(v4, (std::array<uint8_t, 4>{192, 0, 2, 255}));
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.0.0.1", "01.2.3.4", "1.2.3.4 ",
                          "0x1.2.3.4", "1..2.3", "1.2.3.1000", "-1.2.3.4"}) {
    EXPECT_FALSE(ParseIpv4(bad, &v4)) << bad;
  }
}

TEST(IpAddress, Ipv6TextForms) {
  std::array<uint8_t, 16> v6{};
  ASSERT_TRUE(ParseIpv6("2001:db8::1", &v6));
  EXPECT_EQ(v6[0], 0x20);
  EXPECT_EQ(v6[1], 0x01);
  EXPECT_EQ(v6[15], 1);
  ASSERT_TRUE(ParseIpv6("::ffff:10.0.0.1", &v6));
  EXPECT_EQ(v6[10], 0xff);
  EXPECT_EQ(v6[12], 10);
  for (const char* bad : {"", "::1%eth0", "[::1]", "1:2:3:4:5:6:7:8:9", "::g", "1.2.3.4"}) {
    EXPECT_FALSE(ParseIpv6(bad, &v6)) << bad;
  }
  EXPECT_FALSE(ParseIpv6(std::string("::1\0", 4), &v6));
}

TEST(IpAddress, Loopback) {
  EXPECT_TRUE(IsLoopbackIpv4({127, 0, 0, 1}));
  EXPECT_TRUE(IsLoopbackIpv4({127, 255, 1, 2}));
  EXPECT_FALSE(IsLoopbackIpv4({128, 0, 0, 1}));
  std::array<uint8_t, 16> v6{};
  ASSERT_TRUE(ParseIpv6("0:0::1", &v6));
  EXPECT_TRUE(IsLoopbackIpv6(v6));
  ASSERT_TRUE(ParseIpv6("::ffff:127.0.0.1", &v6));
  EXPECT_FALSE(IsLoopbackIpv6(v6));
}

}  // namespace
}  // namespace xb
