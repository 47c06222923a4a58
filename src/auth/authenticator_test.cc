#include "auth/authenticator.h"

#include <gtest/gtest.h>

#include <thread>

#include "auth/test_signer.h"

namespace xb::auth {
namespace {

constexpr std::string_view kPath = "/xmtp.backend.v1.QueryService/Query";
const std::string kApiKeyA(40, 'a');
const std::string kApiKeyB(40, 'b');

class AuthenticatorTest : public ::testing::Test {
 protected:
  AuthenticatorTest()
      : es256_(testing::Generate(Alg::kEs256)), ed_(testing::Generate(Alg::kEdDsa)) {}

  std::unique_ptr<Authenticator> Make(config::AuthConfig config, size_t cache_entries = 16384) {
    config.enabled = true;
    auto made =
        Authenticator::Create(config, AuthenticatorOptions{.identifier = "test.id",
                                                           .metrics = &metrics_,
                                                           .logger = &logger_,
                                                           .now_seconds = [this] { return now_; },
                                                           .cache_entries = cache_entries});
    EXPECT_TRUE(made.ok()) << made.status().message();
    return std::move(made).value();
  }

  config::AuthConfig InlineKeys() {
    config::AuthConfig config;
    config.keys.push_back(
        {.kid = "es", .alg = "ES256", .public_key = testing::PublicPem(es256_.get())});
    config.keys.push_back(
        {.kid = "ed", .alg = "EdDSA", .public_key = testing::PublicPem(ed_.get())});
    return config;
  }

  std::string Es256(std::string_view claims, std::string_view kid = "es") {
    return "Bearer " + testing::Token(Alg::kEs256, es256_.get(),
                                      "{\"alg\":\"ES256\",\"kid\":\"" + std::string(kid) + "\"}",
                                      claims);
  }

  std::optional<Rejection> Decide(Authenticator& auth, const std::string& header) {
    return auth.Decide(kPath, &header).rejection;
  }

  testing::Pkey es256_;
  testing::Pkey ed_;
  int64_t now_ = 1700000000;
  telemetry::Metrics metrics_{"test"};
  std::vector<std::string> lines_;
  telemetry::Logger logger_{
      telemetry::LoggerOptions{.level = telemetry::LogLevel::kDebug,
                               .format = telemetry::LogFormat::kJson,
                               .sink = [this](std::string_view line) { lines_.emplace_back(line); },
                               .clock = {}}};
};

// verifies: AUTH-002, CONF-010 — public paths are admitted and the header is never read.
TEST_F(AuthenticatorTest, PublicPathsNeedNoCredential) {
  auto auth = Make(InlineKeys());
  const std::string garbage = "\x01garbage";
  for (std::string_view path : {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch",
                                "/xmtp.backend.v1.ConfigurationService/GetConfiguration"}) {
    EXPECT_FALSE(auth->Decide(path, nullptr).rejection) << path;
    EXPECT_FALSE(auth->Decide(path, &garbage).rejection) << path;
  }
  // Prefixes are exact and case-sensitive; unknown paths need a credential (AUTH-001).
  for (std::string_view path : {"/GRPC.health.v1.Health/Check", "/grpc.health.v2.Health/Check",
                                "/xmtp.backend.v1.ConfigurationServiceX/Get", "/unknown"}) {
    EXPECT_EQ(auth->Decide(path, nullptr).rejection, Rejection::kMissing) << path;
  }
}

// verifies: AUTH-006, AUTH-007, AUTH-028
TEST_F(AuthenticatorTest, ApiKeysByDigest) {
  config::AuthConfig config;
  config.api_keys = {{"alpha", kApiKeyA}, {"beta", kApiKeyB}};
  auto auth = Make(config);
  const std::string a = "Bearer " + kApiKeyA;
  const std::string b = "bearer   " + kApiKeyB + " ";
  EXPECT_EQ(auth->Decide(kPath, &a).api_key_name, "alpha");
  EXPECT_FALSE(auth->Decide(kPath, &a).rejection);
  EXPECT_EQ(auth->Decide(kPath, &b).api_key_name, "beta");
  // No JWT source: a miss is untrusted, whatever the token looks like.
  EXPECT_EQ(Decide(*auth, "Bearer " + std::string(40, 'c')), Rejection::kUntrusted);
  EXPECT_EQ(Decide(*auth, Es256(R"({"exp":1800000000})")), Rejection::kUntrusted);
}

TEST_F(AuthenticatorTest, ApiKeyMissGoesToJwt) {
  config::AuthConfig config = InlineKeys();
  config.api_keys = {{"alpha", kApiKeyA}};
  auto auth = Make(config);
  EXPECT_EQ(Decide(*auth, "Bearer " + std::string(40, 'c')), Rejection::kNotJwt);
  EXPECT_FALSE(Decide(*auth, Es256(R"({"exp":1800000000})")));
}

// verifies: AUTH-009, AUTH-010 — a token signed by another key, or naming an unknown kid, is
// untrusted; an alg the selected key does not have is untrusted.
TEST_F(AuthenticatorTest, SignatureAndKeySelection) {
  auto auth = Make(InlineKeys());
  EXPECT_FALSE(Decide(*auth, Es256(R"({"exp":1800000000})")));
  EXPECT_EQ(Decide(*auth, Es256(R"({"exp":1800000000})", "nope")), Rejection::kUntrusted);
  EXPECT_EQ(Decide(*auth, Es256(R"({"exp":1800000000})", "ed")), Rejection::kUntrusted);
  testing::Pkey other = testing::Generate(Alg::kEs256);
  const std::string forged =
      "Bearer " + testing::Token(Alg::kEs256, other.get(), R"({"alg":"ES256","kid":"es"})",
                                 R"({"exp":1800000000})");
  EXPECT_EQ(Decide(*auth, forged), Rejection::kUntrusted);
  // Without kid: selected by alg.
  const std::string by_alg =
      "Bearer " +
      testing::Token(Alg::kEdDsa, ed_.get(), R"({"alg":"EdDSA"})", R"({"exp":1800000000})");
  EXPECT_FALSE(Decide(*auth, by_alg));
  // The signature is checked before claims: an expired forged token is untrusted, not expired.
  const std::string forged_expired =
      "Bearer " +
      testing::Token(Alg::kEs256, other.get(), R"({"alg":"ES256","kid":"es"})", R"({"exp":1})");
  EXPECT_EQ(Decide(*auth, forged_expired), Rejection::kUntrusted);
}

// verifies: issue 32 (quotas) — a verified JWT yields its subject, from the cache too; a token
// without one yields none, and a subject of the wrong type is still refused (AUTH-031).
TEST_F(AuthenticatorTest, JwtSubjectIsThePrincipal) {
  auto auth = Make(InlineKeys(), /*cache_entries=*/64);
  const std::string token = Es256(R"({"exp":1800000000,"sub":"user-7"})");
  for (int i = 0; i < 2; ++i) {  // verified, then from the cache
    const Decision decision = auth->Decide(kPath, &token);
    EXPECT_FALSE(decision.rejection);
    EXPECT_EQ(decision.jwt_subject, "user-7") << i;
    EXPECT_EQ(decision.api_key_name, "");
  }
  const std::string anonymous = Es256(R"({"exp":1800000000})");
  EXPECT_EQ(auth->Decide(kPath, &anonymous).jwt_subject, "");
  auto admitted = auth->Admit(kPath, &token, "123e4567-e89b-42d3-a456-426614174000");
  ASSERT_TRUE(admitted.ok());
  EXPECT_EQ(admitted->jwt_subject, "user-7");
  EXPECT_EQ(Decide(*auth, Es256(R"({"exp":1800000000,"sub":7})")), Rejection::kNotJwt);
}

TEST_F(AuthenticatorTest, ClaimPolicyFromConfig) {
  config::AuthConfig config = InlineKeys();
  config.audiences = std::vector<std::string>{"xmtp"};
  config.issuers = std::vector<std::string>{"https://issuer"};
  config.required_scopes = {"messages"};
  auto auth = Make(config);
  EXPECT_FALSE(Decide(
      *auth,
      Es256(R"({"exp":1800000000,"aud":"xmtp","iss":"https://issuer","scope":"messages other"})")));
  EXPECT_EQ(
      Decide(*auth,
             Es256(R"({"exp":1800000000,"aud":"x","iss":"https://issuer","scope":"messages"})")),
      Rejection::kAudience);
  EXPECT_EQ(
      Decide(*auth,
             Es256(R"({"exp":1800000000,"aud":"xmtp","iss":"https://other","scope":"messages"})")),
      Rejection::kIssuer);
  EXPECT_EQ(Decide(*auth, Es256(R"({"exp":1800000000,"aud":"xmtp","iss":"https://issuer"})")),
            Rejection::kScope);
}

// The verified-token cache re-checks time on every hit and is dropped with the key set.
TEST_F(AuthenticatorTest, CachedTokenStillExpiresAndDiesWithTheKeySet) {
  auto auth = Make(InlineKeys());
  const std::string token = Es256(R"({"exp":1700000100,"nbf":1699999990})");
  EXPECT_FALSE(Decide(*auth, token));
  EXPECT_FALSE(Decide(*auth, token));  // from the cache
  now_ = 1700000161;
  EXPECT_EQ(Decide(*auth, token), Rejection::kExpired);
  now_ = 1699999900;
  EXPECT_EQ(Decide(*auth, token), Rejection::kNotYetValid);
  now_ = 1700000000;
  EXPECT_FALSE(Decide(*auth, token));
  // The provider withdraws the key: the cached verification no longer counts.
  testing::Pkey other = testing::Generate(Alg::kEdDsa);
  auto replacement = VerifyKey::FromPem(Alg::kEdDsa, testing::PublicPem(other.get()));
  ASSERT_TRUE(replacement.ok());
  std::vector<Key> keys;
  keys.push_back(Key{.kid = "ed2", .alg = Alg::kEdDsa, .key = std::move(replacement).value()});
  auth->ReplaceKeySet(std::move(keys));
  EXPECT_EQ(Decide(*auth, token), Rejection::kUntrusted);
}

TEST_F(AuthenticatorTest, CacheIsBounded) {
  auto auth = Make(InlineKeys(), /*cache_entries=*/32);
  for (int i = 0; i < 200; ++i) {
    EXPECT_FALSE(Decide(*auth, Es256("{\"exp\":1800000000,\"n\":" + std::to_string(i) + "}")));
  }
  // Still correct after evictions.
  EXPECT_FALSE(Decide(*auth, Es256(R"({"exp":1800000000,"n":0})")));
  EXPECT_EQ(Decide(*auth, Es256(R"({"exp":1})")), Rejection::kExpired);
}

// verifies: AUTH-014, AUTH-027 — the counter and the log line: exactly request_id, identifier,
// reason; nothing of the token.
TEST_F(AuthenticatorTest, AdmitCountsAndLogsRejections) {
  config::AuthConfig config;
  config.api_keys = {{"alpha", kApiKeyA}};
  auto auth = Make(config);
  const std::string secret = "Bearer " + std::string(40, 'z');
  auto result = auth->Admit(kPath, &secret, "123e4567-e89b-42d3-a456-426614174000");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(result.status().message(), "token signature is not trusted");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(
      lines_[0].find(
          R"("msg":"authentication rejected","request_id":"123e4567-e89b-42d3-a456-426614174000","identifier":"test.id","reason":"untrusted"})"),
      std::string::npos)
      << lines_[0];
  EXPECT_EQ(lines_[0].find("zzzz"), std::string::npos);
  const std::string exposition = metrics_.Exposition();
  EXPECT_NE(exposition.find("xmtp_auth_rejections_total{reason=\"untrusted\"} 1"),
            std::string::npos);
  const std::string good = "Bearer " + kApiKeyA;
  auto admitted = auth->Admit(kPath, &good, "123e4567-e89b-42d3-a456-426614174000");
  ASSERT_TRUE(admitted.ok());
  EXPECT_EQ(admitted->api_key_name, "alpha");
  EXPECT_EQ(admitted->jwt_subject, "");
  EXPECT_EQ(lines_.size(), 1u);
}

// Workers decide while the refresher replaces the key set (the threading contract of
// authenticator.h; meaningful under TSan).
TEST_F(AuthenticatorTest, ConcurrentDecisionsWhileTheKeySetIsReplaced) {
  config::AuthConfig config = InlineKeys();
  config.api_keys = {{"alpha", kApiKeyA}};
  auto auth = Make(config, /*cache_entries=*/64);
  const std::string token = Es256(R"({"exp":1800000000})");
  const std::string api_key = "Bearer " + kApiKeyA;
  std::atomic<int> refused{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string own =
            Es256("{\"exp\":1800000000,\"t\":" + std::to_string(t * 1000 + i) + "}");
        for (const std::string* header : {&token, &api_key, &own}) {
          if (auth->Decide(kPath, header).rejection) {
            refused.fetch_add(1);
          }
        }
      }
    });
  }
  for (int i = 0; i < 50; ++i) {
    auto key = VerifyKey::FromPem(Alg::kEs256, testing::PublicPem(es256_.get()));
    ASSERT_TRUE(key.ok());
    std::vector<Key> keys;
    keys.push_back(Key{.kid = "es", .alg = Alg::kEs256, .key = std::move(key).value()});
    auth->ReplaceKeySet(std::move(keys));
  }
  for (auto& w : workers) {
    w.join();
  }
  EXPECT_EQ(refused.load(), 0);  // the same key under every generation
  EXPECT_EQ(auth->key_set()->keys.size(), 1u);
}

TEST_F(AuthenticatorTest, InlineKeyOfTheWrongTypeIsRefusedNamingTheIndex) {
  config::AuthConfig config;
  config.enabled = true;
  config.keys.push_back(
      {.kid = "k", .alg = "ES384", .public_key = testing::PublicPem(es256_.get())});
  auto made = Authenticator::Create(config, AuthenticatorOptions{});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("auth.keys[0]"), std::string::npos);
  EXPECT_EQ(made.status().message().find("BEGIN"), std::string::npos);
}

}  // namespace
}  // namespace xb::auth
