// A bounded pool of reader connections (STORE.md 8: `database.max_connections` readers, each
// query_only). A caller leases one connection for one read transaction; every wait for a free
// connection has a deadline.
//
// Threading: Acquire is thread-safe. A Lease is used by one thread and must end before the pool
// is destroyed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/sqlite/connection.h"
#include "store/store.h"

namespace xb::store::sqlite {

class ReaderPool {
 public:
  // Opens `size` (>= 1) reader connections now, so a bad file fails at startup.
  static Result<std::unique_ptr<ReaderPool>> Open(const std::string& path, uint32_t size,
                                                  uint32_t busy_timeout_ms);

  // A leased connection, returned to the pool when the lease ends. A transaction left open is
  // rolled back first, so the next reader starts from a fresh snapshot.
  class Lease {
   public:
    Lease(ReaderPool* pool, std::unique_ptr<Connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    ~Lease();
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;

    Connection* operator->() const { return conn_.get(); }
    Connection& operator*() const { return *conn_; }

   private:
    ReaderPool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  // Waits until a connection is free or `deadline` passes (ErrorKind::kPoolTimeout).
  StoreResult<Lease> Acquire(Clock::time_point deadline);

 private:
  ReaderPool() = default;
  void Release(std::unique_ptr<Connection> conn);

  std::mutex mu_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
};

}  // namespace xb::store::sqlite
