// The webhook channel against a loopback TLS receiver on 127.0.0.1 (allow_private_addresses lets
// the channel reach it; without it the same URL is vetoed before any connection).
#include "push/webhook_channel.h"

#include <gtest/gtest.h>
#include <openssl/hmac.h>

#include <deque>
#include <regex>

#include "base/encoding.h"
#include "push/body.h"
#include "push/channel_test_support.h"

namespace xb::push {
namespace {

using namespace std::chrono_literals;
using net::testing::LoopbackServer;
using testing::ClassName;
using testing::ScriptedReply;
using testing::ServedRequest;

// The receiver's check, written independently of push/body: base64(HMAC-SHA256(key, id.ts.body)).
std::string ExpectedSignature(const std::string& key, const ServedRequest& r) {
  const std::string content =
      r.Header("webhook-id") + "." + r.Header("webhook-timestamp") + "." + r.body;
  unsigned char mac[32];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac, &size);
  unsigned char b64[64] = {};
  EVP_EncodeBlock(b64, mac, static_cast<int>(size));
  return "v1," + std::string(reinterpret_cast<char*>(b64));
}

class WebhookChannelTest : public ::testing::TestWithParam<LoopbackServer::Protocol> {
 protected:
  void SetUp() override {
    pki_ = net::testing::MakeTestPki();
    const bool h2 = GetParam() == LoopbackServer::Protocol::kHttp2;
    server_ = std::make_unique<LoopbackServer>(
        io_, GetParam(), net::testing::ServerTls(*pki_, h2 ? "h2" : "http/1.1"),
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

  std::unique_ptr<WebhookChannel> Channel(bool allow_private = true,
                                          std::vector<std::string> domains = {}) {
    auto channel = WebhookChannel::Create(
        io_.get_executor(),
        config::HttpPushConfig{.allowed_domains = std::move(domains),
                               .allow_private_addresses = allow_private},
        ProviderOptions{.static_hosts = {}, .ca_file = pki_->ca_file, .wall_clock = clock_.Get()});
    EXPECT_TRUE(channel.ok());
    return std::move(channel).value();
  }
  std::string Url(std::string host = "127.0.0.1", std::string path = "/hook?x=1") const {
    return "https://" + host + ":" + std::to_string(server_->port()) + path;
  }
  AttemptResult Attempt(WebhookChannel& channel, std::string url,
                        std::optional<std::string> key = std::string(32, '\x07'),
                        std::chrono::steady_clock::duration budget = 10s) {
    return testing::RunAttempt(
        io_, channel,
        Target{.recipient_id = std::string(32, '\xab'), .delivery = url, .signing_key = key},
        message_, budget);
  }

  boost::asio::io_context io_;
  std::unique_ptr<net::testing::TestPki> pki_;
  testing::ManualClock clock_;
  std::unique_ptr<LoopbackServer> server_;
  std::deque<ScriptedReply> replies_;
  std::vector<ServedRequest> requests_;
  PushMessage message_{.topic = std::string("\x01\x02\x03", 3), .sequence_id = 9007199254740993};
};

// verifies: PUSH-235, PUSH-259
TEST_P(WebhookChannelTest, SendsTheSignedRequestOfSection94) {
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel, Url()).answer, AnswerClass::kDelivered);
  EXPECT_EQ(Attempt(*channel, Url()).answer, AnswerClass::kDelivered);
  ASSERT_EQ(requests_.size(), 2u);
  const ServedRequest& r = requests_[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/hook?x=1");
  EXPECT_EQ(r.Header("content-type"), "application/json");
  EXPECT_EQ(r.body, R"({"topic":"AQID","sequence_id":"9007199254740993","recipient_id":")" +
                        LowerHex(std::string(32, '\xab')) + R"("})");
  EXPECT_EQ(r.Header("webhook-timestamp"), "1700000000");
  EXPECT_TRUE(std::regex_match(
      r.Header("webhook-id"),
      std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  EXPECT_EQ(r.Header("webhook-signature"), ExpectedSignature(std::string(32, '\x07'), r));
  EXPECT_EQ(requests_[1].Header("webhook-signature"),
            ExpectedSignature(std::string(32, '\x07'), requests_[1]));
  EXPECT_NE(requests_[0].Header("webhook-id"), requests_[1].Header("webhook-id"));
}

// verifies: PUSH-259
TEST_P(WebhookChannelTest, ClassifiesEveryRowOfTheOutcomeTable) {
  struct Row {
    ScriptedReply reply;
    AnswerClass expected;
  };
  const std::vector<Row> rows = {
      {ScriptedReply{.status = 200}, AnswerClass::kDelivered},
      {ScriptedReply{.status = 202}, AnswerClass::kDelivered},
      {ScriptedReply{.status = 204}, AnswerClass::kDelivered},
      {ScriptedReply{.status = 404}, AnswerClass::kGone},
      {ScriptedReply{.status = 410}, AnswerClass::kGone},
      {ScriptedReply{.status = 500}, AnswerClass::kTransient},
      {ScriptedReply{.status = 503}, AnswerClass::kTransient},
      {ScriptedReply{.status = 599}, AnswerClass::kTransient},
      {ScriptedReply{.status = 400}, AnswerClass::kRejected},
      {ScriptedReply{.status = 401}, AnswerClass::kRejected},
      {ScriptedReply{.status = 429}, AnswerClass::kRejected},
      {ScriptedReply{.status = 301, .headers = {{"location", "/other"}}}, AnswerClass::kRejected},
      {ScriptedReply{.status = 307, .headers = {{"location", "/other"}}}, AnswerClass::kRejected},
      {ScriptedReply{.status = 200, .body = std::string(16385, 'x')}, AnswerClass::kTransient},
  };
  auto channel = Channel();
  for (const Row& row : rows) {
    replies_ = {row.reply};
    AttemptResult result = Attempt(*channel, Url());
    EXPECT_EQ(result.answer, row.expected)
        << row.reply.status << " -> " << ClassName(result.answer);
    EXPECT_EQ(result.delay, 1s);
  }
  EXPECT_EQ(requests_.size(), rows.size());  // no redirect was followed
  for (const auto& r : requests_) {
    EXPECT_EQ(r.path, "/hook?x=1");
  }
}

// verifies: PUSH-259
TEST_P(WebhookChannelTest, TimeoutConnectionAndDnsFailuresAreTransient) {
  auto channel = Channel();
  replies_ = {ScriptedReply{.stall = true}};
  EXPECT_EQ(Attempt(*channel, Url(), std::string(16, 'k'), 300ms).answer, AnswerClass::kTransient);
  const std::string closed =
      "https://127.0.0.1:" + std::to_string(testing::ClosedPort(io_)) + "/hook";
  EXPECT_EQ(Attempt(*channel, closed).answer, AnswerClass::kTransient);
  EXPECT_EQ(Attempt(*channel, "https://no-such-host.invalid/hook").answer, AnswerClass::kTransient);
}

// verifies: PUSH-256
TEST_P(WebhookChannelTest, PrivateAddressIsVetoedUnlessAllowed) {
  auto strict = Channel(/*allow_private=*/false);
  EXPECT_EQ(Attempt(*strict, Url()).answer, AnswerClass::kRejected);
  EXPECT_EQ(Attempt(*strict, Url("localhost")).answer, AnswerClass::kRejected);
  EXPECT_EQ(server_->accepted(), 0);
  auto lenient = Channel(/*allow_private=*/true);
  EXPECT_EQ(Attempt(*lenient, Url("localhost")).answer, AnswerClass::kDelivered);
  EXPECT_EQ(requests_.size(), 1u);
}

// verifies: PUSH-256
TEST_P(WebhookChannelTest, PreChecksRejectWithoutARequest) {
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel, "http://127.0.0.1:" + std::to_string(server_->port()) + "/").answer,
            AnswerClass::kRejected);
  EXPECT_EQ(Attempt(*channel, "https://user:pw@127.0.0.1:" + std::to_string(server_->port()) + "/")
                .answer,
            AnswerClass::kRejected);
  EXPECT_EQ(Attempt(*channel, "not a url").answer, AnswerClass::kRejected);
  EXPECT_EQ(Attempt(*channel, Url(), std::nullopt).answer, AnswerClass::kRejected);
  auto listed = Channel(/*allow_private=*/true, {"*.example.org"});
  EXPECT_EQ(Attempt(*listed, Url("localhost")).answer, AnswerClass::kRejected);
  EXPECT_EQ(server_->accepted(), 0);
  auto matching = Channel(/*allow_private=*/true, {"localhost"});
  EXPECT_EQ(Attempt(*matching, Url("LOCALHOST")).answer, AnswerClass::kDelivered);
}

INSTANTIATE_TEST_SUITE_P(Http1AndHttp2, WebhookChannelTest,
                         ::testing::Values(LoopbackServer::Protocol::kHttp1,
                                           LoopbackServer::Protocol::kHttp2));

}  // namespace
}  // namespace xb::push
