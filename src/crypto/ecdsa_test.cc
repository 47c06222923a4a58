#include "crypto/ecdsa.h"

#include <gtest/gtest.h>

#include <string>

#include "crypto/test_hex.h"

namespace xb::crypto {
namespace {

using testing::Flip;
using testing::Unhex;

// RFC 6979 appendix A.2.5: P-256, SHA-256, message "sample".
const std::string kP256Key = Unhex(
    "0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
    "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299");
const std::string kP256Compressed =
    Unhex("0360fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6");
const std::string kP256Raw = Unhex(
    "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
    "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8");
const std::string kP256Der = Unhex(
    "3046022100efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
    "022100f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8");

// Made with python3-cryptography 38 (derive_private_key, sign with ECDSA(SHA384/SHA512)) over the
// message below; r and s printed both as DER and as fixed-width r || s.
const std::string kMessage = "xmtp-backend ecdsa test";
const std::string kP384Key = Unhex(
    "04ec3a4e415b4e19a4568618029f427fa5da9a8bc4ae92e02e06aae5286b300c64def8f0ea9055866064a25451548"
    "0bc138015d9b72d7d57244ea8ef9ac0c621896708a59367f9dfb9f54ca84b3f1c9db1288b231c3ae0d4fe7344fd25"
    "33264720");
const std::string kP384Compressed = Unhex(
    "02ec3a4e415b4e19a4568618029f427fa5da9a8bc4ae92e02e06aae5286b300c64def8f0ea9055866064a25451548"
    "0bc13");
const std::string kP384Der = Unhex(
    "3065023100e9de66ff542525ee5ca13be63910e410ade3e93e2a042c8fb21bdff95c1b72729c4423c05fed5bf6e26"
    "42fc0ddb1a86202303abf91d1dbef420d2e7a15fda87dd0be9f5d762495e7a51fedaac669be918071d28b918aa92c"
    "a7b17d14f59b3b746e70");
const std::string kP384Raw = Unhex(
    "e9de66ff542525ee5ca13be63910e410ade3e93e2a042c8fb21bdff95c1b72729c4423c05fed5bf6e2642fc0ddb1a"
    "8623abf91d1dbef420d2e7a15fda87dd0be9f5d762495e7a51fedaac669be918071d28b918aa92ca7b17d14f59b3b"
    "746e70");
const std::string kP521Key = Unhex(
    "0401894550d0785932e00eaa23b694f213f8c3121f86dc97a04e5a7167db4e5bcd371123d46e45db6b5d5370a7f20"
    "fb633155d38ffa16d2bd761dcac474b9a2f5023a400493101c962cd4d2fddf782285e64584139c2f91b47f87ff823"
    "54d6630f746a28a0db25741b5b34a828008b22acc23f924faafbd4d33f81ea66956dfeaa2bfdfcf5");
const std::string kP521Compressed = Unhex(
    "0301894550d0785932e00eaa23b694f213f8c3121f86dc97a04e5a7167db4e5bcd371123d46e45db6b5d5370a7f20"
    "fb633155d38ffa16d2bd761dcac474b9a2f5023a4");
const std::string kP521Der = Unhex(
    "3081870241283bba46c237ed84b74895bf4d444c0b0677e60358235edb0830751332e3ca7922e3654a923911a8092"
    "a979fc0734800bd3a78cf5879e4eebd39e04b6b98bfafb7024200eec8269462dbbbf9538d6c1a9f9f7afab0f6c800"
    "d0f4cc74a0fafca0f9f5c4a1cd007f7e90f9c806ce01887ef05faef21172eaaa37f5da0a7f44084fa266e52d0a");
const std::string kP521Raw = Unhex(
    "00283bba46c237ed84b74895bf4d444c0b0677e60358235edb0830751332e3ca7922e3654a923911a8092a979fc07"
    "34800bd3a78cf5879e4eebd39e04b6b98bfafb700eec8269462dbbbf9538d6c1a9f9f7afab0f6c800d0f4cc74a0fa"
    "fca0f9f5c4a1cd007f7e90f9c806ce01887ef05faef21172eaaa37f5da0a7f44084fa266e52d0a");

constexpr auto kDer = EcSignatureEncoding::kDer;
constexpr auto kRaw = EcSignatureEncoding::kRaw;

TEST(EcdsaVerify, AcceptsRfc6979P256SampleBothEncodingsAndKeyForms) {
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Der, kDer));
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Raw, kRaw));
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP256, kP256Compressed, "sample", kP256Der, kDer));
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP256, kP256Compressed, "sample", kP256Raw, kRaw));
}

TEST(EcdsaVerify, AcceptsP384AndP521FromIndependentTool) {
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP384, kP384Key, kMessage, kP384Der, kDer));
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP384, kP384Compressed, kMessage, kP384Raw, kRaw));
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP521, kP521Key, kMessage, kP521Der, kDer));
  EXPECT_TRUE(EcdsaVerify(EcCurve::kP521, kP521Compressed, kMessage, kP521Raw, kRaw));
}

TEST(EcdsaVerify, RejectsChangedMessage) {
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "samplf", kP256Der, kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "test", kP256Raw, kRaw));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP384, kP384Key, kMessage + "!", kP384Der, kDer));
}

TEST(EcdsaVerify, RejectsFlippedSignatureByte) {
  for (size_t i : {0u, 31u, 32u, 63u}) {
    EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", Flip(kP256Raw, i), kRaw)) << i;
  }
  // Inside r's and s's integer bytes of the DER form.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", Flip(kP256Der, 10), kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", Flip(kP256Der, 60), kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP521, kP521Key, kMessage, Flip(kP521Raw, 131), kRaw));
}

TEST(EcdsaVerify, RejectsWrongKeyOrCurve) {
  // Right signature, key of another signer.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP384, kP384Key, "sample", kP256Der, kDer));
  // The P-256 key named as another curve does not even decode.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP384, kP256Key, "sample", kP256Der, kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP521, kP256Key, "sample", kP256Raw, kRaw));
  // The other compressed root: the negated point.
  std::string negated = kP256Compressed;
  negated[0] = 0x02;
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, negated, "sample", kP256Der, kDer));
}

TEST(EcdsaVerify, RejectsPointNotOnCurve) {
  // Y changed by one bit: (X, Y') does not satisfy the curve equation.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, Flip(kP256Key, 64), "sample", kP256Der, kDer));
}

TEST(EcdsaVerify, RejectsMalformedKeys) {
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, "", "sample", kP256Der, kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, std::string(1, '\0'), "sample", kP256Der, kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key.substr(0, 64), "sample", kP256Der, kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key + '\0', "sample", kP256Der, kDer));
  // Raw X || Y without the SEC1 tag.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key.substr(1), "sample", kP256Der, kDer));
  // Hybrid form (0x06/0x07) is not accepted.
  std::string hybrid = kP256Key;
  hybrid[0] = 0x07;
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, hybrid, "sample", kP256Der, kDer));
}

TEST(EcdsaVerify, RejectsMalformedSignatures) {
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", "", kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", "", kRaw));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Raw.substr(1), kRaw));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Raw + '\0', kRaw));
  // The two encodings are not interchangeable.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Raw, kDer));
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Der, kRaw));
  // Trailing bytes after the DER SEQUENCE.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", kP256Der + '\0', kDer));
  // r = 0, s = 0.
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", std::string(64, '\0'), kRaw));
  // Non-minimal DER: r padded with a superfluous leading zero byte.
  const std::string padded = Unhex(
      "3047022200"
      "00efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
      "022100f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8");
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", padded, kDer));
}

TEST(EcdsaVerify, RejectsSPlusGroupOrder) {
  // s' = s + n overflows the 32-byte width, so it cannot even be written raw; as DER it is a
  // valid INTEGER that OpenSSL must refuse because s' >= n.
  const std::string big_s = Unhex(
      "304602"
      "2100efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
      "022101"
      "f7cb1c932d657c42d436c7a1b6e29f65b0cffb8960c7928b417e75f2809df2f9");
  EXPECT_FALSE(EcdsaVerify(EcCurve::kP256, kP256Key, "sample", big_s, kDer));
}

}  // namespace
}  // namespace xb::crypto
