// The push store on PostgreSQL (ctest label `pg`): the engine-neutral push suite, and what only
// this engine has: one dispatcher lock per deployment, held by a connection of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "store/postgres/postgres_store.h"
#include "store/postgres/test_database.h"
#include "store/push_conformance.h"

namespace xb::store {

INSTANTIATE_TEST_SUITE_P(Postgres, PushConformanceTest,
                         ::testing::Values(StoreFactory(&postgres::MakeConformanceStore)));

namespace postgres {
namespace {

class PushLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    auto store = PostgresStore::Open(db_->Options(/*with_replica=*/false),
                                     Clock::now() + std::chrono::seconds(30));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    db_.reset();
  }

  std::unique_ptr<PushLock> Open() {
    auto lock = store_->push()->OpenPushLock();
    EXPECT_TRUE(lock.ok()) << (lock.ok() ? "" : lock.error().message);
    return lock.ok() ? std::move(lock).value() : nullptr;
  }
  static bool Acquired(PushLock& lock) {
    auto acquired = lock.TryAcquire();
    EXPECT_TRUE(acquired.ok()) << (acquired.ok() ? "" : acquired.error().message);
    return acquired.ok() && acquired.value();
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<PostgresStore> store_;
};

// verifies: PUSH.md 8.1 (election: pg_try_advisory_lock(0, 3) on a dedicated connection; only one
// holder; closing the holder's connection releases it)
TEST_F(PushLockTest, OnlyOneLockIsHeldAndClosingTheHolderReleasesIt) {
  std::unique_ptr<PushLock> first = Open();
  std::unique_ptr<PushLock> second = Open();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(Acquired(*first));
  EXPECT_TRUE(Acquired(*first));  // re-entrant on the holder's own session
  EXPECT_FALSE(Acquired(*second));
  // The lock connection shows itself as the push connection.
  auto conn = db_->Connect(Database::kPrimary);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  auto named = RunSql(*conn.value(),
                      "SELECT count(*)::int8 FROM pg_stat_activity WHERE application_name = "
                      "'xmtp-backend push' AND datname = current_database()");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named.value().Bytes(0, 0), "2");  // simple query protocol: text
  first.reset();  // closes the connection: the server releases the session lock
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  bool taken = false;
  while (!taken && Clock::now() < give_up) {
    taken = Acquired(*second);
    if (!taken) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_TRUE(taken);
  auto alive = second->Ping();
  ASSERT_TRUE(alive.ok());
  EXPECT_TRUE(alive.value());
}

}  // namespace
}  // namespace postgres
}  // namespace xb::store
