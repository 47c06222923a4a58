// The DB pool (ARCHITECTURE.md section 2): blocking store calls run on a bounded set of threads,
// never on an I/O thread. A handler co_awaits Run(fn) and resumes on its own executor.
//
// Bounded twice (base/offload_pool.h, as the CPU pool is): `threads` workers, and at most
// `max_admitted` jobs admitted (queued or running) at once. A job offered beyond that is not
// queued: the caller resumes at once with a StoreError of kind kQueueFull, which the API layer
// answers UNAVAILABLE "the database queue is full; retry later" (api/store_status.h), so a flood
// of requests cannot grow the queue, and the memory its jobs hold, without bound.
//
// Shutdown: Stop() drops the jobs that have not started and waits for the running ones. A dropped
// job's caller is never resumed: its coroutine is destroyed on its own executor (Asio unwinds an
// abandoned awaitable there), so every executor a job holds must outlive Stop().
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "base/cancel_flag.h"
#include "base/offload_pool.h"
#include "store/store.h"

namespace xb::store {

// Store calls admitted to the DB pool at once, queued or running: the CPU pool's bound
// (server.cc's kCpuPoolMaxQueuedJobs), since each job is likewise one request's work.
inline constexpr size_t kDbPoolMaxAdmittedJobs = 4096;

// The error a job refused by a full pool resolves to (kQueueFull).
inline StoreError QueueFullError() {
  StoreError error;
  error.kind = ErrorKind::kQueueFull;
  error.message = "the database queue is full";
  return error;
}

class DbPool {
 public:
  explicit DbPool(size_t threads, size_t max_admitted = kDbPoolMaxAdmittedJobs)
      : pool_(threads, max_admitted) {}
  DbPool(const DbPool&) = delete;
  DbPool& operator=(const DbPool&) = delete;

  // Runs `fn` (blocking, no-throw) on a pool thread; the caller resumes on its own executor with
  // the result, or at once with QueueFullError() when the pool has `max_admitted` jobs already
  // (`fn` is then not run). `fn`'s result type must be constructible from a StoreError. Suspends.
  // When `cancel` is set before the job starts, or the pool is stopping, the job is not run and
  // the caller never resumes (see the header comment).
  //
  // Pass a named job (`auto job = [..] {..}; co_await pool.Run(std::move(job));`): GCC 12 can
  // destroy a lambda temporary with non-trivial captures twice when it is created inside a
  // co_await expression (base/offload_pool.h).
  template <typename F>
  auto Run(F&& fn, CancelFlag cancel = nullptr) {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    static_assert(std::is_constructible_v<R, StoreError>,
                  "a DB pool job returns a result that can carry a StoreError");
    return pool_.RunOr(
        std::forward<F>(fn), [] { return R(QueueFullError()); }, std::move(cancel));
  }

  // Jobs admitted and not yet finished or dropped.
  size_t admitted() const { return pool_.admitted(); }

  // Shutdown: jobs not started are dropped, running ones finish; returns when every pool thread
  // has ended. Idempotent. Call while the executors of every caller still exist.
  void Stop() { pool_.Stop(); }

 private:
  OffloadPool pool_;
};

}  // namespace xb::store
