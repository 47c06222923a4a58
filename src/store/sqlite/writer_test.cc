#include "store/sqlite/writer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "store/sqlite/test_support.h"

namespace xb::store::sqlite {
namespace {

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = Connection::Open(dir_.File("db"), Connection::Role::kWriter, 1000);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    writer_ = std::make_unique<Writer>(std::move(conn).value(), 8);
  }
  static Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(30); }

  TempDir dir_;
  std::unique_ptr<Writer> writer_;
};

TEST_F(WriterTest, RunsEveryJobOnOneThreadWithTheDeadlineArmed) {
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 3; ++i) {
    StoreResult<void> e = writer_->Run(Soon(), [&](Connection& conn) {
      threads.push_back(std::this_thread::get_id());
      EXPECT_TRUE(conn.Exec("SELECT 1", "test").ok());
    });
    EXPECT_TRUE(e.ok());
  }
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_NE(threads[0], std::this_thread::get_id());
  EXPECT_EQ(threads[0], threads[1]);
  EXPECT_EQ(threads[1], threads[2]);

  // The job's deadline reaches its statements: a count that takes seconds stops at it.
  StoreResult<void> statement;
  ASSERT_TRUE(writer_
                  ->Run(Clock::now() + std::chrono::milliseconds(500),
                        [&](Connection& conn) {
                          statement = conn.Exec(
                              "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                              "WHERE i < 1000000000) "
                              "SELECT count(*) FROM n",
                              "count");
                        })
                  .ok());
  ASSERT_FALSE(statement.ok());
  EXPECT_EQ(statement.error().kind, ErrorKind::kTimeout);
}

TEST_F(WriterTest, JobStillQueuedAtItsDeadlineNeverRuns) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::thread busy([&] {
    EXPECT_TRUE(writer_
                    ->Run(Soon(),
                          [&](Connection&) {
                            entered.set_value();
                            released.wait_for(std::chrono::seconds(30));
                          })
                    .ok());
  });
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);

  bool ran = false;
  StoreResult<void> late =
      writer_->Run(Clock::now() + std::chrono::milliseconds(20), [&](Connection&) { ran = true; });
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, ErrorKind::kTimeout);
  release.set_value();
  busy.join();
  // The writer is still healthy, and the withdrawn job did not run.
  EXPECT_TRUE(writer_->Run(Soon(), [](Connection&) {}).ok());
  EXPECT_FALSE(ran);
}

// An asynchronous job runs on the writer thread inside a group transaction, and its callback
// reports the commit; with the queue at the writer's bound it is refused without running.
TEST_F(WriterTest, AsyncJobRunsGroupedAndIsRefusedWhenTheQueueIsFull) {
  ASSERT_TRUE(writer_
                  ->Run(Soon(),
                        [](Connection& conn) {
                          EXPECT_TRUE(conn.Exec("CREATE TABLE t (n INTEGER)", "create").ok());
                        })
                  .ok());
  std::promise<StoreResult<void>> finished;
  std::atomic<bool> in_transaction{false};
  ASSERT_TRUE(writer_->TryRunGroupedAsync(
      Soon(),
      [&](Connection& conn) {
        in_transaction = sqlite3_get_autocommit(conn.get()) == 0;
        EXPECT_TRUE(conn.Exec("INSERT INTO t VALUES (1)", "insert").ok());
      },
      [&](StoreResult<void> error) { finished.set_value(std::move(error)); }));
  auto done = finished.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  EXPECT_TRUE(in_transaction);

  // Hold the writer, fill its queue (8) with blocking callers, then try once more.
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<std::thread> callers;
  callers.emplace_back([&] {
    EXPECT_TRUE(writer_
                    ->Run(Soon(),
                          [&](Connection&) {
                            entered.set_value();
                            released.wait_for(std::chrono::seconds(30));
                          })
                    .ok());
  });
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  std::atomic<int> async_ran{0};
  std::atomic<int> async_done{0};
  int accepted = 0;
  while (writer_->TryRunGroupedAsync(
      Soon(), [&](Connection&) { ++async_ran; }, [&](StoreResult<void>) { ++async_done; })) {
    ++accepted;
    ASSERT_LE(accepted, 8);
  }
  EXPECT_EQ(accepted, 8);  // min(kMaxAsyncQueue, max_queue)
  release.set_value();
  for (auto& t : callers) {
    t.join();
  }
  // Every accepted job runs and reports once; a blocking call after them sees them done.
  EXPECT_TRUE(writer_->Run(Soon(), [](Connection&) {}).ok());
  EXPECT_EQ(async_ran.load(), 8);
  EXPECT_EQ(async_done.load(), 8);
}

TEST_F(WriterTest, TransactionLeftOpenByAJobIsRolledBack) {
  ASSERT_TRUE(writer_
                  ->Run(Soon(),
                        [](Connection& conn) {
                          ASSERT_TRUE(conn.Exec("CREATE TABLE t (x INTEGER) STRICT", "test").ok());
                          ASSERT_TRUE(
                              conn.Exec("BEGIN IMMEDIATE; INSERT INTO t VALUES (1);", "test").ok());
                        })
                  .ok());
  int64_t count = -1;
  bool in_transaction = true;
  ASSERT_TRUE(writer_
                  ->Run(Soon(),
                        [&](Connection& conn) {
                          in_transaction = conn.InTransaction();
                          StatementUse row = conn.Use("SELECT count(*) FROM t", "test");
                          ASSERT_TRUE(row.Step());
                          count = row.ColumnInt64(0);
                        })
                  .ok());
  EXPECT_FALSE(in_transaction);
  EXPECT_EQ(count, 0);
}

// Group commit: concurrent grouped jobs share transactions; a job that fails rolls back only its
// own savepoint; every commit is reported to the after-commit hook.
TEST_F(WriterTest, GroupedJobsCommitTogetherAndAFailingJobLosesOnlyItsOwnWork) {
  ASSERT_TRUE(writer_
                  ->Run(Soon(),
                        [](Connection& conn) {
                          ASSERT_TRUE(conn.Exec("CREATE TABLE t (x INTEGER) STRICT", "test").ok());
                        })
                  .ok());
  std::atomic<int> commits{0};
  writer_->SetAfterGroupCommit([&](bool committed) {
    if (committed) {
      ++commits;
    }
  });
  constexpr int kJobs = 16;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int i = 0; i < kJobs; ++i) {
    threads.emplace_back([&, i] {
      StoreResult<void> e = writer_->RunGrouped(Soon(), [i](Connection& conn) {
        WriteTransaction txn(&conn);
        ASSERT_TRUE(txn.Begin().ok());
        const std::string insert = "INSERT INTO t VALUES (" + std::to_string(i) + ")";
        ASSERT_TRUE(conn.Exec(insert.c_str(), "test").ok());
        if (i % 5 == 0) {
          return;  // fails: its savepoint is rolled back, the group goes on
        }
        ASSERT_TRUE(txn.Commit().ok());
      });
      if (!e.ok()) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(commits.load(), 1);
  EXPECT_LE(commits.load(), kJobs);
  int64_t count = -1;
  int64_t failed_rows = -1;
  ASSERT_TRUE(writer_
                  ->Run(Soon(),
                        [&](Connection& conn) {
                          StatementUse all = conn.Use("SELECT count(*) FROM t", "test");
                          ASSERT_TRUE(all.Step());
                          count = all.ColumnInt64(0);
                          StatementUse failed =
                              conn.Use("SELECT count(*) FROM t WHERE x % 5 = 0", "test");
                          ASSERT_TRUE(failed.Step());
                          failed_rows = failed.ColumnInt64(0);
                        })
                  .ok());
  EXPECT_EQ(count, kJobs - 4);  // 0, 5, 10 and 15 rolled back
  EXPECT_EQ(failed_rows, 0);
}

}  // namespace
}  // namespace xb::store::sqlite
