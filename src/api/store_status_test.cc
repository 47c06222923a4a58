#include "api/store_status.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace xb::api {
namespace {

using std::chrono::seconds;
using Clock = StoreFailureLog::Clock;

store::StoreError Error(store::ErrorKind kind, store::ErrorCause cause, std::string message) {
  store::StoreError error;
  error.kind = kind;
  error.cause = cause;
  error.message = std::move(message);
  return error;
}

const store::StoreError kDiskFull =
    Error(store::ErrorKind::kConnection, store::ErrorCause::kDiskFull,
          "commit publish: database or disk is full");

bool HasLine(const std::string& text, std::string_view line) {
  return text.find(std::string(line) + "\n") != std::string::npos;
}

// A store failure log on a hand-moved clock, writing JSON lines into `lines`.
class StoreStatusTest : public ::testing::Test {
 protected:
  StoreStatusTest()
      : logger_(telemetry::LoggerOptions{
            .level = telemetry::LogLevel::kInfo,
            .format = telemetry::LogFormat::kJson,
            .sink = [this](std::string_view line) { lines_.emplace_back(line); },
            .clock = {}}),
        metrics_("v"),
        failures_(
            logger_, metrics_,
            StoreFailureLog::Options{.budget = {.lines_per_interval = 1, .interval = seconds(10)},
                                     .now = [this] { return now_; }}) {
    ctx_.metrics = &metrics_;
    ctx_.store_failures = &failures_;
  }

  std::vector<std::string> lines_;
  Clock::time_point now_ = Clock::time_point(seconds(1000));
  telemetry::Logger logger_;
  telemetry::Metrics metrics_;
  StoreFailureLog failures_;
  ApiContext ctx_;
};

// verifies: issue 28 (a full disk is never logged) — the client's status is unchanged, the cause
// is logged at warn with a fixed message and counted by class.
TEST_F(StoreStatusTest, AFullDiskIsLoggedAndCountedByItsCause) {
  const Status status = StoreErrorStatus(kDiskFull, ctx_);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "the store is unavailable");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find(R"("level":"warn","msg":"store failed: disk full","reason":"disk_full",)"
                           R"("count":1,"error":"Unavailable: commit publish: database or disk )"
                           R"(is full"})"),
            std::string::npos)
      << lines_[0];
  const std::string text = metrics_.Exposition();
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_failures_total{cause="disk_full"} 1)")) << text;
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_errors_total{kind="connection"} 1)"));
}

// verifies: issue 28 — one line per cause per interval; the rest are counted, and the next line
// says how many failures it stands for.
TEST_F(StoreStatusTest, OneLinePerCausePerInterval) {
  for (int i = 0; i < 50; ++i) {
    (void)StoreErrorStatus(kDiskFull, ctx_);
  }
  EXPECT_EQ(lines_.size(), 1u);
  // Another cause in the same interval has its own line.
  (void)StoreErrorStatus(
      Error(store::ErrorKind::kConnection, store::ErrorCause::kUnclassified, "query: lost"), ctx_);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_NE(lines_[1].find(R"("msg":"store failed: connection lost","reason":"connection")"),
            std::string::npos)
      << lines_[1];
  std::string text = metrics_.Exposition();
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_failures_total{cause="disk_full"} 50)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_log_lines_suppressed_total{line="store_failed"} 49)"));

  now_ += seconds(10);
  (void)StoreErrorStatus(kDiskFull, ctx_);
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_NE(lines_[2].find(R"("reason":"disk_full","count":50,)"), std::string::npos) << lines_[2];
}

// verifies: issue 28 — INTERNAL failures are logged at error; a deadline (DEADLINE_EXCEEDED) and
// the request's own failures are not store failures.
TEST_F(StoreStatusTest, LevelsAndWhatIsNotAFailure) {
  const Status invariant = StoreErrorStatus(
      Error(store::ErrorKind::kInvariant, store::ErrorCause::kUnclassified, "publish: check"),
      ctx_);
  EXPECT_EQ(invariant.code(), StatusCode::kInternal);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find(R"("level":"error","msg":"store failed: a stored value violates an )"
                           R"(invariant","reason":"invariant")"),
            std::string::npos)
      << lines_[0];

  const Status timeout = StoreErrorStatus(
      Error(store::ErrorKind::kTimeout, store::ErrorCause::kUnclassified, "query: interrupted"),
      ctx_);
  EXPECT_EQ(timeout.code(), StatusCode::kDeadlineExceeded);
  store::StoreError stale;
  stale.kind = store::ErrorKind::kStaleHistory;
  EXPECT_EQ(StoreErrorStatus(stale, ctx_).code(), StatusCode::kAborted);
  EXPECT_EQ(lines_.size(), 1u);
  const std::string text = metrics_.Exposition();
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_failures_total{cause="timeout"} 0)")) << text;
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_failures_total{cause="invariant"} 1)"));
}

// issue 29: a call the full DB pool refused (store/db_pool.h) is UNAVAILABLE in plain words; the
// database did not fail, so it is neither logged nor counted as a database error or failure.
TEST_F(StoreStatusTest, AFullDbQueueIsUnavailableAndNotADatabaseFailure) {
  const Status status =
      StoreErrorStatus(Error(store::ErrorKind::kQueueFull, store::ErrorCause::kUnclassified,
                             "the database queue is full"),
                       ctx_);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "the database queue is full; retry later");
  EXPECT_TRUE(lines_.empty());
  // Every database error and failure series is absent or zero.
  std::istringstream text(metrics_.Exposition());
  for (std::string line; std::getline(text, line);) {
    if (line.starts_with("xmtp_db_errors_total{") || line.starts_with("xmtp_db_failures_total{")) {
      EXPECT_TRUE(line.ends_with(" 0")) << line;
    }
  }
}

// Without a failure log (tests, tools) the failure is still counted.
TEST(StoreStatusWithoutLogTest, CountsTheCause) {
  telemetry::Metrics metrics("v");
  ApiContext ctx;
  ctx.metrics = &metrics;
  EXPECT_EQ(StoreErrorStatus(kDiskFull, ctx).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(HasLine(metrics.Exposition(), R"(xmtp_db_failures_total{cause="disk_full"} 1)"));
}

}  // namespace
}  // namespace xb::api
