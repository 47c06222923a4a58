// The envelope columns every read selects, in one order, and their decoding.
#pragma once

#include <optional>

#include "store/postgres/connection.h"
#include "store/store.h"

namespace xb::store::postgres {

// Select list for `envelopes AS e`, metadata only; add ", e.payload" for payloads.
#define XB_PG_META_COLUMNS \
  "e.sequence_id, e.topic, e.server_ns, e.expiry_ns, e.message_hash, e.is_commit_or_proposal"
inline constexpr int kMetaColumnCount = 6;

// Per-input lookups of an unnest() array: statements are prepared, and PostgreSQL may keep a
// generic plan made while a table was empty, in which a join of unnest() with envelopes is a hash
// join over a sequential scan until the next ANALYZE (measured: 12-20 ms per publish at 28k rows).
// Each lookup is therefore a LATERAL subquery with LIMIT 1 or a scalar subquery: neither can be
// flattened into a join, so every input is one index probe whatever the statistics say.

// Decodes the XB_PG_META_COLUMNS starting at `col`; nullopt when a value breaks the schema (a hash
// that is not 32 bytes), which the caller reports as kInvariant. A NULL expiry reads as 0.
std::optional<EnvelopeMeta> ReadMeta(const PgResult& result, int row, int col);

}  // namespace xb::store::postgres
