#include "telemetry/line_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace xb::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = LineBudget::Clock;

// The injected clock: a fixed origin on a window boundary, moved by hand.
const Clock::time_point kOrigin = Clock::time_point(seconds(1000));

TEST(LineBudgetTest, AdmitsTheBudgetPerIntervalAndCountsTheRest) {
  LineBudget budget({.lines_per_interval = 3, .interval = seconds(10)});
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(budget.Admit(kOrigin + milliseconds(i)));
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(budget.Admit(kOrigin + seconds(9)));
  }
  EXPECT_EQ(budget.TakeSuppressed(), 5u);
  EXPECT_EQ(budget.TakeSuppressed(), 0u);  // each refusal is handed back once
}

TEST(LineBudgetTest, ANewIntervalRestoresTheBudget) {
  LineBudget budget({.lines_per_interval = 2, .interval = seconds(10)});
  EXPECT_TRUE(budget.Admit(kOrigin));
  EXPECT_TRUE(budget.Admit(kOrigin));
  EXPECT_FALSE(budget.Admit(kOrigin + seconds(1)));
  EXPECT_TRUE(budget.Admit(kOrigin + seconds(10)));
  EXPECT_TRUE(budget.Admit(kOrigin + seconds(11)));
  EXPECT_FALSE(budget.Admit(kOrigin + seconds(12)));
  // Refusals of both intervals accumulate until taken.
  EXPECT_EQ(budget.TakeSuppressed(), 2u);
}

TEST(LineBudgetTest, ALateCallerCountsAgainstTheNewerInterval) {
  LineBudget budget({.lines_per_interval = 1, .interval = seconds(10)});
  EXPECT_TRUE(budget.Admit(kOrigin + seconds(20)));
  // A thread that read its clock before the window moved does not reopen the old one.
  EXPECT_FALSE(budget.Admit(kOrigin + seconds(15)));
  EXPECT_EQ(budget.TakeSuppressed(), 1u);
}

TEST(LineBudgetTest, AZeroBudgetRefusesEveryLine) {
  LineBudget budget({.lines_per_interval = 0, .interval = seconds(1)});
  EXPECT_FALSE(budget.Admit(kOrigin));
  EXPECT_FALSE(budget.Admit(kOrigin + seconds(5)));
  EXPECT_EQ(budget.TakeSuppressed(), 2u);
}

// Many threads in one interval: exactly the budget is admitted and every other call is counted
// once, whatever the interleaving.
TEST(LineBudgetTest, ConcurrentCallersShareOneBudget) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  LineBudget budget({.lines_per_interval = 100, .interval = seconds(10)});
  std::atomic<uint64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        if (budget.Admit(kOrigin + seconds(1))) {
          admitted.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(admitted.load(), 100u);
  EXPECT_EQ(budget.TakeSuppressed(), uint64_t{kThreads * kPerThread} - 100u);
}

}  // namespace
}  // namespace xb::telemetry
