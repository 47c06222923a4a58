// Opens the engine database.url names (sqlite:// embedded, postgres:// primary + optional
// replica), applies migrations and, with a replica, waits for it to replay them (STORE.md 6).
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "base/status.h"
#include "config/config.h"
#include "store/store.h"

namespace xb::store {

struct OpenOptions {
  // Bounds connecting and migrating (the replica's catch-up: store/read_database_wait.h).
  Clock::time_point deadline;
  // Operator warnings from the engine (release hook, unknown migrations); plain words only.
  std::function<void(std::string_view)> warning_sink;
  // A pooled connection was returned inside a transaction and rolled back (STORE.md 2.5).
  std::function<void()> on_released_open_transaction{};
};

// Errors name the configuration key (database.url / database.replica_url), never a value.
Result<std::unique_ptr<Store>> OpenStore(const config::Config& config, OpenOptions options);

}  // namespace xb::store
