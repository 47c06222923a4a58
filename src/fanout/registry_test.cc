#include "fanout/registry.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xb::fanout {
namespace {

RowPtr Row(int64_t id, std::string topic) {
  auto row = std::make_shared<DeliveryRow>();
  row->sequence_id = id;
  row->topic = std::move(topic);
  row->encoded = "e" + std::to_string(id);
  return row;
}

class RegistryTest : public ::testing::Test {
 protected:
  telemetry::Metrics metrics_{"test"};
  Registry registry_{metrics_};
  int wakes_ = 0;
  SessionState session_{[this] { ++wakes_; }};
};

// verifies: OPS-006 (streams are refused until recovery completed)
TEST_F(RegistryTest, RefusesSessionsUntilReady) {
  EXPECT_FALSE(registry_.Open(session_));
  registry_.SetReady();
  EXPECT_TRUE(registry_.Open(session_));
  EXPECT_EQ(metrics_.tailer().ready.Value(), 1);
  registry_.Close(session_);
}

// verifies: STORE.md 5.5 (catching up: coalesced notice only; live: the shared row)
TEST_F(RegistryTest, CatchingUpGetsNoticesAndLiveGetsRows) {
  registry_.SetReady();
  ASSERT_TRUE(registry_.Open(session_));
  auto a = std::make_shared<Registration>("A", 0, &session_);
  auto b = std::make_shared<Registration>("B", 0, &session_);
  ASSERT_TRUE(registry_.Add(session_, {a, b}));
  EXPECT_EQ(metrics_.stream().topics_registered.Value(), 2);
  registry_.SetTargets({a, b}, {5, 0});
  EXPECT_EQ(registry_.Needed(*a), 5);

  // B has nothing to catch up: it turns live; A does not (floor 0 < 5).
  EXPECT_TRUE(registry_.TrySwitchLive(*b));
  EXPECT_FALSE(registry_.TrySwitchLive(*a));

  registry_.Dispatch({Row(7, "A"), Row(8, "B"), Row(9, "C")});
  EXPECT_EQ(wakes_, 1);  // one wake-up per dispatch per session
  EXPECT_EQ(registry_.Needed(*a), 7);

  std::vector<LiveItem> live;
  std::optional<Ending> failure;
  registry_.Drain(session_, &live, &failure);
  EXPECT_FALSE(failure);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].registration, b);
  EXPECT_EQ(live[0].row->sequence_id, 8);

  // A reaches its needed id and switches; the next row for A is delivered live.
  a->floor = 7;
  EXPECT_TRUE(registry_.TrySwitchLive(*a));
  registry_.Dispatch({Row(10, "A")});
  registry_.Drain(session_, &live, &failure);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].registration, a);

  registry_.Remove(session_, {a});
  registry_.Dispatch({Row(11, "A")});
  registry_.Drain(session_, &live, &failure);
  EXPECT_TRUE(live.empty());
  EXPECT_EQ(metrics_.stream().topics_registered.Value(), 1);
  registry_.Close(session_);
  EXPECT_EQ(metrics_.stream().topics_registered.Value(), 0);
}

// verifies: STORE.md 5.5 (a notice for a catching-up registration wakes its session; rows at or
// below its target are not notices)
TEST_F(RegistryTest, ANoticeAloneWakesTheSessionOnce) {
  registry_.SetReady();
  ASSERT_TRUE(registry_.Open(session_));
  auto a = std::make_shared<Registration>("A", 0, &session_);
  ASSERT_TRUE(registry_.Add(session_, {a}));
  registry_.SetTargets({a}, {5});
  registry_.Dispatch({Row(4, "A")});
  EXPECT_EQ(wakes_, 0);
  registry_.Dispatch({Row(6, "A"), Row(9, "A")});
  EXPECT_EQ(wakes_, 1);
  EXPECT_EQ(registry_.Needed(*a), 9);
  registry_.Dispatch({Row(10, "A")});
  EXPECT_EQ(wakes_, 1);  // coalesced until the session takes its wake-up
  session_.WakeDelivered();
  registry_.Dispatch({Row(11, "A")});
  EXPECT_EQ(wakes_, 2);
  std::vector<LiveItem> live;
  std::optional<Ending> failure;
  registry_.Drain(session_, &live, &failure);
  EXPECT_TRUE(live.empty());  // notices carry no rows
  registry_.Close(session_);
}

// verifies: OPS-006 (recovery ends every stream and refuses new ones)
// The store asks this at each commit: any registered topic makes the tailer's wake-up urgent.
TEST_F(RegistryTest, HasRegistrationsFollowsAddsRemovesAndFailAll) {
  registry_.SetReady();
  ASSERT_TRUE(registry_.Open(session_));
  EXPECT_FALSE(registry_.has_registrations());
  auto a = std::make_shared<Registration>("A", 0, &session_);
  auto b = std::make_shared<Registration>("B", 0, &session_);
  ASSERT_TRUE(registry_.Add(session_, {a, b}));
  EXPECT_TRUE(registry_.has_registrations());
  registry_.Remove(session_, {a});
  EXPECT_TRUE(registry_.has_registrations());
  registry_.Remove(session_, {b});
  EXPECT_FALSE(registry_.has_registrations());
  ASSERT_TRUE(registry_.Add(session_, {a}));
  registry_.FailAll(Ending{Status(StatusCode::kUnavailable, "recovery")});
  EXPECT_FALSE(registry_.has_registrations());
  registry_.Close(session_);
}

TEST_F(RegistryTest, FailAllEndsSessionsAndRefusesNewOnes) {
  registry_.SetReady();
  ASSERT_TRUE(registry_.Open(session_));
  auto a = std::make_shared<Registration>("A", 0, &session_);
  ASSERT_TRUE(registry_.Add(session_, {a}));
  registry_.FailAll(Ending{Status(StatusCode::kResourceExhausted, "gaps"),
                           telemetry::StreamEndReason::kCapacity});
  EXPECT_EQ(wakes_, 1);
  EXPECT_FALSE(registry_.ready());
  EXPECT_EQ(metrics_.tailer().ready.Value(), 0);
  EXPECT_EQ(metrics_.stream().topics_registered.Value(), 0);
  std::vector<LiveItem> live;
  std::optional<Ending> failure;
  registry_.Drain(session_, &live, &failure);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(failure->reason, telemetry::StreamEndReason::kCapacity);
  // A registration attempted after the failure is refused.
  auto b = std::make_shared<Registration>("B", 0, &session_);
  EXPECT_FALSE(registry_.Add(session_, {b}));
  SessionState other([] {});
  EXPECT_FALSE(registry_.Open(other));
  registry_.Close(session_);
}

// verifies: API.md 3.8 backpressure (live rows a session does not take fail it, never queue
// without bound)
TEST(RegistryInboxTest, ASessionThatDoesNotTakeItsRowsFailsResourceExhausted) {
  telemetry::Metrics metrics("test");
  Registry registry(metrics, /*max_inbox_bytes=*/10);
  int wakes = 0;
  SessionState session([&] { ++wakes; });
  registry.SetReady();
  ASSERT_TRUE(registry.Open(session));
  auto a = std::make_shared<Registration>("A", 0, &session);
  ASSERT_TRUE(registry.Add(session, {a}));
  ASSERT_TRUE(registry.TrySwitchLive(*a));
  registry.Dispatch({Row(1, "A"), Row(2, "A"), Row(3, "A")});  // "e1" "e2" "e3": 6 bytes
  std::vector<LiveItem> live;
  std::optional<Ending> failure;
  registry.Drain(session, &live, &failure);
  EXPECT_EQ(live.size(), 3u);
  EXPECT_FALSE(failure);
  registry.Dispatch({Row(4, "A"), Row(5, "A"), Row(6, "A"), Row(7, "A"), Row(8, "A"), Row(9, "A")});
  registry.Drain(session, &live, &failure);
  EXPECT_TRUE(live.empty());
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(failure->reason, telemetry::StreamEndReason::kBackpressure);
  registry.Close(session);
}

// Sessions on one io_context, each registered live on topic "A".
class RegistryWakeTest : public ::testing::Test {
 protected:
  void SetUp() override { registry_.SetReady(); }
  void TearDown() override {
    for (auto& session : sessions_) {
      registry_.Close(*session);
    }
  }

  // A session of connection `group`, open and live on "A"; `wake` runs on io_.
  SessionState& AddLive(const void* group, std::function<void()> wake) {
    sessions_.push_back(std::make_shared<SessionState>(io_.get_executor(), group, std::move(wake)));
    SessionState& session = *sessions_.back();
    EXPECT_TRUE(registry_.Open(session));
    auto reg = std::make_shared<Registration>("A", 0, &session);
    EXPECT_TRUE(registry_.Add(session, {reg}));
    EXPECT_TRUE(registry_.TrySwitchLive(*reg));
    return session;
  }

  // A wake-up that appends `name` to events_ and posts the connection's write ('x').
  std::function<void()> WakeThatWrites(char name) {
    return [this, name] {
      events_ += name;
      boost::asio::post(io_, [this] { events_ += 'x'; });
    };
  }

  telemetry::Metrics metrics_{"test"};
  Registry registry_{metrics_};
  boost::asio::io_context io_;
  std::vector<std::shared_ptr<SessionState>> sessions_;
  std::string events_;
};

// verifies: STORE.md 5.5 (dispatch never blocks; the sessions one dispatch touches on one
// executor are woken by one hand-off, and a session gone meanwhile is skipped)
TEST_F(RegistryWakeTest, SessionsOnOneExecutorAreWokenByOnePostPerDispatch) {
  std::vector<int> woken;
  for (int i = 0; i < 3; ++i) {
    AddLive(nullptr, [&woken, i] { woken.push_back(i); });
  }
  registry_.Dispatch({Row(1, "A")});
  EXPECT_TRUE(woken.empty());  // nothing runs on the dispatching thread
  EXPECT_EQ(io_.run(), 1u);    // one handler woke all three
  EXPECT_EQ(woken, (std::vector<int>{0, 1, 2}));

  // The next dispatch wakes only the sessions that took their wake-up; a detached one (its owner
  // is gone) is not called.
  sessions_[0]->WakeDelivered();
  sessions_[2]->WakeDelivered();
  sessions_[2]->Detach();
  woken.clear();
  registry_.Dispatch({Row(2, "A")});
  io_.restart();
  EXPECT_EQ(io_.run(), 1u);
  EXPECT_EQ(woken, (std::vector<int>{0}));
}

// verifies: STORE.md 5.5 (one connection per turn: the sessions of one connection are woken
// together, and what their wake-ups post (the connection's write) runs before the next
// connection's wake-ups)
TEST_F(RegistryWakeTest, EachConnectionsSessionsAreWokenTogetherAndItsWriteRunsBeforeTheNext) {
  const char connections[2] = {'a', 'b'};
  const size_t per_connection = Registry::kWakesPerTurn;
  for (size_t i = 0; i < 2 * per_connection; ++i) {
    const char& connection = connections[i % 2];  // registered interleaved: a, b, a, b, ...
    AddLive(&connection, WakeThatWrites(connection));
  }
  registry_.Dispatch({Row(1, "A")});
  io_.run();
  const std::string writes(per_connection, 'x');
  EXPECT_EQ(events_,
            std::string(per_connection, 'a') + writes + std::string(per_connection, 'b') + writes);
}

// verifies: STORE.md 5.5 (small groups share a turn: 100 connections of one stream each are
// woken in two hand-offs of up to kWakesPerTurn wake-ups, each followed by the writes it posted)
TEST_F(RegistryWakeTest, ConnectionsWithOneStreamEachShareTurns) {
  static_assert(Registry::kWakesPerTurn < 100);
  std::vector<char> connections(100);
  for (char& connection : connections) {
    AddLive(&connection, WakeThatWrites('w'));
  }
  registry_.Dispatch({Row(1, "A")});
  io_.run();
  const size_t first = Registry::kWakesPerTurn;
  const size_t second = connections.size() - first;
  EXPECT_EQ(events_, std::string(first, 'w') + std::string(first, 'x') + std::string(second, 'w') +
                         std::string(second, 'x'));
}

}  // namespace
}  // namespace xb::fanout
