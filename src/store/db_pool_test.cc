#include "store/db_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
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
          return 7;
        };
        result = co_await pool.Run(std::move(job));
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
          return 1;
        };
        co_await pool.Run(std::move(job), ended);
        resumed = true;
      },
      asio::detached);
  io.run_for(std::chrono::milliseconds(200));
  pool.Stop();
  EXPECT_FALSE(ran);
  EXPECT_FALSE(resumed);
}

}  // namespace
}  // namespace xb::store
