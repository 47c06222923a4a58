// The DB pool (ARCHITECTURE.md section 2): blocking store calls run on a bounded set of threads,
// never on an I/O thread. A handler co_awaits Run(fn) and resumes on its own executor.
//
// Shutdown: Stop() drops the jobs that have not started and waits for the running ones. A dropped
// job's caller is never resumed: its coroutine is destroyed on its own executor (Asio unwinds an
// abandoned awaitable there), so every executor a job holds must outlive Stop().
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
#include <memory>
#include <type_traits>
#include <utility>

#include "base/cancel_flag.h"
#include "base/thread_priority.h"

namespace xb::store {

class DbPool {
 public:
  explicit DbPool(size_t threads) : pool_(threads) {}
  ~DbPool() { Stop(); }
  DbPool(const DbPool&) = delete;
  DbPool& operator=(const DbPool&) = delete;

  // Runs `fn` (blocking, no-throw) on a pool thread; the caller resumes on its own executor with
  // the result. Suspends. When `cancel` is set before the job starts, or the pool is stopping,
  // the job is not run and the caller never resumes (see the header comment).
  //
  // Pass a named job (`auto job = [..] {..}; co_await pool.Run(std::move(job));`): GCC 12 can
  // destroy a lambda temporary with non-trivial captures twice when it is created inside a
  // co_await expression. Run takes a reference and moves the job straight into the posted work,
  // so the co_await expression creates no temporary of the job's type.
  template <typename F>
  auto Run(F&& fn, CancelFlag cancel = nullptr) {
    using Job = std::decay_t<F>;
    using R = std::invoke_result_t<Job&>;
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>, void(R)>(
        [this](auto handler, Job job, CancelFlag cancel) {
          auto caller = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                            boost::asio::execution::outstanding_work.tracked);
          boost::asio::post(
              pool_, [this, handler = std::move(handler), job = std::move(job),
                      caller = std::move(caller), cancel = std::move(cancel)]() mutable {
                LowerPoolThreadPriorityOnce();
                if (stopping_.load(std::memory_order_acquire) ||
                    (cancel && cancel->load(std::memory_order_acquire))) {
                  return;  // `handler` goes with this lambda: the caller unwinds on its executor
                }
                R result = job();
                boost::asio::post(
                    caller, [handler = std::move(handler), result = std::move(result)]() mutable {
                      std::move(handler)(std::move(result));
                    });
              });
        },
        boost::asio::use_awaitable, std::forward<F>(fn), std::move(cancel));
  }

  // Shutdown: jobs not started are dropped, running ones finish; returns when every pool thread
  // has ended. Idempotent. Call while the executors of every caller still exist.
  void Stop() {
    stopping_.store(true, std::memory_order_release);
    pool_.join();
  }

 private:
  boost::asio::thread_pool pool_;
  std::atomic<bool> stopping_{false};
};

}  // namespace xb::store
