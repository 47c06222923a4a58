#include "server/memory_release.h"

#include <malloc.h>

namespace xb::server {

MemoryRelease::MemoryRelease(boost::asio::any_io_executor executor,
                             std::chrono::milliseconds interval, size_t threshold)
    : timer_(executor), interval_(interval), threshold_(threshold) {}

void MemoryRelease::Start() { Arm(); }

void MemoryRelease::Stop() { timer_.cancel(); }

void MemoryRelease::Arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    // mallinfo2 sums the arenas' free lists (a short lock per arena); malloc_trim walks the
    // heaps and returns their free pages, so it runs only when there is much to return.
    const struct mallinfo2 info = mallinfo2();
    if (info.fordblks > threshold_) {
      malloc_trim(0);
    }
    Arm();
  });
}

}  // namespace xb::server
