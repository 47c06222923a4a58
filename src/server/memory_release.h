// Gives memory that the allocator holds free back to the system (issue 28: after a burst of large
// responses or requests, RSS stayed at its peak). glibc returns a freed block above its mmap
// threshold at once, but smaller blocks (envelopes, message objects) stay in its arenas, where
// free pages in the middle of a heap are kept until malloc_trim releases them.
//
// Threading: runs on the executor it is given; one per process.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>

namespace xb::server {

class MemoryRelease {
 public:
  // Every `interval`, trims when the arenas hold more than `threshold` bytes free.
  MemoryRelease(boost::asio::any_io_executor executor, std::chrono::milliseconds interval,
                size_t threshold);
  void Start();
  void Stop();

 private:
  void Arm();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  size_t threshold_;
};

}  // namespace xb::server
