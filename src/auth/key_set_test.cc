#include "auth/key_set.h"

#include <gtest/gtest.h>

#include "auth/test_signer.h"

namespace xb::auth {
namespace {

Key MakeKey(std::optional<std::string> kid, Alg alg) {
  testing::Pkey pkey = testing::Generate(alg);
  auto made = VerifyKey::FromPem(alg, testing::PublicPem(pkey.get()));
  EXPECT_TRUE(made.ok());
  return Key{.kid = std::move(kid), .alg = alg, .key = std::move(made).value()};
}

// verifies: AUTH-009
TEST(KeySelectionTest, ByKidExactlyOne) {
  KeySet set;
  set.keys.push_back(MakeKey("a", Alg::kEs256));
  set.keys.push_back(MakeKey("b", Alg::kEdDsa));
  set.keys.push_back(MakeKey(std::nullopt, Alg::kEs256));
  EXPECT_EQ(SelectKey(set, "a", Alg::kEs256), &set.keys[0]);
  EXPECT_EQ(SelectKey(set, "b", Alg::kEdDsa), &set.keys[1]);
  EXPECT_EQ(SelectKey(set, "A", Alg::kEs256), nullptr);   // byte for byte
  EXPECT_EQ(SelectKey(set, "b", Alg::kEs256), nullptr);   // alg mismatch: untrusted
  EXPECT_EQ(SelectKey(set, "", Alg::kEs256), nullptr);    // a key without kid never matches
  EXPECT_EQ(SelectKey(set, "zz", Alg::kEs256), nullptr);  // none
}

TEST(KeySelectionTest, WithoutKidByAlgExactlyOne) {
  KeySet set;
  set.keys.push_back(MakeKey("a", Alg::kEs256));
  set.keys.push_back(MakeKey(std::nullopt, Alg::kEs256));
  set.keys.push_back(MakeKey("c", Alg::kEdDsa));
  EXPECT_EQ(SelectKey(set, std::nullopt, Alg::kEs256), nullptr);  // two ES256 keys: ambiguous
  EXPECT_EQ(SelectKey(set, std::nullopt, Alg::kEdDsa), &set.keys[2]);
  EXPECT_EQ(SelectKey(set, std::nullopt, Alg::kRs256), nullptr);
  KeySet duplicate_kid;
  duplicate_kid.keys.push_back(MakeKey("a", Alg::kEs256));
  duplicate_kid.keys.push_back(MakeKey("a", Alg::kEs256));
  EXPECT_EQ(SelectKey(duplicate_kid, "a", Alg::kEs256), nullptr);
}

TEST(VerifyKeyTest, EveryAlgorithmVerifiesItsOwnSignatureOnly) {
  for (Alg alg : {Alg::kRs256, Alg::kRs384, Alg::kRs512, Alg::kEs256, Alg::kEs384, Alg::kEdDsa}) {
    testing::Pkey pkey = testing::Generate(alg);
    auto key = VerifyKey::FromPem(alg, testing::PublicPem(pkey.get()));
    ASSERT_TRUE(key.ok()) << AlgName(alg);
    const std::string sig = testing::Sign(alg, pkey.get(), "input");
    EXPECT_TRUE((*key)->Verify("input", sig)) << AlgName(alg);
    EXPECT_FALSE((*key)->Verify("inpuT", sig)) << AlgName(alg);
    std::string flipped = sig;
    flipped[flipped.size() / 2] ^= 1;
    EXPECT_FALSE((*key)->Verify("input", flipped)) << AlgName(alg);
    EXPECT_FALSE((*key)->Verify("input", "")) << AlgName(alg);
  }
}

TEST(VerifyKeyTest, PemMustBeTheTypeAlgNeeds) {
  testing::Pkey p256 = testing::Generate(Alg::kEs256);
  const std::string pem = testing::PublicPem(p256.get());
  EXPECT_TRUE(VerifyKey::FromPem(Alg::kEs256, pem).ok());
  EXPECT_FALSE(VerifyKey::FromPem(Alg::kEs384, pem).ok());
  EXPECT_FALSE(VerifyKey::FromPem(Alg::kRs256, pem).ok());
  EXPECT_FALSE(VerifyKey::FromPem(Alg::kEdDsa, pem).ok());
  EXPECT_FALSE(VerifyKey::FromPem(Alg::kEs256, "not a pem").ok());
}

TEST(VerifyKeyTest, EcPointOffTheCurveIsRefused) {
  EXPECT_FALSE(
      VerifyKey::FromEcPoint(Alg::kEs256, std::string(32, '\1'), std::string(32, '\2')).ok());
  EXPECT_FALSE(
      VerifyKey::FromEcPoint(Alg::kEs256, std::string(31, '\1'), std::string(32, '\2')).ok());
  EXPECT_FALSE(VerifyKey::FromEd25519(std::string(31, '\1')).ok());
  EXPECT_FALSE(VerifyKey::FromRsa(Alg::kRs256, "", "\1").ok());
}

}  // namespace
}  // namespace xb::auth
