#include "crypto/ed25519.h"

#include <gtest/gtest.h>

#include <string>

#include "crypto/test_hex.h"

namespace xb::crypto {
namespace {

using testing::Flip;
using testing::Unhex;

struct Vector {
  std::string public_key;
  std::string message;
  std::string signature;
};

// RFC 8032 section 7.1, TEST 1 (empty message), TEST 2 (one byte), TEST 3 (two bytes).
Vector Test1() {
  return {Unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"), "",
          Unhex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bac"
                "c61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")};
}
Vector Test2() {
  return {Unhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"), Unhex("72"),
          Unhex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e"
                "458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")};
}
Vector Test3() {
  return {Unhex("fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025"), Unhex("af82"),
          Unhex("6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290"
                "ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a")};
}

TEST(Ed25519Verify, AcceptsRfc8032Vectors) {
  for (const Vector& v : {Test1(), Test2(), Test3()}) {
    EXPECT_TRUE(Ed25519Verify(v.public_key, v.message, v.signature));
  }
}

TEST(Ed25519Verify, RejectsFlippedSignatureByte) {
  const Vector v = Test2();
  for (size_t i : {0u, 31u, 32u, 63u}) {
    EXPECT_FALSE(Ed25519Verify(v.public_key, v.message, Flip(v.signature, i))) << i;
  }
}

TEST(Ed25519Verify, RejectsChangedMessage) {
  const Vector v = Test3();
  EXPECT_FALSE(Ed25519Verify(v.public_key, Flip(v.message, 1), v.signature));
  EXPECT_FALSE(Ed25519Verify(v.public_key, v.message + "x", v.signature));
  EXPECT_FALSE(Ed25519Verify(v.public_key, "", v.signature));
}

TEST(Ed25519Verify, RejectsWrongKey) {
  const Vector a = Test2();
  const Vector b = Test3();
  EXPECT_FALSE(Ed25519Verify(b.public_key, a.message, a.signature));
  EXPECT_FALSE(Ed25519Verify(Flip(a.public_key, 0), a.message, a.signature));
}

TEST(Ed25519Verify, RejectsWrongSizes) {
  const Vector v = Test1();
  EXPECT_FALSE(Ed25519Verify(v.public_key.substr(1), v.message, v.signature));
  EXPECT_FALSE(Ed25519Verify(v.public_key + '\0', v.message, v.signature));
  EXPECT_FALSE(Ed25519Verify(v.public_key, v.message, v.signature.substr(0, 63)));
  EXPECT_FALSE(Ed25519Verify(v.public_key, v.message, v.signature + '\0'));
  EXPECT_FALSE(Ed25519Verify("", "", ""));
}

TEST(Ed25519Verify, RejectsKeyThatIsNotACurvePoint) {
  // y = 2 has no x on edwards25519: (y^2-1)/(dy^2+1) is not a square mod 2^255-19 (Euler's
  // criterion), so the encoding does not decode.
  std::string not_a_point(32, '\0');
  not_a_point[0] = 0x02;
  EXPECT_FALSE(Ed25519Verify(not_a_point, Test1().message, Test1().signature));
}

TEST(Ed25519Verify, RejectsNonCanonicalS) {
  // S + L (the group order) verifies under a lax implementation; RFC 8032 5.1.7 requires S < L.
  // L = 2^252 + 27742317777372353535851937790883648493, little-endian.
  const Vector v = Test1();
  const std::string order =
      Unhex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
  std::string sig = v.signature;
  int carry = 0;
  for (size_t i = 0; i < 32; ++i) {
    const int sum =
        static_cast<unsigned char>(sig[32 + i]) + static_cast<unsigned char>(order[i]) + carry;
    sig[32 + i] = static_cast<char>(sum & 0xff);
    carry = sum >> 8;
  }
  ASSERT_EQ(carry, 0);
  EXPECT_FALSE(Ed25519Verify(v.public_key, v.message, sig));
}

// A forgery that needs no secret: A = R = the identity point, S = 0 satisfies the cofactorless
// equation [S]B = R + [k]A for every message. OpenSSL (like python3-cryptography, which wraps it)
// accepts it; strict verification must not.
TEST(Ed25519VerifyStrict, RejectsIdentityKeyForgeryThatPlainVerifyAccepts) {
  const std::string identity =
      Unhex("0100000000000000000000000000000000000000000000000000000000000000");
  const std::string forged = identity + std::string(32, '\0');
  EXPECT_TRUE(Ed25519Verify(identity, "any message", forged));
  EXPECT_FALSE(Ed25519VerifyStrict(identity, "any message", forged));
}

TEST(Ed25519VerifyStrict, AcceptsRfc8032VectorsAndRejectsTampering) {
  for (const Vector& v : {Test1(), Test2(), Test3()}) {
    EXPECT_TRUE(Ed25519VerifyStrict(v.public_key, v.message, v.signature));
    EXPECT_FALSE(Ed25519VerifyStrict(v.public_key, v.message, Flip(v.signature, 40)));
    EXPECT_FALSE(Ed25519VerifyStrict(v.public_key, v.message + "x", v.signature));
  }
  EXPECT_FALSE(Ed25519VerifyStrict(Test1().public_key, "", Test1().signature.substr(1)));
}

TEST(Ed25519IsSmallOrderEncoding, ListsEveryEncodingOfTheEightPoints) {
  // y = 0, 1, p-1, the two order-8 values (independently checked: 8P = identity), and the
  // non-canonical y = p, p+1; each with either sign bit.
  const char* kSmallOrder[] = {
      "0000000000000000000000000000000000000000000000000000000000000000",
      "0100000000000000000000000000000000000000000000000000000000000000",
      "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
      "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
      "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
      "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  };
  for (const char* hex : kSmallOrder) {
    std::string encoding = Unhex(hex);
    EXPECT_TRUE(Ed25519IsSmallOrderEncoding(encoding)) << hex;
    encoding[31] = static_cast<char>(encoding[31] | 0x80);
    EXPECT_TRUE(Ed25519IsSmallOrderEncoding(encoding)) << hex << " with sign bit";
  }
  EXPECT_FALSE(Ed25519IsSmallOrderEncoding(Test1().public_key));
  EXPECT_FALSE(Ed25519IsSmallOrderEncoding(Unhex("02")));
  // y = 2 (not a point at all) is not small order; Ed25519Verify refuses it on its own.
  EXPECT_FALSE(Ed25519IsSmallOrderEncoding(
      Unhex("0200000000000000000000000000000000000000000000000000000000000000")));
}

}  // namespace
}  // namespace xb::crypto
