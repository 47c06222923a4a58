// web_identity against a loopback TLS fake behind sts.us-east-1.amazonaws.com.
#include <gtest/gtest.h>

#include "attach/http_sources.h"
#include "attach/http_sources_test_support.h"

namespace xb::attach {
namespace {

using testing::Epoch;
using testing::FormField;
using testing::ScriptedReply;

ScriptedReply StsAnswer(const std::string& action, const std::string& key) {
  return ScriptedReply{
      .status = 200,
      .headers = {{"content-type", "text/xml"}},
      .body = "<" + action + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" +
              action + "Result><Credentials><AccessKeyId>" + key +
              "</AccessKeyId><SecretAccessKey>sk</SecretAccessKey><SessionToken>st</SessionToken>"
              "<Expiration>2023-11-14T23:13:20.123Z</Expiration></Credentials></" +
              action + "Result></" + action + "Response>"};
}

class WebIdentityTest : public testing::HttpSourceTest {
 protected:
  void SetUp() override {
    Start(Scheme::kHttps, {"sts.us-east-1.amazonaws.com"});
    env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = WriteFile("token", "jwt-one");
    env_["AWS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/web";
    env_["AWS_ROLE_SESSION_NAME"] = "session-1";
  }
};

// verifies: ATCH-073
TEST_F(WebIdentityTest, PostsAnUnsignedAssumeRoleWithWebIdentityFromTheEnvironment) {
  replies_ = {StsAnswer("AssumeRoleWithWebIdentity", "ASIA1")};
  auto provider = MakeWebIdentityProvider(Context(), {});
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "ASIA1");
  EXPECT_EQ(result->secret_access_key, "sk");
  EXPECT_EQ(result->session_token, "st");
  EXPECT_EQ(result->expiry, Epoch(1700003600) + std::chrono::milliseconds(123));

  ASSERT_EQ(requests_.size(), 1u);
  const auto& request = requests_[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/");
  EXPECT_EQ(request.Header("host"), "sts.us-east-1.amazonaws.com");
  EXPECT_EQ(request.Header("content-type"), "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_EQ(request.Header("authorization"), "");
  EXPECT_TRUE(request.body.starts_with("Action=AssumeRoleWithWebIdentity&Version=2011-06-15&"));
  EXPECT_EQ(FormField(request.body, "RoleArn"), "arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fweb");
  EXPECT_EQ(FormField(request.body, "RoleSessionName"), "session-1");
  EXPECT_EQ(FormField(request.body, "WebIdentityToken"), "jwt-one");
  EXPECT_EQ(FormField(request.body, "DurationSeconds"), std::nullopt);
}

// verifies: ATCH-073
TEST_F(WebIdentityTest, ReadsTheTokenFileAtEachFetchAndGeneratesASessionName) {
  env_.erase("AWS_ROLE_SESSION_NAME");
  replies_ = {StsAnswer("AssumeRoleWithWebIdentity", "ASIA1"),
              StsAnswer("AssumeRoleWithWebIdentity", "ASIA2")};
  auto provider = MakeWebIdentityProvider(Context(), {});
  ASSERT_TRUE(Fetch(*provider).ok());
  WriteFile("token", "jwt-two");
  now_ += std::chrono::seconds(10);
  auto second = Fetch(*provider);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->access_key_id, "ASIA2");
  ASSERT_EQ(requests_.size(), 2u);
  EXPECT_EQ(FormField(requests_[0].body, "WebIdentityToken"), "jwt-one");
  EXPECT_EQ(FormField(requests_[0].body, "RoleSessionName"), "xmtp-backend-1700000000");
  EXPECT_EQ(FormField(requests_[1].body, "WebIdentityToken"), "jwt-two");
  EXPECT_EQ(FormField(requests_[1].body, "RoleSessionName"), "xmtp-backend-1700000010");
}

// verifies: ATCH-073
TEST_F(WebIdentityTest, ConfiguredSettingsWinOverTheEnvironment) {
  replies_ = {StsAnswer("AssumeRoleWithWebIdentity", "ASIA1")};
  auto provider = MakeWebIdentityProvider(
      Context(), WebIdentitySettings{.token_file = WriteFile("other", "jwt-profile"),
                                     .role_arn = "arn:aws:iam::1:role/p",
                                     .session_name = "profile-session"});
  ASSERT_TRUE(Fetch(*provider).ok());
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(FormField(requests_[0].body, "WebIdentityToken"), "jwt-profile");
  EXPECT_EQ(FormField(requests_[0].body, "RoleArn"), "arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fp");
  EXPECT_EQ(FormField(requests_[0].body, "RoleSessionName"), "profile-session");
}

// verifies: ATCH-073
TEST_F(WebIdentityTest, AMissingTokenFileIsUnavailableWithoutAskingSts) {
  env_["AWS_WEB_IDENTITY_TOKEN_FILE"] = (Dir() / "absent").string();
  auto provider = MakeWebIdentityProvider(Context(), {});
  auto result = Fetch(*provider);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
  EXPECT_EQ(result.error().message, "the web identity token file cannot be read");
  env_.erase("AWS_ROLE_ARN");
  EXPECT_EQ(Fetch(*provider).error().message, "web identity is not configured");
  EXPECT_TRUE(requests_.empty());
}

// verifies: ATCH-073
TEST_F(WebIdentityTest, AnStsRefusalIsUnavailableAndItsBodyIsNotRepeated) {
  replies_ = {ScriptedReply{
      .status = 400,
      .body = "<ErrorResponse><Error><Code>InvalidIdentityToken</Code><Message>jwt-one "
              "arn:aws:iam::123456789012:role/web</Message></Error></ErrorResponse>"}};
  auto provider = MakeWebIdentityProvider(Context(), {});
  auto result = Fetch(*provider);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
  EXPECT_EQ(result.error().message, "the STS endpoint refused the request");
}

// verifies: ATCH-073
TEST_F(WebIdentityTest, AnStsThatDoesNotAnswerIsUnavailable) {
  http_.reset();
  auto pins = net::HttpClientOptions{.ca_file = pki_->ca_file};
  // A port nothing listens on: the connection is refused at once.
  boost::asio::ip::tcp::acceptor probe(io_, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t closed = probe.local_endpoint().port();
  probe.close();
  pins.static_hosts.emplace(
      "sts.us-east-1.amazonaws.com",
      boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), closed));
  http_ = std::move(net::HttpClient::Create(io_.get_executor(), std::move(pins))).value();
  auto provider = MakeWebIdentityProvider(Context(), {});
  auto result = Fetch(*provider);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "the STS endpoint did not answer");
}

}  // namespace
}  // namespace xb::attach
