#include "crypto/hmac_sha256.h"

#include <gtest/gtest.h>

#include "base/encoding.h"

namespace xb::crypto {
namespace {

std::string Hex(const Sha256Digest& d) { return LowerHex(AsBytes(d)); }

TEST(HmacSha256, MatchesRfc4231Vectors) {
  // RFC 4231 test case 2.
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block size.
  EXPECT_EQ(Hex(HmacSha256(std::string(131, '\xaa'),
                           "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256, RekeysBetweenCallsOnOneThread) {
  const Sha256Digest a = HmacSha256("key-a", "data");
  const Sha256Digest b = HmacSha256("key-b", "data");
  EXPECT_NE(a, b);
  EXPECT_EQ(HmacSha256("key-a", "data"), a);
  EXPECT_NE(HmacSha256("", "data"), a);
}

}  // namespace
}  // namespace xb::crypto
