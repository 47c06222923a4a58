#include "store/sqlite/reader_pool.h"

#include <utility>

namespace xb::store::sqlite {

Result<std::unique_ptr<ReaderPool>> ReaderPool::Open(const std::string& path, uint32_t size,
                                                     uint32_t busy_timeout_ms) {
  std::unique_ptr<ReaderPool> pool(new ReaderPool());
  for (uint32_t i = 0; i < (size == 0 ? 1 : size); ++i) {
    XB_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                        Connection::Open(path, Connection::Role::kReader, busy_timeout_ms));
    pool->idle_.push_back(std::move(conn));
  }
  return pool;
}

ReaderPool::Lease::~Lease() {
  if (conn_ != nullptr) {  // null after a move
    // STORE.md 2.5 release hook, SQLite form: an open read transaction is rolled back.
    conn_->ClearDeadline();
    conn_->RollbackIfOpen();
    pool_->Release(std::move(conn_));
  }
}

// implements: STORE.md 3.2 pool acquisition timeout [design] (UNAVAILABLE, kind timeout)
StoreResult<ReaderPool::Lease> ReaderPool::Acquire(Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  if (!available_.wait_until(lock, deadline, [this] { return !idle_.empty(); })) {
    StoreError error;
    error.kind = ErrorKind::kPoolTimeout;
    error.message = "no database reader connection became free in time";
    return error;
  }
  std::unique_ptr<Connection> conn = std::move(idle_.back());
  idle_.pop_back();
  return Lease(this, std::move(conn));
}

void ReaderPool::Release(std::unique_ptr<Connection> conn) {
  {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(conn));
  }
  available_.notify_one();
}

}  // namespace xb::store::sqlite
