// Schema migrations of the PostgreSQL engine (STORE.md 2.6): numbered migrations compiled into the
// binary, applied at startup on the primary only, under the session advisory lock (0, 4) so that
// concurrent starters wait, each version in its own transaction together with its
// `schema_migrations` row.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/postgres/connection.h"

namespace xb::store::postgres {

struct Migration {
  int64_t version = 0;  // YYYYMMDDhhmmss, ascending
  std::string_view name{};
  std::string_view sql{};
};

// The migrations this binary carries, ascending by version. The first, 20260907000000, creates
// the sequence, tables and indexes of STORE.md 2.1-2.3 and seeds the singleton rows.
std::span<const Migration> EmbeddedMigrations();

struct MigrationOutcome {
  std::vector<int64_t> applied;  // applied by this call, ascending
  std::vector<int64_t> unknown;  // applied earlier but unknown to this binary (a newer binary went
                                 // first): tolerated, for the caller to log
};

// On a dedicated connection (the session lock lives as long as it; closing it on failure releases
// the lock): takes the lock (0, 4), creates `schema_migrations` if absent, refuses when an applied
// migration's checksum (SHA-256 of its SQL text, computed by the server) differs from the embedded
// one (kFailedPrecondition "database migration V differs from the one this binary carries"), then
// applies each missing version in ascending order, and releases the lock. Every wait, including
// the one for the lock, ends by `deadline` (DEADLINE_EXCEEDED); other failures are UNAVAILABLE or,
// for a failing migration, INTERNAL. `migrations` must be ascending by version.
Result<MigrationOutcome> ApplyMigrations(Connection& conn, std::span<const Migration> migrations,
                                         Clock::time_point deadline);

}  // namespace xb::store::postgres
