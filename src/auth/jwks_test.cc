#include "auth/jwks.h"

#include <gtest/gtest.h>

#include "auth/jwks_fetch.h"
#include "auth/test_signer.h"

namespace xb::auth {
namespace {

// verifies: AUTH-016, AUTH-018 (no usable entry fails), AUTH-033 (key count)
TEST(JwksParseTest, UsableEntriesInDocumentOrder) {
  testing::Pkey rsa = testing::Generate(Alg::kRs256);
  testing::Pkey p256 = testing::Generate(Alg::kEs256);
  testing::Pkey p384 = testing::Generate(Alg::kEs384);
  testing::Pkey ed = testing::Generate(Alg::kEdDsa);
  const std::string doc = "{\"keys\":[" + testing::Jwk(Alg::kRs384, rsa.get(), R"("kid":"r")") +
                          "," + testing::Jwk(Alg::kEs256, p256.get(), R"("kid":"e","use":"sig")") +
                          "," + testing::Jwk(Alg::kEs384, p384.get(), "") + "," +
                          testing::Jwk(Alg::kEdDsa, ed.get(), R"("kid":"d")") + "," +
                          // Skipped: use enc, HS256, a kid that is not a string, a curve that does
                          // not fit alg, no alg, not an object, undecodable material.
                          testing::Jwk(Alg::kEs256, p256.get(), R"("kid":"enc","use":"enc")") +
                          "," + R"({"alg":"HS256","kty":"oct","k":"AAAA"},)" +
                          testing::Jwk(Alg::kEdDsa, ed.get(), R"("kid":7)") + "," +
                          R"({"alg":"ES256","kty":"EC","crv":"P-384","x":"AA","y":"AA"},)" +
                          R"({"kty":"OKP","crv":"Ed25519","x":"AA"},)" + "5," +
                          R"({"alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"!!"}]})";
  size_t skipped = 0;
  auto keys = ParseJwks(doc, [&] { ++skipped; });
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  ASSERT_EQ(keys->size(), 4u);
  EXPECT_EQ(skipped, 7u);
  EXPECT_EQ((*keys)[0].kid, "r");
  EXPECT_EQ((*keys)[0].alg, Alg::kRs384);
  EXPECT_EQ((*keys)[1].kid, "e");
  EXPECT_FALSE((*keys)[2].kid);
  EXPECT_EQ((*keys)[2].alg, Alg::kEs384);
  EXPECT_EQ((*keys)[3].alg, Alg::kEdDsa);
  // The decoded material verifies signatures made by the private keys.
  EXPECT_TRUE((*keys)[0].key->Verify("m", testing::Sign(Alg::kRs384, rsa.get(), "m")));
  EXPECT_TRUE((*keys)[1].key->Verify("m", testing::Sign(Alg::kEs256, p256.get(), "m")));
  EXPECT_TRUE((*keys)[2].key->Verify("m", testing::Sign(Alg::kEs384, p384.get(), "m")));
  EXPECT_TRUE((*keys)[3].key->Verify("m", testing::Sign(Alg::kEdDsa, ed.get(), "m")));
}

TEST(JwksParseTest, FailedDocuments) {
  EXPECT_FALSE(ParseJwks("", nullptr).ok());
  EXPECT_FALSE(ParseJwks("[]", nullptr).ok());
  EXPECT_FALSE(ParseJwks(R"({"keys":{}})", nullptr).ok());
  EXPECT_FALSE(ParseJwks(R"({"keys":[]})", nullptr).ok());
  EXPECT_FALSE(ParseJwks(R"({"keys":[{"alg":"none"}]})", nullptr).ok());
  EXPECT_FALSE(ParseJwks(std::string(kMaxJwksBodyBytes + 1, ' '), nullptr).ok());
}

TEST(JwksParseTest, KeepsAtMost64UsableEntries) {
  testing::Pkey ed = testing::Generate(Alg::kEdDsa);
  std::string doc = "{\"keys\":[";
  for (int i = 0; i < 70; ++i) {
    doc += (i ? "," : "") +
           testing::Jwk(Alg::kEdDsa, ed.get(), "\"kid\":\"k" + std::to_string(i) + "\"");
  }
  doc += "]}";
  auto keys = ParseJwks(doc, nullptr);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->size(), 64u);
  EXPECT_EQ(keys->back().kid, "k63");
}

TEST(JwksParseTest, StopsExaminingAfter256Entries) {
  testing::Pkey ed = testing::Generate(Alg::kEdDsa);
  std::string doc = "{\"keys\":[";
  for (int i = 0; i < 256; ++i) {
    doc += "{},";
  }
  doc += testing::Jwk(Alg::kEdDsa, ed.get(), "") + "]}";
  size_t skipped = 0;
  EXPECT_FALSE(ParseJwks(doc, [&] { ++skipped; }).ok());
  EXPECT_EQ(skipped, 256u);
}

TEST(JwksSourceTest, TargetsAndSchemes) {
  auto https = ParseJwksSource("https://issuer.example/.well-known/jwks.json?x=1#frag");
  ASSERT_TRUE(https.ok());
  EXPECT_TRUE(https->tls);
  EXPECT_EQ(https->host, "issuer.example");
  EXPECT_EQ(https->port, "443");
  EXPECT_EQ(https->host_header, "issuer.example");
  EXPECT_EQ(https->target, "/.well-known/jwks.json?x=1");
  auto local = ParseJwksSource("http://127.0.0.1:8080");
  ASSERT_TRUE(local.ok());
  EXPECT_FALSE(local->tls);
  EXPECT_TRUE(local->host_is_ip);
  EXPECT_EQ(local->host_header, "127.0.0.1:8080");
  EXPECT_EQ(local->target, "/");
  EXPECT_FALSE(ParseJwksSource("http://issuer.example/jwks").ok());
  EXPECT_FALSE(ParseJwksSource("ftp://127.0.0.1/jwks").ok());
}

}  // namespace
}  // namespace xb::auth
