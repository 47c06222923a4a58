#include "store/db_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "base/thread_priority.h"

namespace xb::store {
namespace {

namespace asio = boost::asio;

// The job runs off the caller's thread, below its priority (base/thread_priority.h), and the
// caller resumes on its own thread with the result.
TEST(DbPool, RunsTheJobOnAPoolThreadBelowTheCallerAndResumesOnIt) {
  asio::io_context io;
  DbPool pool(/*threads=*/2);
  std::thread::id job_thread;
  int job_nice = 0;
  std::thread::id resumed_on;
  std::optional<int> result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&] {
          job_thread = std::this_thread::get_id();
          job_nice = ThisThreadNice();
          return StoreResult<int>(7);
        };
        StoreResult<int> done = co_await pool.Run(std::move(job));
        result = done.value_or(0);
        resumed_on = std::this_thread::get_id();
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, 7);
  EXPECT_NE(job_thread, std::this_thread::get_id());
  EXPECT_EQ(resumed_on, std::this_thread::get_id());
  EXPECT_EQ(job_nice, PoolThreadNice(ThisThreadNice()));
}

// A job whose call ended before it started is not run, and its caller is not resumed.
TEST(DbPool, SkipsAJobWhoseCallEndedBeforeItStarted) {
  asio::io_context io;
  DbPool pool(/*threads=*/1);
  auto ended = std::make_shared<std::atomic<bool>>(true);
  bool ran = false;
  bool resumed = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&ran] {
          ran = true;
          return StoreResult<int>(1);
        };
        co_await pool.Run(std::move(job), ended);
        resumed = true;
      },
      asio::detached);
  io.run_for(std::chrono::milliseconds(200));
  pool.Stop();
  EXPECT_FALSE(ran);
  EXPECT_FALSE(resumed);
  EXPECT_EQ(pool.admitted(), 0u);
}

// The queue is bounded: with one job admitted (and held running), a second resolves at once to
// kQueueFull without running; once the first finishes, the pool admits again.
TEST(DbPool, RefusesBeyondMaxAdmittedWithQueueFullWithoutRunningTheJob) {
  asio::io_context io;
  DbPool pool(/*threads=*/1, /*max_admitted=*/1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::optional<StoreResult<int>> first;
  std::optional<StoreResult<int>> second;
  std::optional<StoreResult<int>> third;
  bool second_ran = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [released] {
          released.wait();
          return StoreResult<int>(1);
        };
        first.emplace(co_await pool.Run(std::move(job)));
        auto again = [] { return StoreResult<int>(3); };
        third.emplace(co_await pool.Run(std::move(again)));
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&second_ran] {
          second_ran = true;
          return StoreResult<int>(2);
        };
        second.emplace(co_await pool.Run(std::move(job)));
        release.set_value();  // only now may the first job finish
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(second.has_value());
  ASSERT_FALSE(second->ok());
  EXPECT_EQ(second->error().kind, ErrorKind::kQueueFull);
  EXPECT_EQ(second->error().message, "the database queue is full");
  EXPECT_FALSE(second_ran);
  ASSERT_TRUE(first.has_value() && first->ok());
  EXPECT_EQ(first->value(), 1);
  ASSERT_TRUE(third.has_value() && third->ok());
  EXPECT_EQ(third->value(), 3);
  EXPECT_EQ(pool.admitted(), 0u);
}

}  // namespace
}  // namespace xb::store
