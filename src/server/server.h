// Wiring and lifecycle (ARCHITECTURE.md section 7): start order, readiness (OPS-005), signals,
// drain and stop order (OPS-007, OPS-008).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>

#include "config/config.h"
#include "rpc/router.h"

namespace xb::server {

struct RunOptions {
  // Test builds only (XB_TEST_HOOKS): extra handlers registered before serving.
  std::function<void(rpc::Router&)> extra_handlers;
  // Test builds only: awaited by Publish between identity validation and commit (API-232 tests).
  std::function<boost::asio::awaitable<void>()> before_identity_commit;
};

// Runs the backend until it has drained after SIGTERM/SIGINT. Returns the process exit code;
// a startup failure has already printed its one line.
int Run(const config::Config& config, RunOptions options = {});

}  // namespace xb::server
