// The FCM channel and its access token against one loopback HTTP/2 TLS fake that the pin puts
// behind fcm.googleapis.com and oauth2.googleapis.com (certificate names from a test CA).
#include "push/fcm_channel.h"

#include <gtest/gtest.h>

#include <deque>

#include "push/body.h"
#include "push/channel_test_support.h"

namespace xb::push {
namespace {

using namespace std::chrono_literals;
using net::testing::LoopbackServer;
using testing::ClassName;
using testing::ScriptedReply;
using testing::ServedRequest;

const char kSendPath[] = "/v1/projects/proj-1/messages:send";

std::string FormValue(const std::string& body, const std::string& name) {
  const std::string key = name + "=";
  size_t at = body.starts_with(key) ? 0 : body.find("&" + key);
  if (at == std::string::npos) {
    return "";
  }
  at += body.starts_with(key) && at == 0 ? key.size() : key.size() + 1;
  return body.substr(at, body.find('&', at) - at);
}

bool VerifyRs256(EVP_PKEY* key, const std::string& input, const std::string& signature) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                       input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

ScriptedReply Granted(std::string token = "at-1", int expires_in = 3600,
                      std::string type = "Bearer") {
  return ScriptedReply{.status = 200,
                       .body = R"({"access_token":")" + token + R"(","token_type":")" + type +
                               R"(","expires_in":)" + std::to_string(expires_in) + "}"};
}

ScriptedReply FcmError(unsigned status, std::string code,
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
  return ScriptedReply{
      .status = status,
      .headers = std::move(headers),
      .body =
          R"({"error":{"code":)" + std::to_string(status) +
          R"(,"status":"X","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":")" +
          code + R"("}]}})"};
}

class FcmChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = net::testing::MakeTestPki({"fcm.googleapis.com", "oauth2.googleapis.com"});
    key_ = testing::RsaKey();
    server_ = std::make_unique<LoopbackServer>(
        io_, LoopbackServer::Protocol::kHttp2, net::testing::ServerTls(*pki_, "h2"),
        [this](const ServedRequest& request) {
          const bool token = request.path == "/token";
          (token ? exchanges_ : sends_).push_back(request);
          auto& queue = token ? token_replies_ : send_replies_;
          if (queue.empty()) {
            return token ? Granted() : ScriptedReply{.status = 200};
          }
          ScriptedReply reply = queue.front();
          queue.pop_front();
          return reply;
        });
  }

  std::string ServiceAccountJson() const {
    std::string pem;
    for (char c : key_->pem) {
      pem += c == '\n' ? std::string("\\n") : std::string(1, c);
    }
    return R"({"type":"service_account","project_id":"proj-1","client_email":"svc@proj-1.iam.gserviceaccount.com","private_key":")" +
           pem + R"(","token_uri":"https://oauth2.googleapis.com/token"})";
  }

  std::unique_ptr<FcmChannel> Channel() {
    auto channel = FcmChannel::Create(
        io_.get_executor(), config::FcmConfig{.service_account = ServiceAccountJson()},
        ProviderOptions{.static_hosts = testing::Pin(
                            {"fcm.googleapis.com", "oauth2.googleapis.com"}, server_->port()),
                        .ca_file = pki_->ca_file,
                        .wall_clock = clock_.Get()});
    EXPECT_TRUE(channel.ok()) << (channel.ok() ? "" : channel.error());
    return std::move(channel).value();
  }

  Target ToDevice() const {
    return Target{.recipient_id = std::string(32, '\x02'),
                  .delivery = "fcm-registration-token",
                  .signing_key = std::nullopt};
  }
  AttemptResult Attempt(FcmChannel& channel, std::chrono::steady_clock::duration budget = 10s) {
    return testing::RunAttempt(io_, channel, ToDevice(), message_, budget);
  }

  boost::asio::io_context io_;
  std::unique_ptr<net::testing::TestPki> pki_;
  std::unique_ptr<testing::TestKey> key_;
  testing::ManualClock clock_;  // 1700000000 = Tue, 14 Nov 2023 22:13:20 GMT
  std::unique_ptr<LoopbackServer> server_;
  std::deque<ScriptedReply> token_replies_, send_replies_;
  std::vector<ServedRequest> exchanges_, sends_;
  PushMessage message_{.topic = std::string(33, '\x01'), .sequence_id = 7};
};

// verifies: PUSH-259
TEST_F(FcmChannelTest, ExchangesAnRs256AssertionThenSendsTheRequestOfSection93) {
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  ASSERT_EQ(exchanges_.size(), 1u);
  const ServedRequest& x = exchanges_[0];
  EXPECT_EQ(x.method, "POST");
  EXPECT_EQ(x.Header("content-type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(FormValue(x.body, "grant_type"),
            "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer");
  auto parts = testing::SplitJwt(FormValue(x.body, "assertion"));
  EXPECT_EQ(parts.header, R"({"alg":"RS256","typ":"JWT"})");
  EXPECT_EQ(
      parts.claims,
      R"({"iss":"svc@proj-1.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/firebase.messaging",)"
      R"("aud":"https://oauth2.googleapis.com/token","iat":1700000000,"exp":1700003600})");
  EXPECT_TRUE(VerifyRs256(key_->key, parts.signing_input, parts.signature));

  ASSERT_EQ(sends_.size(), 1u);
  const ServedRequest& s = sends_[0];
  EXPECT_EQ(s.method, "POST");
  EXPECT_EQ(s.path, kSendPath);
  EXPECT_EQ(s.Header("authorization"), "Bearer at-1");
  EXPECT_EQ(s.Header("content-type"), "application/json");
  EXPECT_EQ(s.body, FcmBody("fcm-registration-token", message_.topic, 7));
}

// verifies: PUSH-259
TEST_F(FcmChannelTest, TokenIsReusedUntilMinOfExpiresInAnd3600Minus20Seconds) {
  token_replies_ = {Granted("at-1", 7200), Granted("at-2", 100), Granted("at-3", 100)};
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  clock_.Advance(3579s);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  EXPECT_EQ(exchanges_.size(), 1u);  // 7200 is capped at 3600: refresh at 3580 s
  clock_.Advance(1s);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  EXPECT_EQ(exchanges_.size(), 2u);
  clock_.Advance(79s);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  EXPECT_EQ(exchanges_.size(), 2u);
  clock_.Advance(1s);  // 100 - 20
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  EXPECT_EQ(exchanges_.size(), 3u);
  ASSERT_EQ(sends_.size(), 5u);
  EXPECT_EQ(sends_[1].Header("authorization"), "Bearer at-1");
  EXPECT_EQ(sends_[3].Header("authorization"), "Bearer at-2");
  EXPECT_EQ(sends_[4].Header("authorization"), "Bearer at-3");
}

// verifies: PUSH-259
TEST_F(FcmChannelTest, ConcurrentMissesShareOneExchange) {
  auto channel = Channel();
  auto results =
      testing::RunAttempts(io_, *channel, {ToDevice(), ToDevice(), ToDevice()}, message_);
  for (const auto& r : results) {
    EXPECT_EQ(r.answer, AnswerClass::kDelivered);
  }
  EXPECT_EQ(exchanges_.size(), 1u);
  EXPECT_EQ(sends_.size(), 3u);
}

// verifies: PUSH-259
TEST_F(FcmChannelTest, AFailedExchangeIsSharedAndRememberedForOneSecond) {
  token_replies_ = {ScriptedReply{.status = 500}};
  auto channel = Channel();
  auto results = testing::RunAttempts(io_, *channel, {ToDevice(), ToDevice()}, message_);
  for (const auto& r : results) {
    EXPECT_EQ(r.answer, AnswerClass::kTransient);
    EXPECT_EQ(r.delay, 10s);
  }
  clock_.Advance(999ms);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kTransient);
  EXPECT_EQ(exchanges_.size(), 1u);
  EXPECT_TRUE(sends_.empty());  // no send without a token
  clock_.Advance(1ms);
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  EXPECT_EQ(exchanges_.size(), 2u);
}

// verifies: PUSH-259
TEST_F(FcmChannelTest, TokenAnswersOutsideTheAcceptRulesAreFailures) {
  const std::vector<ScriptedReply> refused = {
      Granted("at", 20),
      Granted("", 3600),
      Granted("at", 3600, "Mac"),
      ScriptedReply{.status = 201, .body = Granted().body},
      ScriptedReply{.status = 302, .headers = {{"location", "/token2"}}},
      ScriptedReply{.status = 200, .body = "not json"},
      ScriptedReply{.status = 200, .body = std::string(16385, ' ') + Granted().body},
  };
  auto channel = Channel();
  for (const auto& reply : refused) {
    token_replies_ = {reply};
    AttemptResult result = Attempt(*channel);
    EXPECT_EQ(result.answer, AnswerClass::kTransient) << reply.status << reply.body.substr(0, 60);
    clock_.Advance(1s);
  }
  EXPECT_TRUE(sends_.empty());
  token_replies_ = {Granted("at-lower", 21, "bearer")};
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);
  ASSERT_EQ(sends_.size(), 1u);
  EXPECT_EQ(sends_[0].Header("authorization"), "Bearer at-lower");
}

// verifies: PUSH-259
TEST_F(FcmChannelTest, ClassifiesEveryRowOfTheOutcomeTable) {
  struct Row {
    ScriptedReply reply;
    AnswerClass expected;
    std::chrono::seconds delay;
  };
  const std::string quota_failure =
      R"({"error":{"code":400,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"}]}})";
  const std::vector<Row> rows = {
      {ScriptedReply{.status = 200}, AnswerClass::kDelivered, 1s},
      {ScriptedReply{.status = 429}, AnswerClass::kTransient, 60s},
      {ScriptedReply{.status = 429, .headers = {{"retry-after", "120"}}}, AnswerClass::kTransient,
       120s},
      {ScriptedReply{.status = 429, .headers = {{"retry-after", "30"}}}, AnswerClass::kTransient,
       60s},
      {ScriptedReply{.status = 429, .headers = {{"retry-after", "1000"}}}, AnswerClass::kTransient,
       300s},
      {ScriptedReply{.status = 400, .body = quota_failure}, AnswerClass::kTransient, 60s},
      {FcmError(403, "QUOTA_EXCEEDED"), AnswerClass::kTransient, 60s},
      {ScriptedReply{.status = 500, .body = "<html>"}, AnswerClass::kTransient, 10s},
      {ScriptedReply{.status = 503, .headers = {{"retry-after", "Tue, 14 Nov 2023 22:15:20 GMT"}}},
       AnswerClass::kTransient, 120s},
      {ScriptedReply{.status = 503, .headers = {{"retry-after", "-5"}}}, AnswerClass::kTransient,
       10s},
      {FcmError(500, "UNREGISTERED"), AnswerClass::kTransient, 10s},  // first match wins
      {FcmError(404, "UNREGISTERED"), AnswerClass::kTerminal, 1s},
      {FcmError(403, "SENDER_ID_MISMATCH"), AnswerClass::kMismatch, 1s},
      {FcmError(400, "UNAVAILABLE", {{"retry-after", "45"}}), AnswerClass::kTransient, 45s},
      {FcmError(400, "INTERNAL"), AnswerClass::kTransient, 10s},
      {FcmError(400, "INVALID_ARGUMENT"), AnswerClass::kRejected, 1s},
      {ScriptedReply{.status = 404, .body = R"({"error":{"code":404,"status":"NOT_FOUND"}})"},
       AnswerClass::kRejected, 1s},
      {ScriptedReply{.status = 400,
                     .body = R"({"error":{"details":[{"@type":"type.googleapis.com/other",)"
                             R"("errorCode":"UNREGISTERED"}]}})"},
       AnswerClass::kRejected, 1s},
      {ScriptedReply{.status = 302, .headers = {{"location", "/elsewhere"}}},
       AnswerClass::kRejected, 1s},
      {ScriptedReply{.status = 204}, AnswerClass::kRejected, 1s},
      {ScriptedReply{.status = 200, .body = std::string(16385, 'x')}, AnswerClass::kTransient, 10s},
  };
  auto channel = Channel();
  for (const Row& row : rows) {
    send_replies_ = {row.reply};
    AttemptResult result = Attempt(*channel);
    EXPECT_EQ(result.answer, row.expected)
        << row.reply.status << " " << row.reply.body.substr(0, 80) << " -> "
        << ClassName(result.answer);
    if (row.expected == AnswerClass::kTransient) {
      EXPECT_EQ(result.delay, row.delay) << row.reply.status << " " << row.reply.body.substr(0, 80);
    }
  }
  EXPECT_EQ(sends_.size(), rows.size());
}

// verifies: PUSH-259
TEST_F(FcmChannelTest, TimeoutIsTransientTenSeconds) {
  auto channel = Channel();
  EXPECT_EQ(Attempt(*channel).answer, AnswerClass::kDelivered);  // token cached
  send_replies_ = {ScriptedReply{.stall = true}};
  AttemptResult result = Attempt(*channel, 300ms);
  EXPECT_EQ(result.answer, AnswerClass::kTransient);
  EXPECT_EQ(result.delay, 10s);
}

TEST(FcmChannel, RefusesAServiceAccountItCannotUse) {
  boost::asio::io_context io;
  EXPECT_FALSE(
      FcmChannel::Create(io.get_executor(), config::FcmConfig{.service_account = "{}"}, {}).ok());
  EXPECT_FALSE(
      FcmChannel::Create(
          io.get_executor(),
          config::FcmConfig{.service_account = R"({"project_id":"p","client_email":"e",)"
                                               R"("private_key":"x","token_uri":"https://t"})"},
          {})
          .ok());
}

}  // namespace
}  // namespace xb::push
