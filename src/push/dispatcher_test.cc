// The dispatcher loop (spec/PUSH.md 8, 11) over an in-memory push store (push/fake_push_store.h)
// with scripted channel senders: exactly-once delivery, retries, outcomes, dead deletion, the
// watermark, replay after a restart, drain, ownership loss, no head-of-line blocking.
#include "push/dispatcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "push/fake_push_store.h"
#include "push/scripted_sender.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::push {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using telemetry::PushChannel;
using telemetry::PushOutcome;
using testing::FakeEnvelope;
using testing::FakePushData;
using testing::FakeSubscription;
using testing::Script;
using testing::ScriptedSender;

std::string Id(char c) { return std::string(32, c); }
std::string Topic(char c) { return std::string(1, '\0') + std::string(16, c); }

class DispatcherTest : public ::testing::Test {
 protected:
  void TearDown() override { dispatcher_.reset(); }

  void AddRecipient(char id, Channel channel, const std::string& delivery = "token") {
    std::lock_guard lock(data_->mu);
    data_->recipients[Id(id)] = store::PushRecipient{
        .recipient_id = Id(id),
        .secret_hash = {},
        .channel = static_cast<int32_t>(channel),
        .delivery = delivery,
        .signing_key = channel == Channel::kHttp ? std::optional<std::string>(std::string(16, 'k'))
                                                 : std::nullopt};
  }
  void Subscribe(char id, char topic, int64_t since = 0, bool include_commits = false) {
    std::lock_guard lock(data_->mu);
    data_->subscriptions.push_back(FakeSubscription{.recipient_id = Id(id),
                                                    .topic = Topic(topic),
                                                    .since = since,
                                                    .include_commits = include_commits,
                                                    .hmac_epoch_base = std::nullopt,
                                                    .hmac_keys = {}});
  }
  // Appends an envelope with the next id and moves the boundary to it; returns the id.
  int64_t Publish(char topic, bool eligible = true, bool commit = false) {
    std::lock_guard lock(data_->mu);
    const int64_t id = static_cast<int64_t>(data_->envelopes.size()) + 1;
    data_->envelopes.push_back(FakeEnvelope{.sequence_id = id,
                                            .topic = Topic(topic),
                                            .eligible = eligible,
                                            .is_commit_or_proposal = commit,
                                            .server_ns = 1,
                                            .sender_hmac = std::nullopt,
                                            .payload = {}});
    data_->boundary = id;
    return id;
  }
  int64_t Cursor() {
    std::lock_guard lock(data_->mu);
    return data_->cursor;
  }
  bool LockHeld() {
    std::lock_guard lock(data_->mu);
    return data_->lock_held;
  }

  void Start(std::set<Channel> channels = {Channel::kApns, Channel::kFcm, Channel::kHttp}) {
    auto factory = [channels, script = script_](asio::any_io_executor) {
      ChannelSenders senders;
      for (Channel c : channels) {
        senders[c] = std::make_unique<ScriptedSender>(c, script);
      }
      return senders;
    };
    dispatcher_ = std::make_unique<Dispatcher>(
        store_, factory, metrics_, logger_, [this] { ++boundary_requests_; }, options_);
    dispatcher_->Start();
  }

  // Waits (polling, bounded) until `done` holds.
  static bool WaitFor(const std::function<bool()>& done, milliseconds limit = milliseconds(5000)) {
    const auto until = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() > until) {
        return false;
      }
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }

  uint64_t Outcomes(PushChannel channel, PushOutcome outcome) const {
    return metrics_.push().deliveries.Value(channel, outcome);
  }

  std::shared_ptr<FakePushData> data_ = std::make_shared<FakePushData>();
  testing::FakeStore store_{data_};
  std::shared_ptr<Script> script_ = std::make_shared<Script>();
  telemetry::Metrics metrics_{"test"};
  telemetry::Logger logger_{telemetry::LoggerOptions{.sink = [](std::string_view) {}, .clock = {}}};
  DispatcherOptions options_{
      .poll_interval = milliseconds(10), .max_attempts = 3, .recipient_ttl_seconds = 2592000};
  std::atomic<int> boundary_requests_{0};
  std::unique_ptr<Dispatcher> dispatcher_;
};

// verifies: PUSH-257
TEST_F(DispatcherTest, DeliversEachEligibleEnvelopeOncePerSubscription) {
  AddRecipient('a', Channel::kApns);
  AddRecipient('h', Channel::kHttp, "https://example.org/hook");
  Subscribe('a', 'x');
  Subscribe('h', 'x');
  Subscribe('h', 'y');
  const int64_t e1 = Publish('x');
  Publish('x', /*eligible=*/false);
  const int64_t e3 = Publish('y');
  const int64_t e4 = Publish('z');  // nobody subscribed
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e4; }));
  EXPECT_EQ(metrics_.push().dispatcher.Value(), 1);
  EXPECT_EQ(script_->CallsTo(Id('a'), e1), 1);
  EXPECT_EQ(script_->CallsTo(Id('h'), e1), 1);
  EXPECT_EQ(script_->CallsTo(Id('h'), e3), 1);
  EXPECT_EQ(script_->Calls(), 3);
  EXPECT_EQ(Outcomes(PushChannel::kApns, PushOutcome::kDelivered), 1u);
  EXPECT_EQ(Outcomes(PushChannel::kHttp, PushOutcome::kDelivered), 2u);
  // Later publishes are picked up by later ticks, once.
  const int64_t e5 = Publish('y');
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e5; }));
  EXPECT_EQ(script_->CallsTo(Id('h'), e5), 1);
  EXPECT_EQ(script_->Calls(), 4);
  dispatcher_->Stop();
  EXPECT_EQ(metrics_.push().dispatcher.Value(), 0);
  EXPECT_FALSE(LockHeld());
}

// verifies: PUSH-257
TEST_F(DispatcherTest, CommitsOnlyToIncludeCommitsAndOnlyAfterTheStartPosition) {
  AddRecipient('c', Channel::kFcm);
  AddRecipient('n', Channel::kFcm);
  AddRecipient('s', Channel::kFcm);
  Subscribe('c', 'x', 0, /*include_commits=*/true);
  Subscribe('n', 'x', 0, /*include_commits=*/false);
  Subscribe('s', 'x', /*since=*/2);
  const int64_t e1 = Publish('x');
  const int64_t commit = Publish('x', /*eligible=*/true, /*commit=*/true);
  const int64_t e3 = Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e3; }));
  EXPECT_EQ(script_->CallsTo(Id('c'), commit), 1);
  EXPECT_EQ(script_->CallsTo(Id('n'), commit), 0);
  EXPECT_EQ(script_->CallsTo(Id('s'), e1), 0);
  EXPECT_EQ(script_->CallsTo(Id('s'), commit), 0);
  EXPECT_EQ(script_->CallsTo(Id('s'), e3), 1);
  EXPECT_EQ(script_->Calls(), 6);  // c: 3, n: 2 (no commit), s: 1 (after its start)
}

// verifies: PUSH-259
TEST_F(DispatcherTest, TransientIsRetriedThenFailedAndTheCursorMovesAfterTheFirstAttempt) {
  options_.max_attempts = 2;
  script_->answer = [](Channel, const Target&, const PushMessage&, int) {
    return AttemptResult{.answer = AnswerClass::kTransient, .delay = milliseconds(0)};
  };
  AddRecipient('a', Channel::kApns);
  Subscribe('a', 'x');
  const int64_t e1 = Publish('x');
  Start();
  // The first attempt completes the window: the cursor moves while the retry waits (>= 1 s).
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e1; }));
  EXPECT_EQ(script_->Calls(), 1);
  EXPECT_EQ(Outcomes(PushChannel::kApns, PushOutcome::kFailed), 0u) << "not final yet";
  ASSERT_TRUE(WaitFor([&] { return Outcomes(PushChannel::kApns, PushOutcome::kFailed) == 1; }));
  EXPECT_EQ(script_->Calls(), 2);
}

// verifies: PUSH-257
TEST_F(DispatcherTest, TheCursorWaitsForFirstAttemptsInFlight) {
  script_->held = {Channel::kApns};
  AddRecipient('a', Channel::kApns);
  AddRecipient('f', Channel::kFcm);
  Subscribe('a', 'x');
  Subscribe('f', 'y');
  const int64_t e1 = Publish('x');
  const int64_t e2 = Publish('y');
  Start();
  ASSERT_TRUE(
      WaitFor([&] { return script_->CallsTo(Id('f'), e2) == 1 && script_->in_flight == 1; }));
  ASSERT_TRUE(WaitFor([&] { return Outcomes(PushChannel::kFcm, PushOutcome::kDelivered) == 1; }));
  std::this_thread::sleep_for(milliseconds(50));  // several ticks
  EXPECT_EQ(Cursor(), 0) << "the window of e1 is not complete";
  script_->Release(Channel::kApns);
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e2; }));
  EXPECT_EQ(script_->CallsTo(Id('a'), e1), 1);
}

// verifies: PUSH-234
TEST_F(DispatcherTest, TerminalDeletesTheUnchangedRecipientAndDropsItsQueuedDeliveries) {
  options_.max_attempts = 1;
  script_->answer = [](Channel, const Target&, const PushMessage&, int) {
    return AttemptResult{.answer = AnswerClass::kTerminal};
  };
  AddRecipient('d', Channel::kApns);
  Subscribe('d', 'x');
  Publish('x');
  Publish('x');
  const int64_t e3 = Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e3; }));
  EXPECT_EQ(metrics_.push().recipients.Value(telemetry::PushRecipientAction::kDead), 1u);
  {
    std::lock_guard lock(data_->mu);
    EXPECT_TRUE(data_->recipients.empty());
  }
  // Every delivery has exactly one final outcome: the attempted ones dead, the discarded failed.
  const uint64_t dead = Outcomes(PushChannel::kApns, PushOutcome::kDead);
  const uint64_t failed = Outcomes(PushChannel::kApns, PushOutcome::kFailed);
  EXPECT_GE(dead, 1u);
  EXPECT_EQ(dead, static_cast<uint64_t>(script_->Calls()));
  EXPECT_EQ(dead + failed, 3u);
}

// verifies: PUSH-234
TEST_F(DispatcherTest, TerminalDoesNotDeleteARecipientThatReRegisteredMeanwhile) {
  script_->answer = [this](Channel, const Target&, const PushMessage&, int) {
    AddRecipient('d', Channel::kApns, "a new token");  // re-registered during the attempt
    return AttemptResult{.answer = AnswerClass::kTerminal};
  };
  AddRecipient('d', Channel::kApns, "old token");
  Subscribe('d', 'x');
  const int64_t e1 = Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e1; }));
  ASSERT_TRUE(WaitFor([&] { return Outcomes(PushChannel::kApns, PushOutcome::kDead) == 1; }));
  dispatcher_->Stop();
  EXPECT_EQ(metrics_.push().recipients.Value(telemetry::PushRecipientAction::kDead), 0u);
  ASSERT_EQ(data_->recipients.count(Id('d')), 1u);
  EXPECT_EQ(data_->recipients[Id('d')].delivery, "a new token");
}

// verifies: PUSH-234
TEST_F(DispatcherTest, WebhookGoneOnEveryAttemptIsDead) {
  options_.max_attempts = 2;
  script_->answer = [](Channel, const Target&, const PushMessage&, int) {
    return AttemptResult{.answer = AnswerClass::kGone};
  };
  AddRecipient('h', Channel::kHttp, "https://example.org/hook");
  Subscribe('h', 'x');
  Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return Outcomes(PushChannel::kHttp, PushOutcome::kDead) == 1; }));
  EXPECT_EQ(script_->Calls(), 2);
  ASSERT_TRUE(WaitFor([&] {
    return metrics_.push().recipients.Value(telemetry::PushRecipientAction::kDead) == 1;
  }));
}

// verifies: PUSH-257
TEST_F(DispatcherTest, AChannelWithoutASenderFailsWithoutARequest) {
  AddRecipient('f', Channel::kFcm);
  Subscribe('f', 'x');
  const int64_t e1 = Publish('x');
  Start({Channel::kApns});
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e1; }));
  EXPECT_EQ(script_->Calls(), 0);
  EXPECT_EQ(Outcomes(PushChannel::kFcm, PushOutcome::kFailed), 1u);
}

// verifies: PUSH-257
TEST_F(DispatcherTest, ARestartReplaysFromThePersistedCursor) {
  AddRecipient('a', Channel::kApns);
  Subscribe('a', 'x');
  Publish('x');
  Publish('x');
  const int64_t e3 = Publish('x');
  {
    std::lock_guard lock(data_->mu);
    data_->cursor = 2;  // what an earlier run persisted
  }
  script_->held = {Channel::kApns};
  Start();
  ASSERT_TRUE(WaitFor([&] { return script_->in_flight == 1; }));
  // Stopped while the first attempt is in flight (it ends during Stop's wait for attempts):
  // nothing is persisted past 2.
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(100));
    script_->Release(Channel::kApns);
  });
  dispatcher_->Stop();
  releaser.join();
  EXPECT_EQ(Cursor(), 2);
  EXPECT_FALSE(LockHeld());
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e3; }));
  EXPECT_EQ(script_->CallsTo(Id('a'), 1), 0);
  EXPECT_EQ(script_->CallsTo(Id('a'), 2), 0);
  EXPECT_EQ(script_->CallsTo(Id('a'), e3), 2) << "the replay repeats the unanswered attempt";
}

// verifies: PUSH-257
TEST_F(DispatcherTest, DrainLetsQueuedAttemptsFinishAndPersistsTheCursor) {
  AddRecipient('a', Channel::kApns);
  Subscribe('a', 'x');
  const int64_t e1 = Publish('x');
  const int64_t e2 = Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e2; }));
  script_->held = {Channel::kApns};
  const int64_t e3 = Publish('x');
  ASSERT_TRUE(WaitFor([&] { return script_->in_flight == 1; }));
  // Released before the deadline: the drain waits for it, persists, releases the lock.
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(100));
    script_->Release(Channel::kApns);
  });
  dispatcher_->Drain(Clock::now() + milliseconds(3000));
  releaser.join();
  EXPECT_EQ(Cursor(), e3);
  EXPECT_FALSE(LockHeld());
  EXPECT_EQ(metrics_.push().dispatcher.Value(), 0);
  EXPECT_EQ(script_->CallsTo(Id('a'), e1), 1);
  // Nothing is loaded after the drain began.
  Publish('x');
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(script_->Calls(), 3);
}

// verifies: PUSH-257
TEST_F(DispatcherTest, DrainDeadlineReleasesTheLockWithTheUnfinishedWindowUnpersisted) {
  AddRecipient('a', Channel::kApns);
  Subscribe('a', 'x');
  script_->held = {Channel::kApns};
  Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return script_->in_flight == 1; }));
  const auto began = Clock::now();
  dispatcher_->Drain(Clock::now() + milliseconds(400));
  EXPECT_LT(Clock::now() - began, milliseconds(1500));
  EXPECT_FALSE(LockHeld());
  EXPECT_EQ(Cursor(), 0);
  script_->Release(Channel::kApns);
}

// verifies: PUSH-257
TEST_F(DispatcherTest, ASlowChannelDoesNotBlockAnother) {
  script_->held = {Channel::kApns};
  for (char c = 'a'; c < 'a' + 3; ++c) {
    AddRecipient(c, Channel::kApns);
    Subscribe(c, 'x');
  }
  AddRecipient('H', Channel::kHttp, "https://example.org/hook");
  Subscribe('H', 'x');
  for (int i = 0; i < 100; ++i) {
    Publish('x');  // 300 APNs deliveries (past the 256 in flight) and 100 webhooks
  }
  Start();
  ASSERT_TRUE(
      WaitFor([&] { return Outcomes(PushChannel::kHttp, PushOutcome::kDelivered) == 100; }));
  EXPECT_EQ(script_->in_flight.load(), static_cast<int>(kInFlightPerChannel));
  EXPECT_EQ(Outcomes(PushChannel::kApns, PushOutcome::kDelivered), 0u);
  EXPECT_EQ(Cursor(), 0);
  script_->Release(Channel::kApns);
  ASSERT_TRUE(
      WaitFor([&] { return Outcomes(PushChannel::kApns, PushOutcome::kDelivered) == 300; }));
  ASSERT_TRUE(WaitFor([&] { return Cursor() == 100; }));
}

// verifies: PUSH-257
TEST_F(DispatcherTest, OwnershipLossStopsWritesReleasesAndRetries) {
  AddRecipient('a', Channel::kApns);
  Subscribe('a', 'x');
  const int64_t e1 = Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e1; }));
  EXPECT_EQ(metrics_.push().dispatcher.Value(), 1);
  {
    std::lock_guard lock(data_->mu);
    data_->lock_broken = true;
  }
  ASSERT_TRUE(WaitFor([&] { return metrics_.push().dispatcher.Value() == 0; }));
  EXPECT_FALSE(LockHeld());
  const int64_t e2 = Publish('x');
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(script_->CallsTo(Id('a'), e2), 0) << "nothing loaded without the lock";
  {
    std::lock_guard lock(data_->mu);
    data_->lock_broken = false;
  }
  ASSERT_TRUE(WaitFor([&] { return Cursor() == e2; }));
  EXPECT_EQ(metrics_.push().dispatcher.Value(), 1);
}

// verifies: PUSH-257
TEST_F(DispatcherTest, AFailedCursorCompareAndSetIsAnOwnershipLoss) {
  AddRecipient('a', Channel::kApns);
  Subscribe('a', 'x');
  script_->held = {Channel::kApns};
  const int64_t e1 = Publish('x');
  Start();
  ASSERT_TRUE(WaitFor([&] { return script_->in_flight == 1; }));
  {
    std::lock_guard lock(data_->mu);
    data_->cursor = 77;  // another writer
  }
  script_->Release(Channel::kApns);
  ASSERT_TRUE(WaitFor([&] { return script_->CallsTo(Id('a'), e1) == 1; }));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(data_->mu);
    return data_->locks_opened >= 2;  // the holding ended and the election began again
  }));
  EXPECT_EQ(Cursor(), 77) << "never written lower";
}

// verifies: PUSH-226
TEST_F(DispatcherTest, RetentionRunsOnTheFirstTickAndCountsExpired) {
  {
    std::lock_guard lock(data_->mu);
    data_->expire_next = 4;
  }
  Start();
  ASSERT_TRUE(WaitFor([&] {
    return metrics_.push().recipients.Value(telemetry::PushRecipientAction::kExpired) == 4;
  }));
  std::this_thread::sleep_for(milliseconds(50));
  std::lock_guard lock(data_->mu);
  EXPECT_EQ(data_->retention_passes, 1) << "not again before an hour";
}

TEST_F(DispatcherTest, EligibleAboveTheBoundaryAsksTheBoundaryToAdvance) {
  Publish('x');
  {
    std::lock_guard lock(data_->mu);
    data_->boundary = 0;
  }
  Start();
  ASSERT_TRUE(WaitFor([&] { return boundary_requests_ > 0; }));
}

}  // namespace
}  // namespace xb::push
