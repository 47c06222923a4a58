// sso against a loopback TLS fake behind portal.sso.us-east-1.amazonaws.com, with the token cache
// under a temporary HOME.
#include <gtest/gtest.h>

#include "attach/http_sources.h"
#include "attach/http_sources_test_support.h"

namespace xb::attach {
namespace {

using testing::Epoch;
using testing::ScriptedReply;

constexpr char kStartUrl[] = "https://d-abc123.awsapps.com/start";
// sha1 of kStartUrl and of "my-sso" (computed with Python's hashlib).
constexpr char kStartUrlCache[] = ".aws/sso/cache/40a89917e3175433e361b710a9d43528d7f1890a.json";
constexpr char kSessionCache[] = ".aws/sso/cache/0ad374308c5a4e22f723adf10145eafad7c4031c.json";

ScriptedReply RoleCredentials(const std::string& key) {
  return ScriptedReply{.status = 200,
                       .body = R"({"roleCredentials":{"accessKeyId":")" + key +
                               R"(","secretAccessKey":"sk","sessionToken":"st",)"
                               R"("expiration":1700003600123}})"};
}

std::string Cache(const std::string& token, const std::string& expires_at) {
  return R"({"startUrl":"https://d-abc123.awsapps.com/start","region":"us-east-1",)"
         R"("accessToken":")" +
         token + R"(","expiresAt":")" + expires_at + R"("})";
}

class SsoTest : public testing::HttpSourceTest {
 protected:
  void SetUp() override {
    Start(Scheme::kHttps, {"portal.sso.us-east-1.amazonaws.com"});
    env_["HOME"] = Dir().string();
  }

  SsoSettings Settings(std::string session_name = "") const {
    return SsoSettings{.account_id = "123456789012",
                       .region = "us-east-1",
                       .role_name = "Dev Role",
                       .start_url = kStartUrl,
                       .session_name = std::move(session_name)};
  }
};

// verifies: ATCH-073
TEST_F(SsoTest, TheCachedTokenBuysRoleCredentialsFromThePortal) {
  WriteFile(kStartUrlCache, Cache("sso-access-1", "2023-11-14T23:00:00Z"));
  replies_ = {RoleCredentials("ASIASSO")};
  auto provider = MakeSsoProvider(Context(), Settings());
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "ASIASSO");
  EXPECT_EQ(result->secret_access_key, "sk");
  EXPECT_EQ(result->session_token, "st");
  EXPECT_EQ(result->expiry, Epoch(1700003600) + std::chrono::milliseconds(123));
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].method, "GET");
  EXPECT_EQ(requests_[0].path,
            "/federation/credentials?account_id=123456789012&role_name=Dev%20Role");
  EXPECT_EQ(requests_[0].Header("host"), "portal.sso.us-east-1.amazonaws.com");
  EXPECT_EQ(requests_[0].Header("x-amz-sso_bearer_token"), "sso-access-1");
}

// verifies: ATCH-073
TEST_F(SsoTest, ASessionNameKeysTheCacheInsteadOfTheStartUrl) {
  WriteFile(kStartUrlCache, Cache("legacy", "2023-11-14T23:00:00Z"));
  WriteFile(kSessionCache, Cache("session", "2023-11-14T23:00:00Z"));
  replies_ = {RoleCredentials("ASIASSO")};
  auto provider = MakeSsoProvider(Context(), Settings("my-sso"));
  ASSERT_TRUE(Fetch(*provider).ok());
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].Header("x-amz-sso_bearer_token"), "session");
}

// verifies: ATCH-073
TEST_F(SsoTest, AnExpiredOrMissingTokenIsUnavailableWithoutAskingThePortal) {
  auto provider = MakeSsoProvider(Context(), Settings());
  EXPECT_EQ(Fetch(*provider).error().message, "the SSO token cache cannot be read");
  WriteFile(kStartUrlCache, Cache("old", "2023-11-14T22:13:20Z"));
  EXPECT_EQ(Fetch(*provider).error().message, "the SSO access token has expired");
  WriteFile(kStartUrlCache, R"({"accessToken":"no-expiry"})");
  EXPECT_EQ(Fetch(*provider).error().message, "the SSO token cache is not usable");
  env_.erase("HOME");
  EXPECT_EQ(Fetch(*provider).error().message, "the SSO token cache cannot be found");
  EXPECT_TRUE(requests_.empty());
}

// verifies: ATCH-073
TEST_F(SsoTest, APortalRefusalOrAnUnusableAnswerIsUnavailable) {
  WriteFile(kStartUrlCache, Cache("sso-access-1", "2023-11-14T23:00:00Z"));
  replies_ = {ScriptedReply{.status = 401, .body = R"({"message":"sso-access-1"})"},
              ScriptedReply{.status = 200, .body = R"({"roleCredentials":{"accessKeyId":"A"}})"}};
  auto provider = MakeSsoProvider(Context(), Settings());
  auto refused = Fetch(*provider);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, CredentialFailure::kUnavailable);
  EXPECT_EQ(refused.error().message, "the SSO portal refused the request");
  EXPECT_EQ(Fetch(*provider).error().message, "the SSO role credential answer is not usable");
}

}  // namespace
}  // namespace xb::attach
