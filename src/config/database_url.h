// The forms database.url and database.replica_url take (spec/CONF.md section 2.3, plus our
// embedded engine): a libpq connection URI `postgres://` / `postgresql://`, or `sqlite://PATH`.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::config {

struct DatabaseUrl {
  enum class Engine { kPostgres, kSqlite };
  Engine engine = Engine::kPostgres;
  // kSqlite: the file path after `sqlite://` ("./data/xmtp.db", "/var/lib/xmtp/xmtp.db").
  std::string sqlite_path;
};

// Checks the form without connecting. PostgreSQL: the libpq URI grammar
// `postgres[ql]://[user[:password]@][host][:port][,host[:port]...][/dbname][?name=value&...]`
// with RFC 3986 characters and well-formed percent-encodings. SQLite: `sqlite://` followed by a
// non-empty path without control characters. Errors are fixed text without the input.
Result<DatabaseUrl> ParseDatabaseUrl(std::string_view url);

}  // namespace xb::config
