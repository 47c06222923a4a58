// The CPU pool (ARCHITECTURE.md section 2): crypto that costs more than a few microseconds
// (key-package and identity-update signature checks) runs on a small, bounded set of threads,
// never on an I/O thread. A handler co_awaits Run(fn) and resumes on its own executor.
//
// Bounded twice (base/offload_pool.h): `threads` workers, and at most `max_queued` jobs admitted
// (queued or running) at once. A job offered beyond that is not queued: Run resolves to nullopt
// at once and the caller answers UNAVAILABLE, so a flood of signature work cannot grow memory
// without bound (STYLE.md: every queue is bounded).
//
// Shutdown: Stop() drops the jobs not started and waits for the running ones, as store::DbPool's
// Stop does (a dropped job's caller unwinds on its own executor, which must outlive Stop()).
#pragma once

#include "base/offload_pool.h"

namespace xb::api {

// CpuPool(threads, max_queued); Run(fn) resolves to std::optional of fn's result.
using CpuPool = OffloadPool;

}  // namespace xb::api
