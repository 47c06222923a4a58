// The streams facade over the embedded engine: start-up waits for the first recovery generation
// without blocking its executor, a termination signal can end that wait, and sessions get the
// facade's shared parts.
#include "fanout/streams.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/test_support.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::fanout {
namespace {

namespace asio = boost::asio;

class StreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened =
        store::sqlite::SqliteStore::Open({.path = dir_.File("xmtp.db"), .max_readers = 2});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    RowEncoder encoder = [](const store::StoredEnvelopeView& row, std::string* encoded) {
      encoded->append(row.payload);
      return true;
    };
    streams_ = std::make_unique<Streams>(*store_, db_, metrics_, logger_, /*tracer=*/nullptr,
                                         std::move(encoder),
                                         StreamsOptions{.poll_interval = std::chrono::minutes(10),
                                                        .max_gap_ranges = 100,
                                                        .fetch_permits = 2,
                                                        .wave_buffer_bytes = 1u << 20,
                                                        .history_cache_bytes = 1u << 20});
  }

  // Runs WaitReady() to completion on io_ and returns what it answered.
  std::optional<bool> AwaitReady() {
    std::optional<bool> answer;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { answer = co_await streams_->WaitReady(); },
        asio::detached);
    io_.run();
    io_.restart();
    return answer;
  }

  store::sqlite::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  store::DbPool db_{1};
  telemetry::Metrics metrics_{"test"};
  telemetry::Logger logger_{telemetry::LoggerOptions{.sink = [](std::string_view) {}, .clock = {}}};
  asio::io_context io_{1};
  std::unique_ptr<Streams> streams_;
};

TEST_F(StreamsTest, WaitReadyAnswersOnceTheFirstGenerationCompleted) {
  streams_->Start(io_.get_executor());
  EXPECT_EQ(AwaitReady(), std::optional<bool>(true));
  // Ready stays ready: a later wait does not suspend.
  EXPECT_EQ(AwaitReady(), std::optional<bool>(true));
}

TEST_F(StreamsTest, CancelWaitEndsStartUpWithFalse) {
  std::optional<bool> answer;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { answer = co_await streams_->WaitReady(); },
      asio::detached);
  asio::post(io_, [this] { streams_->CancelWait(); });
  streams_->Start(io_.get_executor());
  io_.run();
  EXPECT_EQ(answer, std::optional<bool>(false));
  // Start-up is over: the news of readiness does not undo the signal.
  io_.restart();
  EXPECT_EQ(AwaitReady(), std::optional<bool>(false));
}

TEST_F(StreamsTest, SessionsShareTheFacadesParts) {
  StreamDeps first = streams_->Deps();
  StreamDeps second = streams_->Deps();
  EXPECT_EQ(first.store, store_.get());
  EXPECT_EQ(first.db, &db_);
  EXPECT_EQ(first.metrics, &metrics_);
  ASSERT_NE(first.registry, nullptr);
  EXPECT_EQ(first.registry, second.registry);
  EXPECT_EQ(first.permits, second.permits);
  EXPECT_EQ(first.wave_buffers, second.wave_buffers);
  EXPECT_EQ(first.history, second.history);
  EXPECT_NE(first.permits, nullptr);
  EXPECT_NE(first.wave_buffers, nullptr);
  EXPECT_NE(first.history, nullptr);
}

TEST_F(StreamsTest, StopIsIdempotentAndSafeBeforeStart) {
  streams_->Stop();  // never started
  streams_->Start(io_.get_executor());
  EXPECT_EQ(AwaitReady(), std::optional<bool>(true));
  streams_->Stop();
  streams_->Stop();
}

}  // namespace
}  // namespace xb::fanout
