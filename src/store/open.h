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
  // Bounds connecting, migrating and the replica's catch-up (PostgreSQL).
  Clock::time_point deadline;
  // Operator warnings from the engine (release hook, unknown migrations); plain words only.
  std::function<void(std::string_view)> warning_sink;
  // A pooled connection was returned inside a transaction and rolled back (STORE.md 2.5).
  std::function<void()> on_released_open_transaction{};
};

// Errors name the configuration key (database.url / database.replica_url), never a value.
Result<std::unique_ptr<Store>> OpenStore(const config::Config& config, OpenOptions options);

// One attempt of the closed allocation boundary task (STORE.md 4.1; on SQLite it reads the
// persisted boundary and is always kOk, STORE.md 8), as the startup loop counts it in
// xmtp_boundary_advances_total. Store::AdvanceBoundary gives the boundary value and the error.
// kNotNeeded is kept for existing callers; no engine reports it.
enum class AdvanceOutcome : uint8_t { kOk, kLockTimeout, kError, kNotNeeded };
AdvanceOutcome AdvanceBoundary(Store& store);

}  // namespace xb::store
