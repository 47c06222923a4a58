// The APNs channel against a loopback HTTP/2 TLS fake that the pin puts behind
// api.sandbox.push.apple.com / api.push.apple.com (certificate names from a test CA).
#include "push/apns_channel.h"

#include <gtest/gtest.h>

#include <deque>

#include "base/encoding.h"
#include "push/body.h"
#include "push/channel_test_support.h"

namespace xb::push {
namespace {

using namespace std::chrono_literals;
using net::testing::LoopbackServer;
using testing::ClassName;
using testing::RunAttempt;
using testing::ScriptedReply;
using testing::ServedRequest;

const char kDevice[] = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

class ApnsChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = net::testing::MakeTestPki({"api.push.apple.com", "api.sandbox.push.apple.com"});
    key_ = testing::EcKey();
    server_ = std::make_unique<LoopbackServer>(io_, LoopbackServer::Protocol::kHttp2,
                                               net::testing::ServerTls(*pki_, "h2"),
                                               [this](const ServedRequest& request) {
                                                 requests_.push_back(request);
                                                 if (replies_.empty()) {
                                                   return ScriptedReply{.status = 200};
                                                 }
                                                 ScriptedReply reply = replies_.front();
                                                 replies_.pop_front();
                                                 return reply;
                                               });
  }

  std::unique_ptr<ApnsChannel> Channel(std::string environment = "sandbox", uint16_t port = 0) {
    config::ApnsConfig config{.key = key_->pem,
                              .key_id = "KID",
                              .team_id = "TEAM",
                              .bundle_id = "org.example.app",
                              .environment = std::move(environment)};
    auto channel = ApnsChannel::Create(
        io_.get_executor(), config,
        ProviderOptions{
            .static_hosts = testing::Pin({"api.push.apple.com", "api.sandbox.push.apple.com"},
                                         port != 0 ? port : server_->port()),
            .ca_file = pki_->ca_file,
            .wall_clock = clock_.Get()});
    EXPECT_TRUE(channel.ok());
    return std::move(channel).value();
  }

  AttemptResult Attempt(ApnsChannel& channel, std::string token = kDevice,
                        std::chrono::steady_clock::duration budget = 10s) {
    return RunAttempt(io_, channel,
                      Target{.recipient_id = std::string(32, '\x01'),
                             .delivery = std::move(token),
                             .signing_key = std::nullopt},
                      message_, budget);
  }

  static ScriptedReply Reason(unsigned status, std::string reason) {
    return ScriptedReply{.status = status, .body = R"({"reason":")" + reason + R"("})"};
  }

  boost::asio::io_context io_;
  std::unique_ptr<net::testing::TestPki> pki_;
  std::unique_ptr<testing::TestKey> key_;
  testing::ManualClock clock_;
  std::unique_ptr<LoopbackServer> server_;
  std::deque<ScriptedReply> replies_;
  std::vector<ServedRequest> requests_;
  PushMessage message_{.topic = std::string(17, '\x00'), .sequence_id = 42};
};

// verifies: PUSH-259
TEST_F(ApnsChannelTest, SendsTheRequestOfSection92) {
  auto channel = Channel();
  AttemptResult result = Attempt(*channel);
  EXPECT_EQ(result.answer, AnswerClass::kDelivered);
  ASSERT_EQ(requests_.size(), 1u);
  const ServedRequest& r = requests_[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, std::string("/3/device/") + kDevice);
  EXPECT_EQ(r.Header("content-type"), "application/json");
  EXPECT_EQ(r.Header("apns-topic"), "org.example.app");
  EXPECT_EQ(r.Header("apns-push-type"), "background");
  EXPECT_EQ(r.Header("apns-priority"), "5");
  EXPECT_EQ(r.Header("apns-collapse-id"), Base64(message_.topic));
  EXPECT_EQ(r.body, ApnsBody(message_.topic, 42));
  const std::string auth = r.Header("authorization");
  ASSERT_TRUE(auth.starts_with("bearer "));
  EXPECT_EQ(testing::SplitJwt(auth.substr(7)).claims, R"({"iss":"TEAM","iat":1700000000})");
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, ProductionUsesTheProductionHost) {
  // The fake's certificate names both hosts; the pin serves both, so the URL is what differs.
  auto channel = Channel("production");
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, ClassifiesEveryRowOfTheOutcomeTable) {
  struct Row {
    ScriptedReply reply;
    AnswerClass expected;
  };
  const std::vector<Row> rows = {
      {ScriptedReply{.status = 200}, AnswerClass::kDelivered},
      {ScriptedReply{.status = 201}, AnswerClass::kRejected},
      {ScriptedReply{.status = 204}, AnswerClass::kRejected},
      {Reason(410, "Unregistered"), AnswerClass::kTerminal},
      {Reason(410, "ExpiredToken"), AnswerClass::kTerminal},
      {Reason(400, "BadDeviceToken"), AnswerClass::kMismatch},
      {Reason(400, "DeviceTokenNotForTopic"), AnswerClass::kMismatch},
      {Reason(429, "TooManyRequests"), AnswerClass::kTransient},
      {ScriptedReply{.status = 500}, AnswerClass::kTransient},
      {Reason(503, "ServiceUnavailable"), AnswerClass::kTransient},
      {ScriptedReply{.status = 502}, AnswerClass::kRejected},
      {ScriptedReply{.status = 302, .headers = {{"location", "/elsewhere"}}},
       AnswerClass::kRejected},
      {Reason(400, "Unregistered"), AnswerClass::kRejected},
      {Reason(410, "BadDeviceToken"), AnswerClass::kRejected},
      {Reason(403, "InvalidProviderToken"), AnswerClass::kRejected},
      {ScriptedReply{.status = 410, .body = "not json"}, AnswerClass::kRejected},
      {ScriptedReply{.status = 200, .body = std::string(16385, 'x')}, AnswerClass::kTransient},
  };
  auto channel = Channel();
  for (const Row& row : rows) {
    replies_ = {row.reply};
    AttemptResult result = Attempt(*channel);
    EXPECT_EQ(result.answer, row.expected)
        << row.reply.status << " " << row.reply.body.substr(0, 40) << " -> "
        << ClassName(result.answer);
    if (result.answer == AnswerClass::kTransient) {
      EXPECT_EQ(result.delay, 1s);
    }
  }
  EXPECT_EQ(requests_.size(), rows.size());
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, TokenPreCheckRejectsWithoutARequest) {
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel, "").answer, AnswerClass::kRejected);
  EXPECT_EQ(Attempt(*channel, "0a1b-zz").answer, AnswerClass::kRejected);
  EXPECT_EQ(Attempt(*channel, "0a1b/../x").answer, AnswerClass::kRejected);
  EXPECT_TRUE(requests_.empty());
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, ExpiredProviderTokenIsResentOnceWithANewToken) {
  auto channel = Channel();
  replies_ = {Reason(403, "ExpiredProviderToken"), ScriptedReply{.status = 200}};
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  ASSERT_EQ(requests_.size(), 2u);
  EXPECT_NE(requests_[0].Header("authorization"), requests_[1].Header("authorization"));

  // The resend's class decides; a second ExpiredProviderToken is rejected.
  replies_ = {Reason(403, "ExpiredProviderToken"), Reason(410, "Unregistered")};
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kTerminal);
  replies_ = {Reason(403, "ExpiredProviderToken"), Reason(403, "ExpiredProviderToken")};
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kRejected);
  EXPECT_EQ(requests_.size(), 6u);
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, OneTokenIsSharedUntilItIs3300SecondsOld) {
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  clock_.Advance(3299s);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  clock_.Advance(1s);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  ASSERT_EQ(requests_.size(), 3u);
  EXPECT_EQ(requests_[0].Header("authorization"), requests_[1].Header("authorization"));
  EXPECT_NE(requests_[1].Header("authorization"), requests_[2].Header("authorization"));
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, TimeoutsAndStalledBodiesAreTransient) {
  auto channel = Channel();
  replies_ = {ScriptedReply{.stall = true}};
  AttemptResult stalled = Attempt(*channel, kDevice, 300ms);
  EXPECT_EQ(stalled.answer, AnswerClass::kTransient);
  EXPECT_EQ(stalled.delay, 1s);
  replies_ = {ScriptedReply{.status = 200, .body = "{}", .stall_body = true}};
  EXPECT_EQ(Attempt(*channel, kDevice, 300ms).answer, AnswerClass::kTransient);
}

// verifies: PUSH-259
TEST_F(ApnsChannelTest, ConnectionFailureIsTransient) {
  auto channel = Channel("sandbox", testing::ClosedPort(io_));
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kTransient);
  EXPECT_TRUE(requests_.empty());
}

}  // namespace
}  // namespace xb::push
