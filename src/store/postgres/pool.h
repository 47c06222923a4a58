// A bounded pool of connections to one database (STORE.md 2.5): at most `max_connections` open,
// opened on demand, acquisition bounded by a deadline. Releasing a lease runs the release hook:
// a connection is reused only when idle; one left in an open or failed transaction is rolled back,
// counted (xmtp_db_released_open_transactions_total) and reported to the warning sink; one with a
// statement still active or an unknown status is cancelled and closed (ARC-060).
//
// Threading: thread-safe. Every lease must end before the pool is destroyed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "store/postgres/connection.h"

namespace xb::store::postgres {

class ConnectionPool {
 public:
  struct Options {
    std::string url;
    std::string setting;  // "database.url" or "database.replica_url", for errors
    size_t max_connections = 20;
    int statement_timeout_ms = 5000;
    std::function<void(std::string_view)> warning_sink;  // may be empty
    // Called once per connection rolled back by the release hook (may be empty).
    std::function<void()> on_released_open_transaction{};
  };

  // Exclusive use of one pooled connection; returns it through the release hook when destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();

    Connection& operator*() const { return *conn_; }
    Connection* operator->() const { return conn_.get(); }

   private:
    friend class ConnectionPool;
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}

    ConnectionPool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  explicit ConnectionPool(Options options);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // An idle connection (one the server ended while idle is dropped and skipped), else a new one
  // while fewer than max_connections are open, else waits for a release. kPoolTimeout when none is
  // available by `deadline`; a failed connect returns its error (kConnection or kTimeout).
  DbResult<Lease> Acquire(Clock::time_point deadline);

  uint64_t released_open_transactions() const {
    return released_open_transactions_.load(std::memory_order_relaxed);
  }
  size_t open_connections() const;

 private:
  void Release(std::unique_ptr<Connection> conn);

  // Const after construction.
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  size_t open_ = 0;                                // guarded by mu_; idle, leased or connecting

  std::atomic<uint64_t> released_open_transactions_{0};
};

}  // namespace xb::store::postgres
