#include "api/cpu_pool.h"

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "base/thread_priority.h"

namespace xb::api {
namespace {

namespace asio = boost::asio;

// The job runs off the caller's thread, below its priority (signature checks yield to the I/O
// threads, base/thread_priority.h), and the caller resumes on its own thread.
TEST(CpuPool, RunsTheJobOffTheCallerThreadBelowItsPriorityAndResumesOnIt) {
  asio::io_context io;
  CpuPool pool(/*threads=*/1, /*max_queued=*/4);
  std::thread::id job_thread;
  int job_nice = 0;
  std::thread::id resumed_on;
  std::optional<int> result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&job_thread, &job_nice] {
          job_thread = std::this_thread::get_id();
          job_nice = ThisThreadNice();
          return 42;
        };
        result = co_await pool.Run(std::move(job));
        resumed_on = std::this_thread::get_id();
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, 42);
  EXPECT_NE(job_thread, std::this_thread::get_id());
  EXPECT_EQ(resumed_on, std::this_thread::get_id());
  EXPECT_EQ(job_nice, PoolThreadNice(ThisThreadNice()));
  EXPECT_EQ(pool.admitted(), 0u);
}

// The queue is bounded: with one job admitted (and held running), a second is refused at once
// without running; once the first finishes, the pool admits again.
TEST(CpuPool, RefusesBeyondMaxQueuedWithoutRunningTheJob) {
  asio::io_context io;
  CpuPool pool(/*threads=*/1, /*max_queued=*/1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::optional<std::optional<int>> first;
  std::optional<std::optional<int>> second;
  std::optional<std::optional<int>> third;
  bool second_ran = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [released] {
          released.wait();
          return 1;
        };
        first = co_await pool.Run(std::move(job));
        auto again = [] { return 3; };
        third = co_await pool.Run(std::move(again));
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&second_ran] {
          second_ran = true;
          return 2;
        };
        second = co_await pool.Run(std::move(job));
        release.set_value();  // only now may the first job finish
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(second->has_value());
  EXPECT_FALSE(second_ran);
  ASSERT_TRUE(first.has_value() && first->has_value());
  EXPECT_EQ(**first, 1);
  ASSERT_TRUE(third.has_value() && third->has_value());
  EXPECT_EQ(**third, 3);
}

}  // namespace
}  // namespace xb::api
