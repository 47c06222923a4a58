// Store::CommitPublish from a coroutine (ARCHITECTURE.md section 2). Where the engine can take the
// request on a thread of its own at once (Store::StartCommitPublish: SQLite's writer, PostgreSQL's
// publish leaders), no DB pool thread is held just to wait for that thread: the request goes
// straight to the engine and the coroutine resumes when it is done. Otherwise the blocking call
// runs on the DB pool as before.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <utility>

#include "store/batched_post.h"
#include "store/db_pool.h"
#include "store/store.h"

namespace xb::store {

// Runs `request` through `store` and resumes on the caller's executor with its result. `store`
// and `pool` outlive the call. Suspends.
inline boost::asio::awaitable<StoreResult<CommitPublishResult>> CommitPublishFrom(
    Store& store, DbPool& pool, CommitPublishRequest request) {
  using Result = StoreResult<CommitPublishResult>;
  auto shared = std::make_shared<const CommitPublishRequest>(std::move(request));
  // nullopt: the engine did not take the request (its call never happens), so run it on the pool.
  std::optional<Result> started =
      co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>,
                                           void(std::optional<Result>)>(
          // Captures by reference only: GCC 12 may destroy a lambda temporary with non-trivial
          // captures twice when it is created inside a co_await expression (see DbPool::Run). Both
          // outlive the initiation, which runs before the co_await suspends.
          [&store, &shared](auto handler) {
            auto caller = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                              boost::asio::execution::outstanding_work.tracked);
            // std::function needs a copyable target; the handler is move-only.
            auto shared_handler = std::make_shared<decltype(handler)>(std::move(handler));
            // Batched: an engine completing several publishes at once (inside a
            // CompletionScope) wakes each caller's thread once, not once per publish.
            auto resume = [caller, shared_handler](std::optional<Result> result) mutable {
              BatchedPost(caller, [shared_handler, result = std::move(result)]() mutable {
                std::move (*shared_handler)(std::move(result));
              });
            };
            if (!store.StartCommitPublish(
                    shared, [resume](Result result) mutable { resume(std::move(result)); })) {
              resume(std::nullopt);
            }
          },
          boost::asio::use_awaitable);
  if (started) {
    co_return std::move(*started);
  }
  auto job = [&store, shared] { return store.CommitPublish(*shared); };
  co_return co_await pool.Run(std::move(job));
}

}  // namespace xb::store
