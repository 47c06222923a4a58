#include "store/sqlite/checkpointer.h"

#include <sqlite3.h>

#include <utility>

#include "base/thread_name.h"

namespace xb::store::sqlite {

Result<std::unique_ptr<Checkpointer>> Checkpointer::Start(const std::string& path,
                                                          uint32_t busy_timeout_ms, int wal_pages) {
  XB_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                      Connection::Open(path, Connection::Role::kCheckpointer, busy_timeout_ms));
  return std::unique_ptr<Checkpointer>(new Checkpointer(std::move(conn), wal_pages));
}

Checkpointer::Checkpointer(std::unique_ptr<Connection> conn, int wal_pages)
    : conn_(std::move(conn)), wal_pages_(wal_pages), thread_([this] { Loop(); }) {}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Checkpointer::Attach(Connection& writer) {
  sqlite3_wal_hook(writer.get(), &Checkpointer::OnWalCommit, this);
}

int Checkpointer::OnWalCommit(void* self, sqlite3*, const char*, int wal_pages) {
  auto* checkpointer = static_cast<Checkpointer*>(self);
  checkpointer->last_wal_pages_.store(wal_pages, std::memory_order_relaxed);
  // One request at a time: a commit while a checkpoint is asked for or running only adds pages
  // to the next one. The lock is taken once per request, not per commit.
  if (wal_pages >= checkpointer->wal_pages_ &&
      !checkpointer->requested_.exchange(true, std::memory_order_acq_rel)) {
    std::lock_guard lock(checkpointer->mu_);
    checkpointer->cv_.notify_one();
  }
  return SQLITE_OK;
}

void Checkpointer::Loop() {
  NameThisThread("xb-sqlite-ckpt");
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || requested_.load(std::memory_order_acquire); });
      if (stopping_) {
        return;
      }
    }
    // PASSIVE copies what no reader still needs and syncs the database file; it never waits for
    // a lock. An error (the disk, the file) leaves the pages in the WAL for the next attempt;
    // every commit is durable in the WAL already.
    int wal_frames = 0;
    int checkpointed = 0;
    (void)sqlite3_wal_checkpoint_v2(conn_->get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames,
                                    &checkpointed);
    checkpoints_.fetch_add(1, std::memory_order_acq_rel);
    requested_.store(false, std::memory_order_release);
  }
}

}  // namespace xb::store::sqlite
