#include "store/sqlite/checkpointer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "store/sqlite/test_support.h"

namespace xb::store::sqlite {
namespace {

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = Connection::Open(dir_.File("db"), Connection::Role::kWriter, 1000);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    writer_ = std::move(conn).value();
    ASSERT_TRUE(writer_->Exec("CREATE TABLE t (b BLOB)", "test").ok());
  }

  // One commit of a 4 KiB row: a few new WAL pages per commit.
  void Commit() {
    ASSERT_TRUE(writer_->Exec("INSERT INTO t VALUES (zeroblob(4096))", "test").ok());
  }

  // The WAL's frames and how many of them are in the database file, asked without copying any.
  std::pair<int, int> WalState() {
    auto conn = Connection::Open(dir_.File("db"), Connection::Role::kCheckpointer, 1000);
    EXPECT_TRUE(conn.ok());
    int frames = -1;
    int copied = -1;
    // With nothing left to copy, a PASSIVE checkpoint only reports. It is BUSY while the
    // checkpointer's own runs (one checkpoint at a time): ask again.
    int rc = SQLITE_BUSY;
    for (int attempt = 0; attempt < 1000 && rc == SQLITE_BUSY; ++attempt) {
      rc = sqlite3_wal_checkpoint_v2((*conn)->get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &frames,
                                     &copied);
      if (rc == SQLITE_BUSY) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    EXPECT_EQ(rc, SQLITE_OK) << sqlite3_errstr(rc);
    return {frames, copied};
  }

  TempDir dir_;
  std::unique_ptr<Connection> writer_;
};

// verifies: STORE.md 8 (checkpoint passively in the background: the writer's commits never run
// a checkpoint themselves)
TEST_F(CheckpointerTest, AnAttachedWriterNeverCheckpointsItself) {
  auto started = Checkpointer::Start(dir_.File("db"), 1000, /*wal_pages=*/1 << 30);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<Checkpointer> checkpointer = std::move(started).value();
  checkpointer->Attach(*writer_);
  for (int i = 0; i < 600; ++i) {
    Commit();
  }
  // Past SQLite's 1,000-page automatic checkpoint, and the WAL was never started over.
  EXPECT_GE(checkpointer->last_wal_pages(), 1200);
  EXPECT_GE(WalState().first, 1200);
  EXPECT_EQ(checkpointer->checkpoints(), 0u);
  writer_.reset();  // the hook goes with the writer's connection, before the checkpointer
}

// verifies: STORE.md 8 (the background checkpoint copies the WAL, so the log starts over)
TEST_F(CheckpointerTest, CommitsPastTheThresholdAreCheckpointedByTheThread) {
  auto started = Checkpointer::Start(dir_.File("db"), 1000, /*wal_pages=*/8);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<Checkpointer> checkpointer = std::move(started).value();
  checkpointer->Attach(*writer_);

  Commit();
  EXPECT_LT(checkpointer->last_wal_pages(), 8);
  EXPECT_EQ(checkpointer->checkpoints(), 0u);  // below the threshold: nothing asked

  int peak = 0;
  for (int i = 0; i < 8; ++i) {
    Commit();
    peak = std::max(peak, checkpointer->last_wal_pages());
  }
  EXPECT_GE(peak, 8);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (checkpointer->checkpoints() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(checkpointer->checkpoints(), 1u);
  // Nothing but the thread copies pages here, and once all are copied a commit starts the WAL
  // over (a checkpoint still running for a later request may delay that by a commit or two).
  bool restarted = false;
  while (!restarted && std::chrono::steady_clock::now() < deadline) {
    Commit();
    restarted = checkpointer->last_wal_pages() < 8;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(restarted);
  writer_.reset();
}

}  // namespace
}  // namespace xb::store::sqlite
