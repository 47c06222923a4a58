// UTF-8 decoding and the Unicode properties the checks use (moved from config/ with its tests).
#include "base/unicode.h"

#include <gtest/gtest.h>

#include <string>

namespace xb {
namespace {

// verifies: CONF-002 (the Unicode rules, including invalid UTF-8)
TEST(Unicode, IdentifierRules) {
  EXPECT_TRUE(IsValidServerIdentifier("org.example.xmtp"));
  EXPECT_TRUE(IsValidServerIdentifier("\xE6\x97\xA5\xE6\x9C\xAC"));  // 日本
  EXPECT_FALSE(IsValidServerIdentifier(""));
  EXPECT_FALSE(IsValidServerIdentifier("a\xff"));              // invalid byte
  EXPECT_FALSE(IsValidServerIdentifier("a\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidServerIdentifier("a\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidServerIdentifier("a\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidServerIdentifier("a\xE2\x80"));          // truncated
  EXPECT_FALSE(IsValidServerIdentifier(std::string("a\0b", 3)));
  for (char32_t ws : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2005,
                      0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}) {
    EXPECT_TRUE(IsWhiteSpace(ws)) << static_cast<uint32_t>(ws);
  }
  for (char32_t not_ws : {0x08, 0x0E, 0x1F, 0x180E, 0x200B, 0x2060, 0xFEFF, 0x3001}) {
    EXPECT_FALSE(IsWhiteSpace(not_ws)) << static_cast<uint32_t>(not_ws);
  }
  EXPECT_TRUE(IsControl(0x00));
  EXPECT_TRUE(IsControl(0x7F));
  EXPECT_TRUE(IsControl(0x9F));
  EXPECT_FALSE(IsControl(0xA0));
  EXPECT_TRUE(IsBlank(""));
  EXPECT_TRUE(IsBlank(" \t\xE3\x80\x80"));
  EXPECT_FALSE(IsBlank(" x "));
}

}  // namespace
}  // namespace xb
