// An offload pool: work that must not run on an I/O thread (blocking store calls, crypto that
// costs more than a few microseconds) runs on a small, fixed set of threads. A coroutine
// co_awaits Run(fn) and resumes on its own executor with the result. Used by store::DbPool
// (store/db_pool.h) and api::CpuPool (api/cpu_pool.h).
//
// Bounded twice: `threads` workers, and at most `max_admitted` jobs admitted (queued or running)
// at once. A job offered beyond that is not queued: Run resolves to nullopt at once and the
// caller answers UNAVAILABLE, so a flood of work cannot grow memory without bound (STYLE.md:
// every queue is bounded). The pool's threads run below the priority of the thread that started
// them (base/thread_priority.h), so they yield to the I/O threads.
//
// Shutdown: Stop() drops the jobs that have not started and waits for the running ones. A dropped
// job's caller is never resumed: its coroutine is destroyed on its own executor (Asio unwinds an
// abandoned awaitable there), so every executor a job holds must outlive Stop().
//
// Thread-safety: Run, admitted and Stop may be called from any thread.
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

#include "base/cancel_flag.h"
#include "base/thread_priority.h"

namespace xb {

class OffloadPool {
 public:
  OffloadPool(size_t threads, size_t max_admitted) : pool_(threads), max_admitted_(max_admitted) {}
  ~OffloadPool() { Stop(); }
  OffloadPool(const OffloadPool&) = delete;
  OffloadPool& operator=(const OffloadPool&) = delete;

  // Runs `fn` (no-throw) on a pool thread; the caller resumes on its own executor with its result,
  // or with nullopt at once when `max_admitted` jobs are already admitted (`fn` is then not run).
  // Suspends. When `cancel` is set before the job starts, or the pool is stopping, the job is not
  // run and the caller never resumes (see the header comment).
  //
  // Pass a named job (`auto job = [..] {..}; co_await pool.Run(std::move(job));`): GCC 12 can
  // destroy a lambda temporary with non-trivial captures twice when it is created inside a
  // co_await expression. Run takes a reference and moves the job straight into the posted work,
  // so the co_await expression creates no temporary of the job's type.
  template <typename F>
  auto Run(F&& fn, CancelFlag cancel = nullptr) {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    return Initiate<std::optional<R>>(
        std::forward<F>(fn), [] { return std::optional<R>(); }, std::move(cancel));
  }

  // Run for a result type that can say "refused" itself: the caller resumes with `fn`'s result,
  // or with `refused()` (called on the offering thread) when the pool is full.
  template <typename F, typename Refused>
  auto RunOr(F&& fn, Refused refused, CancelFlag cancel = nullptr) {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    return Initiate<R>(std::forward<F>(fn), std::move(refused), std::move(cancel));
  }

  // Jobs admitted and not yet finished or dropped (for tests and gauges).
  size_t admitted() const { return admitted_.load(std::memory_order_relaxed); }

  // Shutdown: jobs not started are dropped, running ones finish; returns when every pool thread
  // has ended. Idempotent. Call while the executors of every caller still exist.
  void Stop() {
    stopping_.store(true, std::memory_order_release);
    pool_.join();
  }

 private:
  // Out: what the caller resumes with, built from the job's result or from `refused()`.
  template <typename Out, typename F, typename Refused>
  auto Initiate(F&& fn, Refused refused, CancelFlag cancel) {
    using Job = std::decay_t<F>;
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>, void(Out)>(
        [this](auto handler, Job job, Refused refused, CancelFlag cancel) {
          auto caller = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                            boost::asio::execution::outstanding_work.tracked);
          if (admitted_.fetch_add(1, std::memory_order_relaxed) >= max_admitted_) {
            admitted_.fetch_sub(1, std::memory_order_relaxed);
            boost::asio::post(caller,
                              [handler = std::move(handler), out = Out(refused())]() mutable {
                                std::move(handler)(std::move(out));
                              });
            return;
          }
          boost::asio::post(
              pool_, [this, handler = std::move(handler), job = std::move(job),
                      caller = std::move(caller), cancel = std::move(cancel)]() mutable {
                LowerPoolThreadPriorityOnce();
                if (stopping_.load(std::memory_order_acquire) ||
                    (cancel && cancel->load(std::memory_order_acquire))) {
                  admitted_.fetch_sub(1, std::memory_order_relaxed);
                  return;  // `handler` goes with this lambda: the caller unwinds on its executor
                }
                Out result(job());
                admitted_.fetch_sub(1, std::memory_order_relaxed);
                boost::asio::post(
                    caller, [handler = std::move(handler), result = std::move(result)]() mutable {
                      std::move(handler)(std::move(result));
                    });
              });
        },
        boost::asio::use_awaitable, std::forward<F>(fn), std::move(refused), std::move(cancel));
  }

  boost::asio::thread_pool pool_;
  const size_t max_admitted_;
  std::atomic<size_t> admitted_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace xb
