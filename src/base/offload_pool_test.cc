#include "base/offload_pool.h"

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
#include <string>
#include <thread>

namespace xb {
namespace {

namespace asio = boost::asio;

// RunOr resolves a refused job to the caller's own "refused" value, built without running the
// job; a job admitted later still runs.
TEST(OffloadPool, RunOrResolvesARefusedJobToTheRefusedValue) {
  asio::io_context io;
  OffloadPool pool(/*threads=*/1, /*max_admitted=*/1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::optional<std::string> first;
  std::optional<std::string> second;
  bool second_ran = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [released] {
          released.wait();
          return std::string("ran");
        };
        first = co_await pool.RunOr(std::move(job), [] { return std::string("refused"); });
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&second_ran] {
          second_ran = true;
          return std::string("ran");
        };
        second = co_await pool.RunOr(std::move(job), [] { return std::string("refused"); });
        release.set_value();
      },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  EXPECT_EQ(second, "refused");
  EXPECT_FALSE(second_ran);
  EXPECT_EQ(first, "ran");
  EXPECT_EQ(pool.admitted(), 0u);
}

// A job skipped because its caller went away gives its admission back: the bound counts only
// jobs that are still to run.
TEST(OffloadPool, ACancelledJobReleasesItsAdmission) {
  asio::io_context io;
  OffloadPool pool(/*threads=*/1, /*max_admitted=*/1);
  auto ended = std::make_shared<std::atomic<bool>>(true);
  bool cancelled_ran = false;
  std::optional<std::optional<int>> after;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [&cancelled_ran] {
          cancelled_ran = true;
          return 1;
        };
        co_await pool.Run(std::move(job), ended);
      },
      asio::detached);
  io.poll();  // starts the coroutine, which offers the job
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.admitted() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(pool.admitted(), 0u);
  EXPECT_FALSE(cancelled_ran);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto job = [] { return 2; };
        after = co_await pool.Run(std::move(job));
      },
      asio::detached);
  io.restart();
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(after.has_value() && after->has_value());
  EXPECT_EQ(**after, 2);
}

}  // namespace
}  // namespace xb
