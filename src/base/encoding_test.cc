#include "base/encoding.h"

#include <gtest/gtest.h>

namespace xb {
namespace {

TEST(LowerHex, EncodesEveryByte) {
  EXPECT_EQ(LowerHex(std::string_view("\x00\x7f\xab\xff", 4)), "007fabff");
  EXPECT_EQ(LowerHex(""), "");
}

TEST(Base64, MatchesRfc4648Vectors) {  // RFC 4648 section 10
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64(std::string(32, '\xab')), "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=");
  EXPECT_EQ(Base64("\xfb\xff"), "+/8=");
}

TEST(Base64Unpadded, DropsOnlyThePadding) {
  EXPECT_EQ(Base64Unpadded("f"), "Zg");
  EXPECT_EQ(Base64Unpadded("fo"), "Zm8");
  EXPECT_EQ(Base64Unpadded("foo"), "Zm9v");
  EXPECT_EQ(Base64Unpadded(""), "");
}

}  // namespace
}  // namespace xb
