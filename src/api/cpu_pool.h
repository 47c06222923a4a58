// The CPU pool (ARCHITECTURE.md section 2): crypto that costs more than a few microseconds
// (key-package and identity-update signature checks) runs on a small, bounded set of threads,
// never on an I/O thread. A handler co_awaits Run(fn) and resumes on its own executor.
//
// Bounded twice: `threads` workers, and at most `max_queued` jobs admitted (queued or running) at
// once. A job offered beyond that is not queued: Run resolves to nullopt at once and the caller
// answers UNAVAILABLE, so a flood of signature work cannot grow memory without bound (STYLE.md:
// every queue is bounded).
//
// Shutdown: Stop() drops the jobs not started and waits for the running ones, as store::DbPool's
// Stop does (a dropped job's caller unwinds on its own executor, which must outlive Stop()).
#pragma once

#include <atomic>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/thread_priority.h"

namespace xb::api {

class CpuPool {
 public:
  CpuPool(size_t threads, size_t max_queued) : pool_(threads), max_queued_(max_queued) {}
  ~CpuPool() { Stop(); }
  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;

  // Runs `fn` (CPU-bound, no-throw, never blocks on I/O) on a pool thread; the caller resumes on
  // its own executor with its result, or with nullopt when `max_queued` jobs are already
  // admitted (`fn` is then not run). Suspends. Thread-safe.
  //
  // Pass a named job (`auto job = [..] {..}; co_await pool.Run(std::move(job));`), for the GCC 12
  // reason store::DbPool::Run gives.
  template <typename F>
  auto Run(F&& fn) {
    using Job = std::decay_t<F>;
    using R = std::invoke_result_t<Job&>;
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>,
                                       void(std::optional<R>)>(
        [this](auto handler, Job job) {
          auto caller = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                            boost::asio::execution::outstanding_work.tracked);
          if (admitted_.fetch_add(1, std::memory_order_relaxed) >= max_queued_) {
            admitted_.fetch_sub(1, std::memory_order_relaxed);
            boost::asio::post(caller, [handler = std::move(handler)]() mutable {
              std::move(handler)(std::optional<R>());
            });
            return;
          }
          boost::asio::post(pool_, [this, handler = std::move(handler), job = std::move(job),
                                    caller = std::move(caller)]() mutable {
            LowerPoolThreadPriorityOnce();
            if (stopping_.load(std::memory_order_acquire)) {
              admitted_.fetch_sub(1, std::memory_order_relaxed);
              return;  // `handler` goes with this lambda: the caller unwinds on its executor
            }
            std::optional<R> result(job());
            admitted_.fetch_sub(1, std::memory_order_relaxed);
            boost::asio::post(caller,
                              [handler = std::move(handler), result = std::move(result)]() mutable {
                                std::move(handler)(std::move(result));
                              });
          });
        },
        boost::asio::use_awaitable, std::forward<F>(fn));
  }

  // Jobs admitted and not yet finished (for tests and gauges).
  size_t admitted() const { return admitted_.load(std::memory_order_relaxed); }

  // Shutdown: jobs not started are dropped, running ones finish; returns when every pool thread
  // has ended. Idempotent. Call while the executors of every caller still exist.
  void Stop() {
    stopping_.store(true, std::memory_order_release);
    pool_.join();
  }

 private:
  boost::asio::thread_pool pool_;
  const size_t max_queued_;
  std::atomic<size_t> admitted_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace xb::api
