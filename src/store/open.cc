#include "store/open.h"

#include <algorithm>
#include <variant>

#include "config/database_url.h"
#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

namespace xb::store {

Result<std::unique_ptr<Store>> OpenStore(const config::Config& config, OpenOptions options) {
  XB_ASSIGN_OR_RETURN(auto url, config::ParseDatabaseUrl(config.database.url));
  if (url.engine == config::DatabaseUrl::Engine::kSqlite) {
    XB_ASSIGN_OR_RETURN(
        auto store,
        sqlite::SqliteStore::Open(sqlite::SqliteOptions{
            .path = url.sqlite_path,
            .max_readers =
                static_cast<uint32_t>(std::min<uint64_t>(config.database.max_connections, 64)),
            .statement_timeout_ms = static_cast<uint32_t>(config.database.max_statement_timeout_ms),
        }));
    return std::unique_ptr<Store>(std::move(store));
  }
  XB_ASSIGN_OR_RETURN(
      auto store,
      postgres::PostgresStore::Open(
          postgres::PostgresOptions{
              .primary_url = config.database.url,
              .replica_url = config.database.replica_url,
              .max_connections =
                  static_cast<int>(std::min<uint64_t>(config.database.max_connections, 10000)),
              .statement_timeout_ms = static_cast<int>(config.database.max_statement_timeout_ms),
              .max_publish_duration_ms =
                  static_cast<int>(config.publishing.max_publish_duration_ms),
              .max_barrier_wait_ms = static_cast<int>(config.publishing.max_barrier_wait_ms),
              .warning_sink = std::move(options.warning_sink),
              .on_released_open_transaction = std::move(options.on_released_open_transaction),
          },
          options.deadline));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace xb::store
