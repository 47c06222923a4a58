// Background WAL checkpoints (STORE.md 8: "checkpoint passively in the background"). Left to
// SQLite, the commit that takes the WAL past 1,000 pages also copies them into the database file
// and syncs it, on the writer thread: every publish queued behind that commit waits for it, and so
// does every stream waiting for the commit's rows. Here the writer connection's WAL hook (which
// replaces SQLite's automatic checkpoint) only wakes a thread of our own, which runs a PASSIVE
// checkpoint on its own connection: that takes no lock the writer or the readers wait for.
//
// Threading: the hook runs on the writer thread; everything else on the checkpointer's thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "store/sqlite/connection.h"

namespace xb::store::sqlite {

class Checkpointer {
 public:
  // SQLite's own automatic checkpoint threshold.
  static constexpr int kDefaultWalPages = 1000;

  // Opens a connection of its own to `path` and starts the thread.
  static Result<std::unique_ptr<Checkpointer>> Start(const std::string& path,
                                                     uint32_t busy_timeout_ms,
                                                     int wal_pages = kDefaultWalPages);
  // Stops the thread. Close the attached writer first: its hook points here.
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Takes over `writer`'s checkpoints: after each commit that leaves at least wal_pages pages in
  // the WAL, the thread checkpoints. SQLite's automatic checkpoint on `writer` stops.
  void Attach(Connection& writer);

  // Checkpoints run so far, and the WAL's size in pages after the writer's last commit.
  uint64_t checkpoints() const { return checkpoints_.load(std::memory_order_acquire); }
  int last_wal_pages() const { return last_wal_pages_.load(std::memory_order_relaxed); }

 private:
  Checkpointer(std::unique_ptr<Connection> conn, int wal_pages);
  static int OnWalCommit(void* self, sqlite3* db, const char* schema, int wal_pages);
  void Loop();

  std::unique_ptr<Connection> conn_;  // the thread's only
  const int wal_pages_;
  std::atomic<bool> requested_{false};  // set by the hook, cleared by the thread
  std::atomic<uint64_t> checkpoints_{0};
  std::atomic<int> last_wal_pages_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace xb::store::sqlite
