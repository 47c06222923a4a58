// The pruning pass on the embedded engine (STORE.md 9.2, issue 35): one batch runs as an ordinary
// job on the writer thread, between publish groups, in its own BEGIN IMMEDIATE transaction, so it
// needs no lock of its own (one process per database file).
#pragma once

#include <cstdint>

#include "store/sqlite/connection.h"
#include "store/store.h"

namespace xb::store::sqlite {

// Registers xb_clock_ns() on `conn`: the process real-time clock in ns, the clock that stamps
// server_ns (STORE.md 8), so that the deleting statement reads the clock itself (OPS-002).
StoreResult<void> RegisterPruneClock(Connection& conn);

// The pass's partial index on the expiry (Store::PreparePruning), on the writer connection.
StoreResult<void> BuildPruneIndex(Connection& conn);

// One batch of the pass (Store::PruneBatch) on the writer connection, outside any transaction.
StoreResult<PruneBatchResult> RunPruneBatch(Connection& conn, const PruneKey& after, uint32_t limit,
                                            bool hold_at_push_cursor);

// The greatest id ever pruned (Store::PrunedThrough), in the caller's read transaction.
StoreResult<int64_t> ReadPrunedThrough(Connection& conn);

}  // namespace xb::store::sqlite
