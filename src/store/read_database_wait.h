// Start-up's wait for the read database (STORE.md 2.6, 6): with a PostgreSQL replica, serving
// begins only once the replica shows the migrations the primary just applied.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "base/expected.h"
#include "base/status.h"
#include "store/store.h"

namespace xb::store {

// Polls store.ReadDatabaseCaughtUp every `poll_interval` (streams.poll_interval_ms) until it
// answers true, without blocking the executor between checks; each check blocks the calling thread
// for one bounded round trip. Ends by `deadline`: DEADLINE_EXCEEDED naming database.replica_url.
// `timer` is the caller's (on the caller's executor), so that cancelling it, as a termination
// signal during start-up does, ends the wait with CANCELLED. Suspends.
inline boost::asio::awaitable<Status> WaitForReadDatabase(Store& store,
                                                          boost::asio::steady_timer& timer,
                                                          std::chrono::milliseconds poll_interval,
                                                          Clock::time_point deadline) {
  while (true) {
    const Clock::time_point next_poll = Clock::now() + poll_interval;
    XB_TRY_CO(const bool caught_up, store.ReadDatabaseCaughtUp(deadline));
    if (caught_up) {
      co_return Status::Ok();
    }
    if (next_poll >= deadline) {
      co_return Status(StatusCode::kDeadlineExceeded,
                       "database.replica_url: the replica did not replay the migrations in time");
    }
    timer.expires_at(next_poll);
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) {
      co_return Status(StatusCode::kCancelled, "start-up was stopped");
    }
  }
}

}  // namespace xb::store
