// Large blocks freed off the I/O threads. Giving 24 MB back to the kernel (munmap of thousands of
// pages) takes an I/O thread milliseconds, during which none of its connections' requests is read:
// a response's bytes are released where they were sent, on the I/O thread, so a connection
// reading large Query pages stalled every other client of its thread once per page. A block
// handed here is dropped by one background thread that runs below the I/O threads' priority.
//
// The queue holds only references to memory that is already allocated (and, for responses,
// bounded by the response-memory budget), and the thread drops them as fast as they come; it is
// not a work queue. At process exit the thread drops what is left and ends.
//
// Thread-safety: ReleaseInBackground may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace xb {

// Blocks below this size are dropped where they are: freeing them costs less than a handoff.
inline constexpr size_t kBackgroundReleaseBytes = size_t{1} << 20;

// Drops `keep` on the background thread (started on first use); `bytes` is the memory it holds.
// A block under kBackgroundReleaseBytes is dropped at once, here.
void ReleaseInBackground(std::shared_ptr<const void> keep, size_t bytes);

}  // namespace xb
