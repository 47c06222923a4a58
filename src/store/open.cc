#include "store/open.h"

#include <algorithm>

#include "config/database_url.h"
#include "store/sqlite/sqlite_store.h"

namespace xb::store {

Result<std::unique_ptr<Store>> OpenStore(const config::Config& config) {
  XB_ASSIGN_OR_RETURN(auto url, config::ParseDatabaseUrl(config.database.url));
  if (url.engine == config::DatabaseUrl::Engine::kSqlite) {
    XB_ASSIGN_OR_RETURN(
        auto store,
        sqlite::SqliteStore::Open(sqlite::SqliteOptions{
            .path = url.sqlite_path,
            .max_readers = static_cast<uint32_t>(
                std::min<uint64_t>(config.database.max_connections, 64)),
            .statement_timeout_ms =
                static_cast<uint32_t>(config.database.max_statement_timeout_ms),
        }));
    return std::unique_ptr<Store>(std::move(store));
  }
  return Unavailable("configuration is invalid: database.url (PostgreSQL engine not available)");
}

}  // namespace xb::store
