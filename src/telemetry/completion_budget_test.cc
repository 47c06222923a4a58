#include "telemetry/completion_budget.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

namespace xb::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = CompletionBudget::Clock;

const Clock::time_point kOrigin = Clock::time_point(seconds(1000));

struct Capture {
  std::vector<std::string> lines;
  LoggerOptions Options(LogLevel level) {
    return LoggerOptions{.level = level,
                         .format = LogFormat::kJson,
                         .sink = [this](std::string_view line) { lines.emplace_back(line); },
                         .clock = {}};
  }
};

bool HasLine(const std::string& text, std::string_view line) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    if (std::string_view(text).substr(start, end - start) == line) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

// verifies: issue 28 (log amplification) — past the budget, lines are counted, the count is
// written as one summary line carrying counts only, and the metric equals it.
TEST(CompletionBudgetTest, SummarisesWhatItSuppressed) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo));
  Metrics metrics("v");
  CompletionBudget budget(logger, metrics,
                          {.budget = {.lines_per_interval = 2, .interval = seconds(10)},
                           .identifier = "test.local.xmtp"});
  int admitted = 0;
  for (int i = 0; i < 7; ++i) {
    admitted += budget.Admit(kOrigin + milliseconds(i)) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 2);
  EXPECT_TRUE(HasLine(metrics.Exposition(),
                      R"(xmtp_log_lines_suppressed_total{line="request_completed"} 5)"));
  budget.Summarize();
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_NE(capture.lines[0].find(R"("msg":"request completion lines suppressed",)"
                                  R"("identifier":"test.local.xmtp",)"
                                  R"("reason":"cancelled_before_response","count":5})"),
            std::string::npos)
      << capture.lines[0];
  // Nothing new suppressed: no line.
  budget.Summarize();
  EXPECT_EQ(capture.lines.size(), 1u);
}

// With INFO off no completion line would be written, so none is suppressed or counted.
TEST(CompletionBudgetTest, CountsNothingWhenInfoIsOff) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kWarn));
  Metrics metrics("v");
  CompletionBudget budget(
      logger, metrics,
      {.budget = {.lines_per_interval = 0, .interval = seconds(10)}, .identifier = "x"});
  EXPECT_TRUE(budget.Admit(kOrigin));
  budget.Summarize();
  EXPECT_TRUE(capture.lines.empty());
  EXPECT_EQ(metrics.Exposition().find("xmtp_log_lines_suppressed_total"), std::string::npos);
}

// The periodic summary runs on the executor until Stop; a stopped budget leaves the context
// with no work, so run() returns.
TEST(CompletionBudgetTest, SummarisesEachIntervalUntilStopped) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo));
  Metrics metrics("v");
  boost::asio::io_context io{1};  // outlives the budget, whose timer it serves
  CompletionBudget budget(
      logger, metrics,
      {.budget = {.lines_per_interval = 0, .interval = milliseconds(5)}, .identifier = "x"});
  budget.Start(io.get_executor());
  EXPECT_FALSE(budget.Admit(Clock::now()));
  // Run until the first summary was written (the timer fires within an interval).
  const auto deadline = Clock::now() + seconds(10);
  while (capture.lines.empty() && Clock::now() < deadline) {
    io.run_one_for(milliseconds(100));
  }
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_NE(capture.lines[0].find(R"("count":1})"), std::string::npos) << capture.lines[0];
  budget.Stop();
  io.run_for(seconds(10));  // returns at once: the stopped timer holds no work
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(capture.lines.size(), 1u);
}

}  // namespace
}  // namespace xb::telemetry
