// The dispatcher's bounded queue (spec/PUSH.md 8.3, 8.5).
#include "push/delivery_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace xb::push {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

store::PushRecipient Recipient(const std::string& id, Channel channel) {
  return store::PushRecipient{.recipient_id = id,
                              .secret_hash = {},
                              .channel = static_cast<int32_t>(channel),
                              .delivery = "token-" + id,
                              .signing_key = std::nullopt};
}

Delivery Make(Channel channel, uint64_t sequence_id, const std::string& id = "r") {
  return Delivery{.window = 0,
                  .first_attempted = false,
                  .state = {},
                  .channel = channel,
                  .recipient = Recipient(id, channel),
                  .message = PushMessage{.topic = "t", .sequence_id = sequence_id}};
}

TEST(DeliveryQueueTest, RoomCountsQueuedAndInFlight) {
  DeliveryQueue q(3, 10);
  EXPECT_EQ(q.room(), 3u);
  q.Push(Make(Channel::kApns, 1));
  q.Push(Make(Channel::kApns, 2));
  EXPECT_EQ(q.room(), 1u);
  auto next = q.NextReady(Channel::kApns, Clock::now());
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->message.sequence_id, 1u);
  EXPECT_EQ(q.room(), 1u) << "in flight still counts";
  EXPECT_EQ(q.in_flight(Channel::kApns), 1u);
  EXPECT_EQ(q.queued(), 1u);
  q.Finished(Channel::kApns);
  EXPECT_EQ(q.room(), 2u);
}

// verifies: PUSH-257
TEST(DeliveryQueueTest, ASaturatedChannelDoesNotHoldBackAnother) {
  DeliveryQueue q(100, 2);
  for (uint64_t i = 0; i < 5; ++i) {
    q.Push(Make(Channel::kApns, i));
  }
  q.Push(Make(Channel::kHttp, 99));
  const auto now = Clock::now();
  EXPECT_TRUE(q.NextReady(Channel::kApns, now).has_value());
  EXPECT_TRUE(q.NextReady(Channel::kApns, now).has_value());
  EXPECT_FALSE(q.NextReady(Channel::kApns, now).has_value()) << "two in flight at most";
  auto http = q.NextReady(Channel::kHttp, now);
  ASSERT_TRUE(http.has_value());
  EXPECT_EQ(http->message.sequence_id, 99u);
  q.Finished(Channel::kApns);
  EXPECT_TRUE(q.NextReady(Channel::kApns, now).has_value());
}

// verifies: PUSH-259
TEST(DeliveryQueueTest, ARetryWaitsForItsDueTimeAndKeepsItsPlace) {
  DeliveryQueue q(1, 10);
  const auto now = Clock::now();
  q.Push(Make(Channel::kFcm, 7));
  auto d = q.NextReady(Channel::kFcm, now);
  ASSERT_TRUE(d.has_value());
  q.Retry(std::move(*d), now + seconds(10));
  EXPECT_EQ(q.room(), 0u);
  EXPECT_EQ(q.NextDue(), now + seconds(10));
  EXPECT_FALSE(q.NextReady(Channel::kFcm, now + seconds(9)).has_value());
  auto again = q.NextReady(Channel::kFcm, now + seconds(10));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->message.sequence_id, 7u);
  EXPECT_FALSE(q.NextDue().has_value());
  q.Finished(Channel::kFcm);
  EXPECT_TRUE(q.empty());
}

TEST(DeliveryQueueTest, RetriesComeDueInDueOrder) {
  DeliveryQueue q(10, 10);
  const auto now = Clock::now();
  for (uint64_t i = 0; i < 3; ++i) {
    q.Push(Make(Channel::kApns, i));
  }
  auto a = q.NextReady(Channel::kApns, now);
  auto b = q.NextReady(Channel::kApns, now);
  auto c = q.NextReady(Channel::kApns, now);
  q.Retry(std::move(*a), now + seconds(30));
  q.Retry(std::move(*b), now + seconds(10));
  q.Retry(std::move(*c), now + seconds(20));
  EXPECT_EQ(q.NextDue(), now + seconds(10));
  EXPECT_EQ(q.NextReady(Channel::kApns, now + seconds(15))->message.sequence_id, 1u);
  EXPECT_EQ(q.NextReady(Channel::kApns, now + seconds(25))->message.sequence_id, 2u);
  EXPECT_EQ(q.NextReady(Channel::kApns, now + seconds(35))->message.sequence_id, 0u);
}

// verifies: PUSH-234
TEST(DeliveryQueueTest, DiscardConfigurationTakesQueuedAndWaitingButNotInFlight) {
  DeliveryQueue q(10, 10);
  const auto now = Clock::now();
  q.Push(Make(Channel::kHttp, 1, "dead"));
  q.Push(Make(Channel::kHttp, 2, "dead"));
  q.Push(Make(Channel::kHttp, 3, "alive"));
  q.Push(Make(Channel::kHttp, 4, "dead"));
  auto first = q.NextReady(Channel::kHttp, now);   // 1: goes to wait for a retry
  auto second = q.NextReady(Channel::kHttp, now);  // 2: stays in flight
  q.Retry(std::move(*first), now + seconds(5));
  auto discarded = q.DiscardConfiguration(Recipient("dead", Channel::kHttp));
  ASSERT_EQ(discarded.size(), 2u);  // 4 (ready) and 1 (waiting)
  EXPECT_EQ(q.in_flight(Channel::kHttp), 1u);
  EXPECT_EQ(q.queued(), 1u);
  EXPECT_EQ(q.NextReady(Channel::kHttp, now + seconds(60))->message.sequence_id, 3u);
  // Another configuration of the same id (re-registered) is not the same configuration.
  store::PushRecipient changed = Recipient("alive", Channel::kHttp);
  changed.delivery = "another";
  q.Push(Make(Channel::kHttp, 5, "alive"));
  EXPECT_TRUE(q.DiscardConfiguration(changed).empty());
}

TEST(DeliveryQueueTest, TakeAllEmptiesTheQueuesButNotTheFlight) {
  DeliveryQueue q(10, 10);
  const auto now = Clock::now();
  q.Push(Make(Channel::kApns, 1));
  q.Push(Make(Channel::kFcm, 2));
  q.Push(Make(Channel::kFcm, 3));
  auto d = q.NextReady(Channel::kFcm, now);
  EXPECT_EQ(q.TakeAll().size(), 2u);
  EXPECT_EQ(q.queued(), 0u);
  EXPECT_FALSE(q.empty());
  q.Finished(Channel::kFcm);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace xb::push
