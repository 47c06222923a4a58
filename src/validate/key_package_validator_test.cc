#include "validate/key_package_validator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "validate/key_package_extra_vectors_test_data.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

using testing::Unhex;

// 2023-11-14T22:13:20Z: inside every accepting vector's lifetime (0 .. 2^64-1).
constexpr uint64_t kNow = 1700000000;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// The parse then the validation, as publish admission runs them; the status of the validation
// (or the parse's, tagged so a test can tell the two reasons apart).
struct Outcome {
  bool parsed = false;
  Status status;
};

Outcome Admit(std::string_view bytes, uint64_t now = kNow) {
  Result<ParsedKeyPackage> kp = ParseKeyPackage(bytes);
  if (!kp.ok()) {
    return {.parsed = false, .status = kp.status()};
  }
  // Publish admission (envelope.cc) also refuses a signature_key that is not 32 bytes as
  // malformed; every vector here has a 32-byte key.
  EXPECT_EQ(kp->signature_key().size(), 32u);
  return {.parsed = true, .status = ValidateKeyPackage(*kp, now)};
}

void ExpectAccepted(std::string_view bytes, uint64_t now = kNow) {
  const Outcome o = Admit(bytes, now);
  ASSERT_TRUE(o.parsed) << o.status.ToString();
  EXPECT_TRUE(o.status.ok()) << o.status.ToString();
}

// REASON_INVALID_KEY_PACKAGE: parsed, then refused by the validator with `message`.
void ExpectInvalid(std::string_view bytes, std::string_view message, uint64_t now = kNow) {
  const Outcome o = Admit(bytes, now);
  ASSERT_TRUE(o.parsed) << o.status.ToString();
  EXPECT_EQ(o.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(o.status.message(), "key package is invalid: " + std::string(message));
}

std::string Vector(std::string_view name) {
  for (const vectors::KeyPackageCase& c : vectors::kKeyPackageCases) {
    if (c.name == name) {
      return Unhex(c.tls);
    }
  }
  ADD_FAILURE() << "no vector " << name;
  return "";
}

// verifies: JOIN-007, API-235 — the VALIDATION.md 8.2 packages that must be stored.
TEST(ValidateKeyPackage, AcceptsMinimalAndXmtpLikeVectors) {
  ExpectAccepted(Unhex(vectors::kKeyPackageMinimalTls));
  ExpectAccepted(Unhex(vectors::kKeyPackageXmtpLike));
}

// Every case of VALIDATION-vectors.json key_package.cases, with the reason it names.
TEST(ValidateKeyPackage, EveryJsonCaseGetsItsExpectedReason) {
  int checked = 0;
  for (const vectors::KeyPackageCase& c : vectors::kKeyPackageCases) {
    SCOPED_TRACE(std::string(c.name));
    const Outcome o = Admit(Unhex(c.tls));
    if (c.expect == "accept") {
      EXPECT_TRUE(o.parsed && o.status.ok()) << o.status.ToString();
    } else if (c.expect == "REASON_MALFORMED_PAYLOAD") {
      EXPECT_FALSE(o.parsed);
    } else if (c.expect == "REASON_INVALID_KEY_PACKAGE") {
      EXPECT_TRUE(o.parsed);
      EXPECT_EQ(o.status.code(), StatusCode::kInvalidArgument);
    } else {
      ADD_FAILURE() << "unknown expectation " << c.expect;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 13);
}

// The same cases, each with the rule VALIDATION.md 4.3 says catches it.
TEST(ValidateKeyPackage, JsonNegativeCasesFailTheRightRule) {
  ExpectAccepted(Vector("ok_cs1"));
  ExpectAccepted(Vector("ok_credential_non_hex_inbox"));  // verifies: API-235 (inbox shape)
  ExpectInvalid(Vector("neg_kp_sig_flipped"), "key package signature does not verify");
  ExpectInvalid(Vector("neg_expired"), "lifetime has expired");  // verifies: JOIN-008
  ExpectInvalid(Vector("neg_not_yet_valid"), "lifetime has not started");
  // Suite 2 names ECDSA P-256: the Ed25519 key and signatures do not verify under it.
  ExpectInvalid(Vector("neg_cs2_with_ed25519_key"), "leaf node signature does not verify");
  ExpectInvalid(Vector("neg_init_equals_enc"), "init key equals the leaf encryption key");
  ExpectInvalid(Vector("neg_last_resort_not_in_caps"),
                "extension type missing from the leaf capabilities");
  ExpectInvalid(Vector("neg_version_2"), "protocol version is not mls10");
  ExpectInvalid(Vector("neg_x509_credential"), "credential is not a basic credential");
  // verifies: JOIN-004
  ExpectInvalid(Vector("neg_credential_not_protobuf"),
                "credential identity is not an MlsCredential");
  EXPECT_FALSE(Admit(Vector("neg_trailing_byte")).parsed);
  EXPECT_FALSE(Admit(Vector("neg_unknown_ciphersuite_9")).parsed);
}

// Tamper: no single-bit change anywhere in a valid package is accepted. Each flipped copy either
// fails the parse (malformed) or fails validation (invalid); none is stored.
TEST(ValidateKeyPackage, EverySingleBitFlipOfAValidPackageIsRefused) {
  for (std::string_view hex : {vectors::kKeyPackageMinimalTls, vectors::kKeyPackageXmtpLike}) {
    const std::string good = Unhex(hex);
    int invalid = 0;
    int malformed = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
        const Outcome o = Admit(bad);
        if (o.parsed) {
          EXPECT_FALSE(o.status.ok()) << "byte " << i << " bit " << bit;
          ++invalid;
        } else {
          ++malformed;
        }
      }
    }
    EXPECT_EQ(invalid + malformed, static_cast<int>(good.size() * 8));
    EXPECT_GT(invalid, 0);
  }
}

TEST(ValidateKeyPackage, FlippedSignatureBytesFailTheirOwnSignatureCheck) {
  const std::string good = Unhex(vectors::kKeyPackageMinimalTls);
  const std::string leaf_sig = Unhex(vectors::kKeyPackageMinimalLeafSignature);
  const std::string kp_sig = Unhex(vectors::kKeyPackageMinimalKeyPackageSignature);
  const size_t leaf_at = good.find(leaf_sig);
  const size_t kp_at = good.rfind(kp_sig);
  ASSERT_NE(leaf_at, std::string::npos);
  ASSERT_EQ(kp_at + kp_sig.size(), good.size());
  for (size_t i = 0; i < 64; ++i) {
    std::string bad = good;
    bad[leaf_at + i] = static_cast<char>(bad[leaf_at + i] ^ 0x80);
    // The leaf signature is inside KeyPackageTBS, but the leaf check runs first.
    ExpectInvalid(bad, "leaf node signature does not verify");
    bad = good;
    bad[kp_at + i] = static_cast<char>(bad[kp_at + i] ^ 0x80);
    ExpectInvalid(bad, "key package signature does not verify");
  }
}

TEST(ValidateKeyPackage, SignaturesUnderAnotherKeyAreRefused) {
  // The installation key replaced by RFC 8032 TEST 1's public key (same length, so the package
  // still parses): neither signature verifies under it.
  std::string bad = Unhex(vectors::kKeyPackageMinimalTls);
  const std::string key = Unhex(vectors::kKeyPackageSignatureKey);
  const size_t at = bad.find(key);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, key.size(),
              Unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"));
  ExpectInvalid(bad, "leaf node signature does not verify");
}

TEST(ValidateKeyPackage, SmallOrderInstallationKeyIsRefused) {
  // The identity point as signature_key: strict Ed25519 refuses it before any arithmetic.
  std::string bad = Unhex(vectors::kKeyPackageMinimalTls);
  const std::string key = Unhex(vectors::kKeyPackageSignatureKey);
  const size_t at = bad.find(key);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, key.size(),
              Unhex("0100000000000000000000000000000000000000000000000000000000000000"));
  ExpectInvalid(bad, "leaf node signature does not verify");
}

// verifies: JOIN-008, API-235 — whole seconds, not_after exclusive, not_before inclusive, no
// skew allowance and no maximum lifetime.
TEST(ValidateKeyPackage, LifetimeBoundaries) {
  const std::string expired = Vector("neg_expired");  // not_before 0, not_after 1
  ExpectAccepted(expired, /*now=*/0);
  ExpectInvalid(expired, "lifetime has expired", /*now=*/1);
  const std::string future = Vector("neg_not_yet_valid");  // not_before 2^64-16
  ExpectInvalid(future, "lifetime has not started", /*now=*/kMax - 16);
  ExpectAccepted(future, /*now=*/kMax - 15);
  // 0 .. 2^64-1: valid at both ends of the clock but the very last second.
  ExpectAccepted(Unhex(vectors::kKeyPackageMinimalTls), /*now=*/0);
  ExpectAccepted(Unhex(vectors::kKeyPackageMinimalTls), /*now=*/kMax - 1);
  ExpectInvalid(Unhex(vectors::kKeyPackageMinimalTls), "lifetime has expired", /*now=*/kMax);
}

TEST(ValidateKeyPackage, NonCanonicalEncodingIsASignatureFailure) {
  // VALIDATION.md 2.1/4.3 quirk, on the parse result directly: whatever else holds, a package
  // whose encoding the reference would re-serialize differently is refused.
  Result<ParsedKeyPackage> kp = ParseKeyPackage(Unhex(vectors::kKeyPackageMinimalTls));
  ASSERT_TRUE(kp.ok());
  ASSERT_TRUE(ValidateKeyPackage(*kp, kNow).ok());
  kp->non_canonical = true;
  const Status s = ValidateKeyPackage(*kp, kNow);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "key package is invalid: leaf node signature does not verify (non-canonical encoding)");
}

// Extra packages built and signed with python3-cryptography (key_package_extra_vectors.py), each
// aimed at one rule of VALIDATION.md 4.3-4.6, with both signatures valid over the bytes sent.
TEST(ValidateKeyPackage, IndependentlySignedExtraVectors) {
  int accepted = 0;
  int refused = 0;
  for (const extra_vectors::KeyPackageCase& c : extra_vectors::kKeyPackageCases) {
    SCOPED_TRACE(std::string(c.name));
    const std::string bytes = Unhex(c.tls);
    if (c.invalid_because.empty()) {
      ExpectAccepted(bytes);
      ++accepted;
    } else {
      ExpectInvalid(bytes, c.invalid_because);
      ++refused;
    }
  }
  EXPECT_EQ(accepted, 7);
  EXPECT_EQ(refused, 12);
}

// verifies: VALIDATION.md 2.1/4.3 quirk — the overrun and leftover-bytes packages are refused
// only because of their encoding: their signatures verify over the bytes as sent.
TEST(ValidateKeyPackage, QuirkVectorsCarryValidSignatures) {
  for (const extra_vectors::KeyPackageCase& c : extra_vectors::kKeyPackageCases) {
    if (c.invalid_because != "leaf node signature does not verify (non-canonical encoding)") {
      continue;
    }
    SCOPED_TRACE(std::string(c.name));
    Result<ParsedKeyPackage> kp = ParseKeyPackage(Unhex(c.tls));
    ASSERT_TRUE(kp.ok());
    EXPECT_TRUE(kp->non_canonical);
    kp->non_canonical = false;
    EXPECT_TRUE(ValidateKeyPackage(*kp, kNow).ok());
  }
}

}  // namespace
}  // namespace xb::validate
