// Schema migrations of the embedded engine (STORE.md 2.6 as adapted by section 8): numbered
// migrations compiled into the binary, applied at startup in ascending order, each in its own
// BEGIN IMMEDIATE transaction together with its `schema_migrations` row. The process lock
// (lock_file.h) already excludes concurrent migrators.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/sqlite/connection.h"

namespace xb::store::sqlite {

struct Migration {
  int64_t version = 0;  // YYYYMMDDhhmmss, ascending
  std::string_view name{};
  std::string_view sql{};
};

// The migrations this binary carries, ascending by version. The first is 20260907000000: the
// tables and indexes of STORE.md 2.2 and 2.3 as STRICT tables.
std::span<const Migration> EmbeddedMigrations();

// The checksum stored with an applied migration: 64-bit FNV-1a of the SQL text, 8 bytes
// big-endian. It detects an edited migration, not an adversary.
std::string MigrationChecksum(std::string_view sql);

struct MigrationOutcome {
  std::vector<int64_t> applied;  // applied by this call, ascending
  std::vector<int64_t> unknown;  // applied earlier but not known to this binary (a newer binary
                                 // went first): tolerated, for the caller to log
};

// Creates `schema_migrations` if absent, refuses to start when an applied migration's checksum
// differs from the embedded one (kFailedPrecondition naming the version, e.g. "database migration
// 20260907000000 differs from the one this binary carries"), then applies each missing version.
// Other failures are kUnavailable. `migrations` must be ascending by version.
Result<MigrationOutcome> ApplyMigrations(Connection& conn, std::span<const Migration> migrations,
                                         int64_t now_ns);

}  // namespace xb::store::sqlite
