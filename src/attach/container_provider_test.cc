// container against a plain loopback fake behind 169.254.170.2 (and the other allowed hosts).
#include <gtest/gtest.h>

#include "attach/http_sources.h"
#include "attach/http_sources_test_support.h"

namespace xb::attach {
namespace {

using testing::Epoch;
using testing::ScriptedReply;

ScriptedReply Credentials(const std::string& key) {
  return ScriptedReply{
      .status = 200,
      .body = R"({"AccessKeyId":")" + key +
              R"(","SecretAccessKey":"sk","Token":"st","Expiration":"2023-11-14T23:13:20Z",)"
              R"("RoleArn":"arn:aws:iam::1:role/task"})"};
}

class ContainerTest : public testing::HttpSourceTest {
 protected:
  void SetUp() override {
    Start(Scheme::kHttp,
          {"169.254.170.2", "169.254.170.23", "fd00:ec2::23", "creds.example.com", "example.com"});
  }
};

// verifies: ATCH-073
TEST_F(ContainerTest, RelativeUriIsAskedOn169_254_170_2WithTheToken) {
  env_["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/v2/credentials/abc?x=1";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "Basic dG9rZW4=";
  replies_ = {Credentials("ASIATASK")};
  auto provider = MakeContainerProvider(Context());
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "ASIATASK");
  EXPECT_EQ(result->secret_access_key, "sk");
  EXPECT_EQ(result->session_token, "st");
  EXPECT_EQ(result->expiry, Epoch(1700003600));
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].method, "GET");
  EXPECT_EQ(requests_[0].path, "/v2/credentials/abc?x=1");
  EXPECT_EQ(requests_[0].Header("host"), "169.254.170.2");
  EXPECT_EQ(requests_[0].Header("authorization"), "Basic dG9rZW4=");
}

// verifies: ATCH-073
TEST_F(ContainerTest, TheTokenFileWinsAndIsReadAtEachFetch) {
  env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] =
      "http://127.0.0.1:" + std::to_string(server_->port()) + "/creds";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "from-env";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = WriteFile("token", "from-file-1");
  replies_ = {Credentials("A1"), Credentials("A2")};
  auto provider = MakeContainerProvider(Context());
  ASSERT_TRUE(Fetch(*provider).ok());
  WriteFile("token", "from-file-2");
  ASSERT_TRUE(Fetch(*provider).ok());
  ASSERT_EQ(requests_.size(), 2u);
  EXPECT_EQ(requests_[0].path, "/creds");
  EXPECT_EQ(requests_[0].Header("authorization"), "from-file-1");
  EXPECT_EQ(requests_[1].Header("authorization"), "from-file-2");

  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = (Dir() / "absent").string();
  EXPECT_EQ(Fetch(*provider).error().message,
            "the container authorization token file cannot be read");
  EXPECT_EQ(requests_.size(), 2u);
}

// verifies: ATCH-073
TEST_F(ContainerTest, PlainHttpFullUriOnlyOnLoopbackAndTheEcsAndEksAddresses) {
  replies_ = {Credentials("A1"), Credentials("A2"), Credentials("A3")};
  auto provider = MakeContainerProvider(Context());
  for (const std::string uri :
       {"http://169.254.170.2/c", "http://169.254.170.23/c", "http://[fd00:ec2::23]/c"}) {
    env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = uri;
    EXPECT_TRUE(Fetch(*provider).ok()) << uri;
  }
  EXPECT_EQ(requests_.size(), 3u);
  for (const std::string uri : {"http://example.com/c", "http://169.254.169.254/c",
                                "http://10.0.0.1/c", "http://user@127.0.0.1/c", "ftp://x/c"}) {
    env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = uri;
    auto result = Fetch(*provider);
    ASSERT_FALSE(result.ok()) << uri;
    EXPECT_EQ(result.error().kind, CredentialFailure::kInvalidConfiguration) << uri;
  }
  EXPECT_EQ(requests_.size(), 3u);
  // https may name any host: this one is asked (and its TLS handshake with the plain fake fails).
  env_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "https://creds.example.com/c";
  auto https = Fetch(*provider);
  ASSERT_FALSE(https.ok());
  EXPECT_EQ(https.error().kind, CredentialFailure::kUnavailable);
}

// verifies: ATCH-073
TEST_F(ContainerTest, NotConfiguredAndBadValuesAreRefusedWithoutARequest) {
  auto provider = MakeContainerProvider(Context());
  EXPECT_EQ(KindName(Fetch(*provider)), "unavailable");
  env_["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "@example.com/c";
  EXPECT_EQ(KindName(Fetch(*provider)), "invalid configuration");
  env_["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/c";
  env_["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "a\r\nx-injected: 1";
  EXPECT_EQ(KindName(Fetch(*provider)), "invalid configuration");
  EXPECT_TRUE(requests_.empty());
}

// verifies: ATCH-073
TEST_F(ContainerTest, ServerErrorsAreAskedAgainUpToThreeTimesAndRefusalsAreNot) {
  env_["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/c";
  replies_ = {ScriptedReply{.status = 500}, ScriptedReply{.status = 503}, Credentials("A3"),
              ScriptedReply{.status = 403, .body = "secret"}};
  auto provider = MakeContainerProvider(Context());
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->access_key_id, "A3");
  EXPECT_EQ(requests_.size(), 3u);
  auto refused = Fetch(*provider);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "the container credential endpoint refused the request");
  EXPECT_EQ(requests_.size(), 4u);
}

// verifies: ATCH-073
TEST_F(ContainerTest, AnAnswerWithoutKeysIsUnavailable) {
  env_["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/c";
  replies_ = {ScriptedReply{.status = 200, .body = R"({"AccessKeyId":"AKID","Token":"t"})"},
              ScriptedReply{.status = 200,
                            .body = R"({"AccessKeyId":"A","SecretAccessKey":"S",)"
                                    R"("Expiration":"soon"})"}};
  auto provider = MakeContainerProvider(Context());
  for (int i = 0; i < 2; ++i) {
    auto result = Fetch(*provider);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().message, "the container credential answer is not usable");
  }
}

}  // namespace
}  // namespace xb::attach
