// The DB pool (ARCHITECTURE.md section 2): blocking store calls run on a bounded set of threads,
// never on an I/O thread. A handler co_awaits Run(fn) and resumes on its own executor.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace xb::store {

class DbPool {
 public:
  explicit DbPool(size_t threads) : pool_(threads) {}
  ~DbPool() { pool_.join(); }
  DbPool(const DbPool&) = delete;
  DbPool& operator=(const DbPool&) = delete;

  // Runs `fn` (blocking, no-throw) on a pool thread; the caller resumes on its own executor with
  // the result. Suspends.
  //
  // Pass a named job (`auto job = [..] {..}; co_await pool.Run(std::move(job));`): GCC 12 can
  // destroy a lambda temporary with non-trivial captures twice when it is created inside a
  // co_await expression. Run takes a reference and moves the job straight into the posted work,
  // so the co_await expression creates no temporary of the job's type.
  template <typename F>
  auto Run(F&& fn) {
    using Job = std::decay_t<F>;
    using R = std::invoke_result_t<Job&>;
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>, void(R)>(
        [this](auto handler, Job job) {
          auto caller = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                            boost::asio::execution::outstanding_work.tracked);
          boost::asio::post(pool_, [handler = std::move(handler), job = std::move(job),
                                    caller = std::move(caller)]() mutable {
            R result = job();
            boost::asio::post(caller,
                              [handler = std::move(handler), result = std::move(result)]() mutable {
                                std::move(handler)(std::move(result));
                              });
          });
        },
        boost::asio::use_awaitable, std::forward<F>(fn));
  }

  // Waits for running calls (shutdown).
  void Join() { pool_.join(); }

 private:
  boost::asio::thread_pool pool_;
};

}  // namespace xb::store
