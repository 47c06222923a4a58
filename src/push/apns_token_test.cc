#include "push/apns_token.h"

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>

#include "push/channel_test_support.h"

namespace xb::push {
namespace {

using namespace std::chrono_literals;
using testing::EcKey;
using testing::ManualClock;
using testing::SplitJwt;

// Verifies a raw R||S ES256 signature with OpenSSL (converted to DER for EVP_DigestVerify).
bool VerifyEs256(EVP_PKEY* key, const std::string& input, const std::string& raw) {
  if (raw.size() != 64) {
    return false;
  }
  ECDSA_SIG* sig = ECDSA_SIG_new();
  ECDSA_SIG_set0(sig, BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr),
                 BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int der_size = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, der, static_cast<size_t>(der_size),
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  OPENSSL_free(der);
  return ok;
}

config::ApnsConfig Config(const std::string& pem) {
  return config::ApnsConfig{.key = pem,
                            .key_id = "KEY123",
                            .team_id = "TEAM456",
                            .bundle_id = "org.example.app",
                            .environment = "sandbox"};
}

// verifies: PUSH-259
TEST(ApnsToken, IsAnEs256JwtWithExactlyIssAndIatThatOpenSslVerifies) {
  auto key = EcKey();
  ManualClock clock;
  auto source = ApnsTokenSource::Create(Config(key->pem), clock.Get());
  ASSERT_TRUE(source.ok()) << source.error();
  auto token = (*source)->Token();
  ASSERT_TRUE(token.ok());
  auto parts = SplitJwt(*token);
  EXPECT_EQ(parts.header, R"({"alg":"ES256","kid":"KEY123"})");
  EXPECT_EQ(parts.claims, R"({"iss":"TEAM456","iat":1700000000})");
  EXPECT_TRUE(VerifyEs256(key->key, parts.signing_input, parts.signature));
  EXPECT_EQ(token->find('='), std::string::npos);
}

// verifies: PUSH-259
TEST(ApnsToken, IsSharedFor3300SecondsThenResigned) {
  auto key = EcKey();
  ManualClock clock;
  auto source = std::move(ApnsTokenSource::Create(Config(key->pem), clock.Get())).value();
  const std::string first = source->Token().value();
  clock.Advance(3299s);
  EXPECT_EQ(source->Token().value(), first);
  clock.Advance(1s);
  const std::string second = source->Token().value();
  EXPECT_NE(second, first);
  EXPECT_EQ(SplitJwt(second).claims, R"({"iss":"TEAM456","iat":1700003300})");
}

// verifies: PUSH-259
TEST(ApnsToken, DiscardOfTheSharedTokenSignsANewOne) {
  auto key = EcKey();
  ManualClock clock;
  auto source = std::move(ApnsTokenSource::Create(Config(key->pem), clock.Get())).value();
  const std::string first = source->Token().value();
  source->Discard("some older token");
  EXPECT_EQ(source->Token().value(), first);
  source->Discard(first);
  const std::string second = source->Token().value();
  EXPECT_NE(second, first);  // ECDSA signatures are randomized
  EXPECT_TRUE(VerifyEs256(key->key, SplitJwt(second).signing_input, SplitJwt(second).signature));
}

TEST(ApnsToken, RefusesAKeyThatIsNotP256) {
  auto rsa = testing::RsaKey();
  ManualClock clock;
  EXPECT_FALSE(ApnsTokenSource::Create(Config(rsa->pem), clock.Get()).ok());
  EXPECT_FALSE(ApnsTokenSource::Create(Config("not a key"), clock.Get()).ok());
}

TEST(CheckApnsKeySigns, NamesTheKeyNeverItsValue) {
  auto key = EcKey();
  EXPECT_TRUE(CheckApnsKeySigns(Config(key->pem)).ok());
  auto rsa = testing::RsaKey();
  Status refused = CheckApnsKeySigns(Config(rsa->pem));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("push.apns.key"), std::string::npos);
  EXPECT_EQ(refused.message().find("PRIVATE"), std::string::npos);
}

}  // namespace
}  // namespace xb::push
