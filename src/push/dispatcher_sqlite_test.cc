// The dispatcher against a real SQLite store (store/sqlite): recipients and subscriptions through
// the push store, envelopes through CommitPublish with push_eligible items, the cursor and the
// dead deletion in the database; the channels are scripted.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "push/dispatcher.h"
#include "push/scripted_sender.h"
#include "store/push.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/test_support.h"
#include "store/store_test_data.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::push {
namespace {

using std::chrono::milliseconds;
using telemetry::PushChannel;
using telemetry::PushOutcome;
using testing::Script;
using testing::ScriptedSender;
using Clock = std::chrono::steady_clock;

std::string Id(uint8_t n) { return std::string(32, static_cast<char>(n)); }

store::PushRecipient Apns(uint8_t n, std::string token = "a0b1c2d3") {
  store::Hash secret{};
  secret.fill(n);
  return store::PushRecipient{.recipient_id = Id(n),
                              .secret_hash = secret,
                              .channel = 1,
                              .delivery = std::move(token),
                              .signing_key = std::nullopt};
}

class DispatcherSqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened =
        store::sqlite::SqliteStore::Open({.path = dir_.File("xmtp.db"), .max_readers = 2});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    push_ = store_->push();
    ASSERT_NE(push_, nullptr);
  }
  void TearDown() override { dispatcher_.reset(); }

  void Register(const store::PushRecipient& r) {
    auto answer = push_->RegisterRecipient(r);
    ASSERT_TRUE(answer.ok());
    ASSERT_EQ(answer.value().verdict, store::PushVerdict::kOk);
  }
  void Subscribe(const store::PushRecipient& r, const std::string& topic, bool commits = false) {
    auto answer = push_->UpdateSubscriptions(
        r.recipient_id, r.secret_hash,
        {store::SubscriptionAdd{
            .topic = topic, .hmac_epoch_base = 0, .hmac_keys = {}, .include_commits = commits}},
        {}, 100);
    ASSERT_TRUE(answer.ok());
    ASSERT_EQ(answer.value().verdict, store::PushVerdict::kOk);
  }
  int64_t Publish(const std::string& topic, const std::string& payload, bool eligible = true,
                  bool commit = false) {
    store::PublishItem item = store::test_data::Item(
        topic, payload,
        commit ? store::RetentionClass::kExempt : store::RetentionClass::kGroupMessage);
    item.push_eligible = eligible;
    item.is_commit_or_proposal = commit;
    auto stored = store_->CommitPublish(store::test_data::Request({item}));
    EXPECT_TRUE(stored.ok()) << (stored.ok() ? "" : stored.error().message);
    auto advanced = store_->AdvanceBoundary();
    EXPECT_TRUE(advanced.ok());
    return stored.ok() ? stored.value().metas[0].sequence_id : 0;
  }
  int64_t Cursor() {
    auto lock = push_->OpenPushLock();
    if (!lock.ok()) {
      return -1;
    }
    auto cursor = lock.value()->ReadCursor();
    return cursor.ok() ? cursor.value() : -1;
  }
  void Start() {
    auto factory = [script = script_](boost::asio::any_io_executor) {
      ChannelSenders senders;
      senders[Channel::kApns] = std::make_unique<ScriptedSender>(Channel::kApns, script);
      return senders;
    };
    dispatcher_ =
        std::make_unique<Dispatcher>(*store_, factory, metrics_, logger_, nullptr, options_);
    dispatcher_->Start();
  }
  static bool WaitFor(const std::function<bool()>& done) {
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (Clock::now() > until) {
        return false;
      }
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }

  store::sqlite::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  store::PushStore* push_ = nullptr;
  std::shared_ptr<Script> script_ = std::make_shared<Script>();
  telemetry::Metrics metrics_{"test"};
  telemetry::Logger logger_{telemetry::LoggerOptions{.sink = [](std::string_view) {}, .clock = {}}};
  DispatcherOptions options_{.poll_interval = milliseconds(10)};
  std::unique_ptr<Dispatcher> dispatcher_;
};

// verifies: PUSH-257
TEST_F(DispatcherSqliteTest, ExactlyOncePerSubscriptionWithCommitsAndStartPositions) {
  const std::string topic = store::test_data::GroupTopic(1);
  const int64_t before = Publish(topic, "before any subscription");
  Register(Apns(1));
  Register(Apns(2));
  Subscribe(Apns(1), topic, /*commits=*/true);
  Subscribe(Apns(2), topic, /*commits=*/false);
  const int64_t message = Publish(topic, "message");
  const int64_t commit = Publish(topic, "commit", /*eligible=*/true, /*commit=*/true);
  const int64_t quiet = Publish(topic, "not eligible", /*eligible=*/false);
  ASSERT_GT(quiet, commit);
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() >= commit; }));
  EXPECT_EQ(script_->CallsTo(Id(1), before), 0);
  EXPECT_EQ(script_->CallsTo(Id(1), message), 1);
  EXPECT_EQ(script_->CallsTo(Id(2), message), 1);
  EXPECT_EQ(script_->CallsTo(Id(1), commit), 1);
  EXPECT_EQ(script_->CallsTo(Id(2), commit), 0);
  EXPECT_EQ(script_->CallsTo(Id(1), quiet), 0);
  EXPECT_EQ(script_->Calls(), 3);
  EXPECT_EQ(metrics_.push().deliveries.Value(PushChannel::kApns, PushOutcome::kDelivered), 3u);
}

// verifies: PUSH-234
TEST_F(DispatcherSqliteTest, TerminalDeletesTheRecipientInTheDatabase) {
  options_.max_attempts = 1;
  script_->answer = [](Channel, const Target&, const PushMessage&, int) {
    return AttemptResult{.answer = AnswerClass::kTerminal};
  };
  const std::string topic = store::test_data::GroupTopic(2);
  Register(Apns(3));
  Subscribe(Apns(3), topic);
  Publish(topic, "one");
  Start();
  ASSERT_TRUE(WaitFor([&] {
    return metrics_.push().recipients.Value(telemetry::PushRecipientAction::kDead) == 1;
  }));
  auto check = push_->CheckRecipient(Id(3), Apns(3).secret_hash);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check.value(), store::RecipientCheck::kAbsent);
}

// verifies: PUSH-257
TEST_F(DispatcherSqliteTest, ARestartContinuesFromThePersistedCursor) {
  const std::string topic = store::test_data::GroupTopic(3);
  Register(Apns(4));
  Subscribe(Apns(4), topic);
  const int64_t first = Publish(topic, "first");
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == first; }));
  dispatcher_->Stop();
  dispatcher_.reset();
  const int64_t second = Publish(topic, "second");
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == second; }));
  EXPECT_EQ(script_->CallsTo(Id(4), first), 1) << "not replayed";
  EXPECT_EQ(script_->CallsTo(Id(4), second), 1);
}

// A commit wakes the holder between ticks: with a tick a minute apart, the push goes out once
// Wake() is called, not at the next tick.
TEST_F(DispatcherSqliteTest, AWakeLoadsBetweenTicks) {
  options_.poll_interval = std::chrono::minutes(1);
  const std::string topic = store::test_data::GroupTopic(4);
  Register(Apns(5));
  Subscribe(Apns(5), topic);
  const int64_t first = Publish(topic, "sent by the first tick");
  Start();
  ASSERT_TRUE(WaitFor([&] { return script_->CallsTo(Id(5), first) == 1; }));
  const int64_t sent = Publish(topic, "after the first tick");
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(script_->Calls(), 1) << "the first tick has passed; the next one is a minute away";
  dispatcher_->Wake();
  ASSERT_TRUE(WaitFor([&] { return script_->CallsTo(Id(5), sent) == 1; }));
  EXPECT_EQ(script_->Calls(), 2);
}

}  // namespace
}  // namespace xb::push
