// The STS Query API pieces: the form body and the <Credentials> of an answer.
#include "attach/sts_client.h"

#include <gtest/gtest.h>

#include "attach/http_sources_test_support.h"

namespace xb::attach {
namespace {

using testing::Epoch;

std::string Answer(const std::string& action, const std::string& credentials) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + action +
         "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n  <" + action +
         "Result>\n    <Credentials>\n" + credentials + "    </Credentials>\n  </" + action +
         "Result>\n  <ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>\n</" + action +
         "Response>\n";
}

const std::string kFields =
    "      <AccessKeyId>ASIAEXAMPLE1</AccessKeyId>\n"
    "      <SecretAccessKey>secret/with+chars=</SecretAccessKey>\n"
    "      <SessionToken>tok&amp;en&lt;1&gt;</SessionToken>\n"
    "      <Expiration>2023-11-14T23:13:20Z</Expiration>\n";

// verifies: ATCH-073
TEST(StsClientTest, FormBodyStartsWithActionAndVersionAndEncodesEveryValue) {
  StsCall call{
      .action = "AssumeRole",
      .params = {{"RoleArn", "arn:aws:iam::123456789012:role/r"}, {"RoleSessionName", "a b"}}};
  EXPECT_EQ(StsFormBody(call),
            "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole"
            "%2Fr&RoleSessionName=a%20b");
}

TEST(StsClientTest, HostIsTheRegionalEndpoint) {
  EXPECT_EQ(StsHost("eu-west-1"), "sts.eu-west-1.amazonaws.com");
  EXPECT_EQ(StsHost(""), "sts.amazonaws.com");
}

// verifies: ATCH-073
TEST(StsClientTest, ReadsTheCredentialsOfTheActionsResultWithEntitiesDecoded) {
  auto result =
      ParseStsAnswer(Answer("AssumeRoleWithWebIdentity", kFields), "AssumeRoleWithWebIdentity");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "ASIAEXAMPLE1");
  EXPECT_EQ(result->secret_access_key, "secret/with+chars=");
  EXPECT_EQ(result->session_token, "tok&en<1>");
  EXPECT_EQ(result->expiry, Epoch(1700003600));
}

// verifies: ATCH-073
TEST(StsClientTest, AnythingButCompleteCredentialsIsUnavailableWithFixedWords) {
  const std::string error =
      "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
      "<Message>secret-detail</Message></Error></ErrorResponse>";
  const std::string no_token =
      Answer("AssumeRole",
             "<AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
             "<Expiration>2023-11-14T23:13:20Z</Expiration>");
  const std::string bad_expiry =
      Answer("AssumeRole",
             "<AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
             "<SessionToken>T</SessionToken><Expiration>tomorrow</Expiration>");
  for (const std::string& body :
       {error, no_token, bad_expiry, std::string("<AssumeRoleResponse><unclosed>secret-detail"),
        std::string("secret-detail"), Answer("AssumeRoleWithWebIdentity", kFields)}) {
    auto result = ParseStsAnswer(body, "AssumeRole");
    ASSERT_FALSE(result.ok()) << body;
    EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
    EXPECT_EQ(result.error().message, "the STS answer is not usable");
  }
}

}  // namespace
}  // namespace xb::attach
