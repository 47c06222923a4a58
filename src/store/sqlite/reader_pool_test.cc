#include "store/sqlite/reader_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/sqlite/test_support.h"

namespace xb::store::sqlite {
namespace {

class ReaderPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Readers never create the file: the writer does.
    auto writer = Connection::Open(dir_.File("db"), Connection::Role::kWriter, 1000);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    writer_ = std::move(writer).value();
    ASSERT_TRUE(writer_->Exec("CREATE TABLE t (x INTEGER) STRICT", "test").ok());
    auto pool = ReaderPool::Open(dir_.File("db"), 1, 1000);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(pool).value();
  }

  TempDir dir_;
  std::unique_ptr<Connection> writer_;
  std::unique_ptr<ReaderPool> pool_;
};

TEST_F(ReaderPoolTest, WaitForAFreeReaderEndsAtTheDeadline) {
  // verifies: STORE.md 3.2 (pool acquisition timeout [design])
  auto held = pool_->Acquire(Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(IsOk(held));
  auto waited = pool_->Acquire(Clock::now() + std::chrono::milliseconds(20));
  ASSERT_FALSE(IsOk(waited));
  EXPECT_EQ(ErrorOf(waited).kind, ErrorKind::kPoolTimeout);
}

TEST_F(ReaderPoolTest, ReturnedReaderServesTheNextCaller) {
  std::optional<StoreResult<ReaderPool::Lease>> second;
  {
    std::optional<StoreResult<ReaderPool::Lease>> held(
        pool_->Acquire(Clock::now() + std::chrono::seconds(5)));
    ASSERT_TRUE(IsOk(*held));
    std::thread waiter(
        [&] { second.emplace(pool_->Acquire(Clock::now() + std::chrono::seconds(30))); });
    held.reset();  // ends the lease, waking the waiter
    waiter.join();
  }
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(IsOk(*second));
}

TEST_F(ReaderPoolTest, OpenTransactionIsRolledBackOnReturn) {
  {
    auto lease = pool_->Acquire(Clock::now() + std::chrono::seconds(5));
    ASSERT_TRUE(IsOk(lease));
    Connection& conn = *lease.value();
    ASSERT_TRUE(conn.Exec("BEGIN; SELECT count(*) FROM t;", "test").ok());
    EXPECT_TRUE(conn.InTransaction());
  }
  // A fresh snapshot sees a later commit.
  ASSERT_TRUE(writer_->Exec("INSERT INTO t VALUES (1)", "test").ok());
  auto lease = pool_->Acquire(Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(IsOk(lease));
  Connection& conn = *lease.value();
  EXPECT_FALSE(conn.InTransaction());
  StatementUse row = conn.Use("SELECT count(*) FROM t", "test");
  ASSERT_TRUE(row.Step());
  EXPECT_EQ(row.ColumnInt64(0), 1);
}

}  // namespace
}  // namespace xb::store::sqlite
