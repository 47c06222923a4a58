// Opens the engine database.url names (sqlite:// embedded, postgres:// primary + optional
// replica), applies migrations and, with a replica, waits for it to replay them (STORE.md 6).
#pragma once

#include <memory>

#include "base/status.h"
#include "config/config.h"
#include "store/store.h"

namespace xb::store {

// Errors name the configuration key (database.url / database.replica_url), never a value.
Result<std::unique_ptr<Store>> OpenStore(const config::Config& config);

}  // namespace xb::store
