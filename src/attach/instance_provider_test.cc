// instance against a plain loopback IMDS fake behind 169.254.169.254 (never the real address).
#include <gtest/gtest.h>

#include "attach/http_sources.h"
#include "attach/http_sources_test_support.h"

namespace xb::attach {
namespace {

using testing::Epoch;
using testing::ScriptedReply;
using testing::ServedRequest;

constexpr char kList[] = "/latest/meta-data/iam/security-credentials/";

class InstanceTest : public testing::HttpSourceTest {
 protected:
  void SetUp() override {
    Start(Scheme::kHttp, {"169.254.169.254"});
    answer_ = [this](const ServedRequest& request) { return Imds(request); };
  }

  // A strict IMDSv2 fake: the token PUT, then GETs that carry a token it issued.
  ScriptedReply Imds(const ServedRequest& request) {
    if (request.method == "PUT" && request.path == "/latest/api/token") {
      if (put_status_ != 200) {
        return ScriptedReply{.status = put_status_};
      }
      issued_ = "token-" + std::to_string(++tokens_);
      return ScriptedReply{.status = 200, .body = issued_};
    }
    const std::string token = request.Header("x-aws-ec2-metadata-token");
    if (request.method != "GET" || (require_token_ && token != issued_)) {
      return ScriptedReply{.status = 401};
    }
    if (request.path == kList) {
      return ScriptedReply{.status = 200, .body = "app-role\n"};
    }
    if (request.path == std::string(kList) + "app-role") {
      return ScriptedReply{
          .status = 200,
          .body =
              R"({"Code":")" + code_ +
              R"(","LastUpdated":"2023-11-14T22:00:00Z","Type":"AWS-HMAC","AccessKeyId":"ASIA)" +
              std::to_string(requests_.size()) +
              R"(","SecretAccessKey":"sk","Token":"st","Expiration":"2023-11-15T04:13:20Z"})"};
    }
    return ScriptedReply{.status = 404};
  }

  int Count(const std::string& method) const {
    int n = 0;
    for (const auto& request : requests_) {
      n += request.method == method ? 1 : 0;
    }
    return n;
  }

  unsigned put_status_ = 200;
  bool require_token_ = true;
  std::string code_ = "Success";
  std::string issued_;
  int tokens_ = 0;
};

// verifies: ATCH-073
TEST_F(InstanceTest, TokenThenRoleNameThenItsCredentials) {
  auto provider = MakeInstanceProvider(Context());
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "ASIA3");
  EXPECT_EQ(result->secret_access_key, "sk");
  EXPECT_EQ(result->session_token, "st");
  EXPECT_EQ(result->expiry, Epoch(1700021600));
  ASSERT_EQ(requests_.size(), 3u);
  EXPECT_EQ(requests_[0].method, "PUT");
  EXPECT_EQ(requests_[0].Header("x-aws-ec2-metadata-token-ttl-seconds"), "21600");
  EXPECT_EQ(requests_[0].Header("host"), "169.254.169.254");
  EXPECT_EQ(requests_[1].path, kList);
  EXPECT_EQ(requests_[1].Header("x-aws-ec2-metadata-token"), "token-1");
  EXPECT_EQ(requests_[2].path, std::string(kList) + "app-role");
  EXPECT_EQ(requests_[2].Header("x-aws-ec2-metadata-token"), "token-1");
}

// verifies: ATCH-073
TEST_F(InstanceTest, TheTokenIsKeptUntilAMinuteBeforeItsTtlEnds) {
  auto provider = MakeInstanceProvider(Context());
  ASSERT_TRUE(Fetch(*provider).ok());
  now_ += std::chrono::seconds(21600 - 61);
  ASSERT_TRUE(Fetch(*provider).ok());
  EXPECT_EQ(Count("PUT"), 1);
  now_ += std::chrono::seconds(2);
  ASSERT_TRUE(Fetch(*provider).ok());
  EXPECT_EQ(Count("PUT"), 2);
  EXPECT_EQ(requests_.back().Header("x-aws-ec2-metadata-token"), "token-2");
}

// verifies: ATCH-073
TEST_F(InstanceTest, ATokenTheServiceNoLongerAcceptsIsReplacedOnce) {
  auto provider = MakeInstanceProvider(Context());
  ASSERT_TRUE(Fetch(*provider).ok());
  issued_ = "revoked";  // the kept token-1 now answers 401
  auto result = Fetch(*provider);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(Count("PUT"), 2);
}

// verifies: ATCH-073
TEST_F(InstanceTest, DisabledFailsAtOnce) {
  env_["AWS_EC2_METADATA_DISABLED"] = "TRUE";
  auto provider = MakeInstanceProvider(Context());
  auto result = Fetch(*provider);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "instance metadata is disabled");
  EXPECT_TRUE(requests_.empty());
}

// verifies: ATCH-073
TEST_F(InstanceTest, FallsBackToImdsV1OnlyWhenTheTokenPutAnswers403_404Or405) {
  require_token_ = false;
  for (unsigned status : {403u, 404u, 405u}) {
    put_status_ = status;
    requests_.clear();
    auto provider = MakeInstanceProvider(Context());
    ASSERT_TRUE(Fetch(*provider).ok()) << status;
    ASSERT_EQ(requests_.size(), 3u);
    EXPECT_EQ(requests_[1].Header("x-aws-ec2-metadata-token"), "");
  }
  env_["AWS_EC2_METADATA_V1_DISABLED"] = "true";
  auto provider = MakeInstanceProvider(Context());
  EXPECT_EQ(Fetch(*provider).error().message, "the instance metadata service refused the request");
  env_.erase("AWS_EC2_METADATA_V1_DISABLED");
  for (unsigned status : {400u, 500u}) {
    put_status_ = status;
    requests_.clear();
    EXPECT_FALSE(Fetch(*provider).ok()) << status;
    EXPECT_EQ(requests_.size(), 1u) << status;
  }
}

// verifies: ATCH-073
TEST_F(InstanceTest, ACodeOtherThanSuccessIsUnavailable) {
  code_ = "AssumeRoleUnauthorizedAccess";
  auto provider = MakeInstanceProvider(Context());
  auto result = Fetch(*provider);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
  EXPECT_EQ(result.error().message, "the instance credential answer is not usable");
}

}  // namespace
}  // namespace xb::attach
