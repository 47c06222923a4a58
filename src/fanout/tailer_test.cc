// The tailer against the embedded engine: every commit must reach a live registration through the
// commit wake-up, never by waiting for the poll timer. The poll interval here is ten minutes, so a
// lost wake-up shows as a row that does not arrive within the test's (generous) wait.
#include "fanout/tailer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fanout/registry.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/test_support.h"
#include "store/store_test_data.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::fanout {
namespace {

using store::test_data::GroupTopic;
using store::test_data::Item;
using store::test_data::Request;

constexpr auto kPollInterval = std::chrono::minutes(10);
constexpr auto kDeliveryWait = std::chrono::seconds(60);  // far below kPollInterval

class TailerTest : public ::testing::Test {
 protected:
  void StartTailer(std::chrono::milliseconds commit_wake_gap) {
    auto opened =
        store::sqlite::SqliteStore::Open({.path = dir_.File("xmtp.db"), .max_readers = 2});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    RowEncoder encoder = [](const store::StoredEnvelopeView& row, std::string* encoded) {
      encoded->append(row.payload);
      return true;
    };
    tailer_ = std::make_unique<Tailer>(
        *store_, registry_, metrics_, logger_, std::move(encoder),
        TailerOptions{.poll_interval = kPollInterval, .commit_wake_gap = commit_wake_gap});
    store_->SetCommitListener([this](int64_t last_id) { tailer_->OnCommit(last_id); });
    tailer_->Start();
    ASSERT_TRUE(tailer_->WaitReadyFor(std::chrono::seconds(30)));

    // One live registration on the topic, from cursor 0 with nothing to catch up.
    ASSERT_TRUE(registry_.Open(*session_));
    registration_ = std::make_shared<Registration>(topic_, 0, session_.get());
    ASSERT_TRUE(registry_.Add(*session_, {registration_}));
    registry_.SetTargets({registration_}, {0});
    ASSERT_TRUE(registry_.TrySwitchLive(*registration_));
  }

  void TearDown() override {
    if (store_ != nullptr) {
      store_->SetCommitListener(nullptr);  // waits for a running call (store.h)
    }
    if (tailer_ != nullptr) {
      tailer_->Stop();
    }
    registry_.Close(*session_);
  }

  // Publishes `count` envelopes one at a time, each only once the one before was delivered.
  void PublishEachAndAwaitIt(int count) {
    for (int n = 0; n < count; ++n) {
      auto result = store_->CommitPublish(Request({Item(topic_, "payload " + std::to_string(n))}));
      const store::CommitPublishResult* done = result.ok() ? &result.value() : nullptr;
      ASSERT_TRUE(done != nullptr && done->metas.size() == 1) << "publish " << n;
      const int64_t id = done->metas[0].sequence_id;
      ASSERT_TRUE(Delivered(id)) << "publish " << n << " (id " << id << ") was not delivered";
    }
  }

  // Waits until the registration has received the row `id` (rows arrive in id order).
  bool Delivered(int64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + kDeliveryWait;
    while (last_delivered_ < id) {
      {
        std::unique_lock lock(mu_);
        if (!cv_.wait_until(lock, deadline, [&] { return woken_; })) {
          return false;
        }
        woken_ = false;
      }
      session_->WakeDelivered();
      std::vector<LiveItem> live;
      std::optional<Ending> failure;
      registry_.Drain(*session_, &live, &failure);
      if (failure.has_value()) {
        return false;
      }
      for (const LiveItem& item : live) {
        EXPECT_GT(item.row->sequence_id, last_delivered_);
        last_delivered_ = item.row->sequence_id;
      }
    }
    return last_delivered_ == id;
  }

  store::sqlite::TempDir dir_;
  telemetry::Metrics metrics_{"test"};
  telemetry::Logger logger_{telemetry::LoggerOptions{.sink = [](std::string_view) {}, .clock = {}}};
  Registry registry_{metrics_};
  std::unique_ptr<store::sqlite::SqliteStore> store_;
  std::unique_ptr<Tailer> tailer_;
  const std::string topic_ = GroupTopic(1);

  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;  // guarded by mu_
  // Without an executor the wake-up runs inside the registry's dispatch: it only signals.
  std::shared_ptr<SessionState> session_ = std::make_shared<SessionState>([this] {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    cv_.notify_one();
  });
  RegistrationPtr registration_;
  int64_t last_delivered_ = 0;
};

// verifies: STORE.md 8 (SQLite: the tailer is woken in-process after each commit)
TEST_F(TailerTest, EveryCommitWakesTheTailerWithoutWaitingForThePollTimer) {
  ASSERT_NO_FATAL_FAILURE(StartTailer(std::chrono::milliseconds(0)));
  PublishEachAndAwaitIt(30);
}

// A commit that lands while the tailer sleeps out its commit wake gap (PostgreSQL's rate bound)
// must still start the next poll when the gap ends, not at the poll timer.
TEST_F(TailerTest, ACommitDuringTheWakeGapPollsWhenTheGapEnds) {
  ASSERT_NO_FATAL_FAILURE(StartTailer(std::chrono::milliseconds(50)));
  // Right after a delivery the poll that made it began moments ago: each next commit falls in
  // that poll's gap.
  PublishEachAndAwaitIt(20);
}

}  // namespace
}  // namespace xb::fanout
