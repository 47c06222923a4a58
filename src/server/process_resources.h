// What the process may use of the machine: cores for the I/O and CPU pools, and the open-file
// limit against server.max_connections.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config/config.h"

namespace xb::server {

// The cores this process may run on (its affinity mask), at least 1.
size_t WorkerCount();

// Raises the soft open-file limit to the hard one: the usual soft default (1,024) is far below
// what server.max_connections asks for, and the hard limit is what the operator granted. Returns
// the soft limit in force afterwards (UINT64_MAX when unlimited, 0 when unknown).
uint64_t RaiseOpenFileLimit();

// Descriptors the process needs besides client connections: each thread's io_context, the
// listeners, outbound clients, and up to three per pooled database connection (SQLite's database,
// WAL and shared-memory files; a PostgreSQL socket).
uint64_t ReservedDescriptors(const config::Config& config);

}  // namespace xb::server
