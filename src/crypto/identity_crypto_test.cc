// Keccak-256, ERC-191 recovery and Ed25519ph against published vectors and against material made
// with independent tools (pycryptodome's Keccak, RFC 8032's Ed25519ph vector, the spec's
// computed identity-log vectors; see tests/integration/identity_signers.py).
#include <gtest/gtest.h>

#include <string>

#include "crypto/ed25519ph.h"
#include "crypto/keccak256.h"
#include "crypto/secp256k1.h"

namespace xb::crypto {
namespace {

std::string Hex(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 0x0f]);
  }
  return out;
}

template <size_t N>
std::string Hex(const std::array<uint8_t, N>& a) {
  return Hex(a.data(), a.size());
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(Keccak256, KnownVectors) {
  EXPECT_EQ(Hex(Keccak256("")), "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
  EXPECT_EQ(Hex(Keccak256("abc")),
            "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45");
}

// Rate boundaries (135, 136 bytes) and a multi-block input; expected values from pycryptodome.
TEST(Keccak256, BlockBoundaries) {
  EXPECT_EQ(Hex(Keccak256(std::string(135, 'a'))),
            "34367dc248bbd832f4e3e69dfaac2f92638bd0bbd18f2912ba4ef454919cf446");
  EXPECT_EQ(Hex(Keccak256(std::string(136, 'a'))),
            "a6c4d403279fe3e0af03729caada8374b5ca54d8065329a3ebcaeb4b60aa386e");
  EXPECT_EQ(Hex(Keccak256(std::string(300, 'a'))),
            "5b7e0e47a96f32a88b4f14ca177982790807c40e1a105742ba0fc1babe1ef826");
}

// VALIDATION.md 8.1: the reference implementation's key fixture.
TEST(Secp256k1, PrivateKeyToAddress) {
  EXPECT_EQ(EthereumAddressOfPrivateKey(
                Unhex("90b7388a7427358cb7fc7e9042805b1942eae47ee783e627a989719da35e76fb")),
            "0x34dd95109b587ca90778cde5e2dd87e022453699");
  EXPECT_EQ(EthereumAddressOfPrivateKey(std::string(32, '\0')), std::nullopt);
}

constexpr std::string_view kLegacyHash =
    "0931c7691ed572a01954dcb4ec4a7214eb684b64a381e2af1ca763e18841fcfc";
constexpr std::string_view kLegacyRs =
    "078864ac9bf7e6fffdf74e32d4e2294eefb788f77a589bf5dbb7d7ca2a59a28060607883114626e7021b5b1d426e8"
    "08c012ad9b902b5d0648f8fdb9fae01e9bf";

// VALIDATION.md 8.1: the legacy SignedPublicKey fixture (reference implementation's tests).
TEST(Secp256k1, RecoversReferenceFixtureWithEveryVForm) {
  for (char v : {'\x01', '\x1c'}) {
    auto signer = RecoverEthereumSigner(Unhex(kLegacyHash), Unhex(kLegacyRs) + std::string(1, v));
    ASSERT_TRUE(signer.has_value());
    EXPECT_EQ(signer->address, "0x220ca99fb7fafa18cb623d924794dde47b4bc2e9");
    EXPECT_EQ(Hex(signer->canonical_rsv), std::string(kLegacyRs) + "01");
  }
  // One byte changed (in r, in s, in the digest): never the wallet.
  for (size_t at : {3u, 40u}) {
    std::string sig = Unhex(kLegacyRs) + "\x1c";
    sig[at] ^= 0x01;
    auto tampered = RecoverEthereumSigner(Unhex(kLegacyHash), sig);
    EXPECT_TRUE(!tampered || tampered->address != "0x220ca99fb7fafa18cb623d924794dde47b4bc2e9");
  }
  std::string digest = Unhex(kLegacyHash);
  digest[0] ^= 0x01;
  auto wrong_text = RecoverEthereumSigner(digest, Unhex(kLegacyRs) + "\x1c");
  EXPECT_TRUE(!wrong_text || wrong_text->address != "0x220ca99fb7fafa18cb623d924794dde47b4bc2e9");
  // The other parity recovers some other key, never the wallet.
  auto other = RecoverEthereumSigner(Unhex(kLegacyHash), Unhex(kLegacyRs) + std::string(1, '\0'));
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->address, "0x220ca99fb7fafa18cb623d924794dde47b4bc2e9");
}

// VALIDATION.md 8.2 update 1: the high-S alias normalizes to the same signer and replay key.
TEST(Secp256k1, HighSAliasRecoversSameSignerAndKey) {
  const std::string hash =
      Unhex("019e61bac4ac172e2db069add58a94427b472b175df01d2b94bb44ee9bf9b720");
  const std::string low = Unhex(
      "3249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f84854347f9fdf92a5c510202792ff"
      "078e8531a997e0bd44669fe9eba57e542132f91c");
  const std::string high = Unhex(
      "3249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f848abcb8060206d5a3aefdfd86d00"
      "f8717989054505f204399bd5e6b90e7c150e481b");
  auto a = RecoverEthereumSigner(hash, low);
  auto b = RecoverEthereumSigner(hash, high);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->address, "0x34dd95109b587ca90778cde5e2dd87e022453699");
  EXPECT_EQ(b->address, a->address);
  EXPECT_EQ(b->canonical_rsv, a->canonical_rsv);
  EXPECT_EQ(a->canonical_rsv[64], 1);
}

TEST(Secp256k1, RejectsMalformedSignatures) {
  const std::string hash = Unhex(kLegacyHash);
  const std::string rs = Unhex(kLegacyRs);
  EXPECT_FALSE(RecoverEthereumSigner(hash, rs));                               // 64 bytes
  EXPECT_FALSE(RecoverEthereumSigner(hash, rs + std::string("\x1c\x00", 2)));  // 66 bytes
  EXPECT_FALSE(RecoverEthereumSigner(hash, rs + "\x02"));                      // v = 2
  EXPECT_FALSE(RecoverEthereumSigner(hash, rs + "\x1d"));                      // v = 29
  EXPECT_FALSE(RecoverEthereumSigner(hash.substr(1), rs + "\x1c"));            // short digest
  std::string zero_r = std::string(32, '\0') + rs.substr(32) + "\x1c";
  EXPECT_FALSE(RecoverEthereumSigner(hash, zero_r));
  // s = n (out of range).
  std::string s_n = rs.substr(0, 32) +
                    Unhex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141") +
                    "\x1c";
  EXPECT_FALSE(RecoverEthereumSigner(hash, s_n));
  // r with no curve point (x = 5 has no y on secp256k1).
  std::string bad_r = std::string(31, '\0') + "\x05" + rs.substr(32) + "\x1c";
  EXPECT_FALSE(RecoverEthereumSigner(hash, bad_r));
}

// RFC 8032 section 7.3 (Ed25519ph, empty context, message "abc").
TEST(Ed25519ph, Rfc8032Vector) {
  const std::string pub = Unhex("ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf");
  const std::string sig = Unhex(
      "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062"
      "adf5aaa10b8c61e636062aaad11c2a26083406");
  EXPECT_TRUE(Ed25519phVerify(pub, "abc", "", sig));
  EXPECT_FALSE(Ed25519phVerify(pub, "abd", "", sig));
  EXPECT_FALSE(Ed25519phVerify(pub, "abc", "x", sig));  // context is bound
  std::string flipped = sig;
  flipped[5] ^= 0x01;
  EXPECT_FALSE(Ed25519phVerify(pub, "abc", "", flipped));
  EXPECT_FALSE(Ed25519phVerify(pub, "abc", "", sig.substr(0, 63)));
}

TEST(Ed25519ph, SIsReducedOnly) {
  const std::string pub = Unhex("ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf");
  std::string sig = Unhex(
      "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062"
      "adf5aaa10b8c61e636062aaad11c2a26083406");
  // S + L encodes the same scalar but is not canonical: rejected (S < L).
  const std::string order =
      Unhex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
  int carry = 0;
  for (size_t i = 0; i < 32; ++i) {
    int v = static_cast<uint8_t>(sig[32 + i]) + static_cast<uint8_t>(order[i]) + carry;
    sig[32 + i] = static_cast<char>(v & 0xff);
    carry = v >> 8;
  }
  EXPECT_FALSE(Ed25519phVerify(pub, "abc", "", sig));
}

TEST(Ed25519ph, PointDecoding) {
  EXPECT_TRUE(Ed25519PointDecodes(
      Unhex("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")));
  // Small-order points decode (the identity; the order-4 point with y = 0).
  EXPECT_TRUE(Ed25519PointDecodes(
      Unhex("0100000000000000000000000000000000000000000000000000000000000000")));
  EXPECT_TRUE(Ed25519PointDecodes(std::string(32, '\0')));
  // y = 2 has no x on the curve.
  EXPECT_FALSE(Ed25519PointDecodes(
      Unhex("0200000000000000000000000000000000000000000000000000000000000000")));
  EXPECT_FALSE(Ed25519PointDecodes(std::string(31, '\x01')));
}

}  // namespace
}  // namespace xb::crypto
