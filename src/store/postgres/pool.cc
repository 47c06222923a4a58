#include "store/postgres/pool.h"

#include <utility>

#include "base/check.h"

namespace xb::store::postgres {

ConnectionPool::Lease::~Lease() {
  if (pool_ != nullptr && conn_ != nullptr) {
    pool_->Release(std::move(conn_));
  }
}

ConnectionPool::ConnectionPool(Options options) : options_(std::move(options)) {
  XB_CHECK(options_.max_connections >= 1);
}

ConnectionPool::~ConnectionPool() {
  std::lock_guard<std::mutex> lock(mu_);
  XB_CHECK(open_ == idle_.size());  // no lease outlives the pool
}

DbResult<ConnectionPool::Lease> ConnectionPool::Acquire(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    while (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (conn->CheckIdle()) {
        return Lease(this, std::move(conn));
      }
      --open_;  // ended by the server while idle: nothing was sent on it, so drop it silently
    }
    if (open_ < options_.max_connections) {
      ++open_;
      lock.unlock();
      auto opened =
          Connection::Open(options_.url, options_.setting, options_.statement_timeout_ms, deadline);
      if (!opened.ok()) {
        lock.lock();
        --open_;
        released_.notify_one();
        return std::move(opened).error();
      }
      return Lease(this, std::move(opened).value());
    }
    if (released_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= options_.max_connections) {
      return PoolTimeout(options_.setting);
    }
  }
}

void ConnectionPool::Release(std::unique_ptr<Connection> conn) {
  // implements: STORE.md 2.5 (release hook, ARC-060)
  bool keep = conn->usable();
  if (keep) {
    switch (conn->transaction_status()) {
      case PQTRANS_IDLE:
        break;
      case PQTRANS_INTRANS:
      case PQTRANS_INERROR: {
        released_open_transactions_.fetch_add(1, std::memory_order_relaxed);
        if (options_.on_released_open_transaction) {
          options_.on_released_open_transaction();
        }
        if (options_.warning_sink) {
          options_.warning_sink(
              "a database connection was released inside a transaction; rolled back");
        }
        auto deadline = Clock::now() + std::chrono::milliseconds(options_.statement_timeout_ms);
        auto rolled_back = conn->ExecScript("release hook", "ROLLBACK", deadline);
        keep = rolled_back.ok() && conn->transaction_status() == PQTRANS_IDLE;
        break;
      }
      default:  // PQTRANS_ACTIVE or PQTRANS_UNKNOWN: a statement may still run
        keep = false;
        break;
    }
  }
  if (!keep) {
    conn->CancelAndClose();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (keep) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;
  }
  released_.notify_one();
}

size_t ConnectionPool::open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

}  // namespace xb::store::postgres
