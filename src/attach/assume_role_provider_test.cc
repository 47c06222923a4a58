// assume_role against a loopback TLS fake behind sts.us-east-1.amazonaws.com: the request is
// signed (SigV4 header form, service sts) with what the source provider answered.
#include <gtest/gtest.h>

#include "attach/http_sources.h"
#include "attach/http_sources_test_support.h"
#include "attach/sigv4.h"

namespace xb::attach {
namespace {

using testing::FixedProvider;
using testing::FormField;
using testing::ScriptedReply;

const AwsCredentials kSource{.access_key_id = "AKIDSOURCE",
                             .secret_access_key = "source-secret",
                             .session_token = "source-token"};

ScriptedReply Assumed(const std::string& key) {
  return ScriptedReply{
      .status = 200,
      .body =
          "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
          "<AssumeRoleResult><AssumedRoleUser><Arn>x</Arn></AssumedRoleUser><Credentials>"
          "<AccessKeyId>" +
          key +
          "</AccessKeyId><SecretAccessKey>sk</SecretAccessKey><SessionToken>st"
          "</SessionToken><Expiration>2023-11-14T23:13:20Z</Expiration></Credentials>"
          "</AssumeRoleResult></AssumeRoleResponse>"};
}

class AssumeRoleTest : public testing::HttpSourceTest {
 protected:
  void SetUp() override { Start(Scheme::kHttps, {"sts.us-east-1.amazonaws.com"}); }
};

// verifies: ATCH-073
TEST_F(AssumeRoleTest, SignsAssumeRoleWithTheSourceCredentials) {
  replies_ = {Assumed("ASIAROLE")};
  auto provider =
      MakeAssumeRoleProvider(Context(),
                             AssumeRoleSettings{.role_arn = "arn:aws:iam::123456789012:role/target",
                                                .external_id = "ext-1",
                                                .session_name = "named"},
                             std::make_unique<FixedProvider>(kSource));
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "ASIAROLE");

  ASSERT_EQ(requests_.size(), 1u);
  const auto& request = requests_[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_TRUE(request.body.starts_with("Action=AssumeRole&Version=2011-06-15&"));
  EXPECT_EQ(FormField(request.body, "RoleArn"),
            "arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Ftarget");
  EXPECT_EQ(FormField(request.body, "RoleSessionName"), "named");
  EXPECT_EQ(FormField(request.body, "ExternalId"), "ext-1");
  EXPECT_EQ(FormField(request.body, "DurationSeconds"), std::nullopt);
  EXPECT_EQ(request.Header("x-amz-date"), "20231114T221320Z");
  EXPECT_EQ(request.Header("x-amz-security-token"), "source-token");

  // The Authorization the server received is the one the signer makes for exactly the request
  // the server saw (its host, content type and body).
  auto expected =
      SignHeaders(HeaderSignRequest{.method = "POST",
                                    .uri = "/",
                                    .canonical_query = "",
                                    .headers = {{"content-type", request.Header("content-type")},
                                                {"host", request.Header("host")}},
                                    .body = request.body},
                  kSource, SigningScope{.region = "us-east-1", .service = "sts", .time = now_});
  std::string authorization;
  for (const auto& header : expected) {
    if (header.name == "authorization") {
      authorization = header.value;
    }
  }
  EXPECT_TRUE(authorization.starts_with(
      "AWS4-HMAC-SHA256 Credential=AKIDSOURCE/20231114/us-east-1/sts/aws4_request, "
      "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="))
      << authorization;
  EXPECT_EQ(request.Header("authorization"), authorization);
}

// verifies: ATCH-073
TEST_F(AssumeRoleTest, NoExternalIdUnlessSetAndAGeneratedSessionName) {
  replies_ = {Assumed("ASIAROLE")};
  auto provider =
      MakeAssumeRoleProvider(Context(), AssumeRoleSettings{.role_arn = "arn:aws:iam::1:role/t"},
                             std::make_unique<FixedProvider>(AwsCredentials{
                                 .access_key_id = "AKID", .secret_access_key = "SECRET"}));
  ASSERT_TRUE(Fetch(*provider).ok());
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(FormField(requests_[0].body, "ExternalId"), std::nullopt);
  EXPECT_EQ(FormField(requests_[0].body, "RoleSessionName"), "xmtp-backend-1700000000");
  EXPECT_EQ(requests_[0].Header("x-amz-security-token"), "");
}

// verifies: ATCH-073
TEST_F(AssumeRoleTest, TheSourcesFailureIsTheProvidersWithoutAskingSts) {
  auto provider = MakeAssumeRoleProvider(
      Context(), AssumeRoleSettings{.role_arn = "arn:aws:iam::1:role/t"},
      std::make_unique<FixedProvider>(CredentialError{
          .kind = CredentialFailure::kInvalidConfiguration, .message = "source words"}));
  auto result = Fetch(*provider);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kInvalidConfiguration);
  EXPECT_EQ(result.error().message, "source words");
  EXPECT_TRUE(requests_.empty());
}

// verifies: ATCH-073
TEST_F(AssumeRoleTest, AnUnusableAnswerIsUnavailable) {
  replies_ = {ScriptedReply{.status = 200, .body = "<AssumeRoleResponse/>"},
              ScriptedReply{.status = 403, .body = "AKIDSOURCE"}};
  auto provider =
      MakeAssumeRoleProvider(Context(), AssumeRoleSettings{.role_arn = "arn:aws:iam::1:role/t"},
                             std::make_unique<FixedProvider>(kSource));
  EXPECT_EQ(Fetch(*provider).error().message, "the STS answer is not usable");
  EXPECT_EQ(Fetch(*provider).error().message, "the STS endpoint refused the request");
}

}  // namespace
}  // namespace xb::attach
