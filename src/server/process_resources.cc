#include "server/process_resources.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <thread>

namespace xb::server {

size_t WorkerCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) {
      return static_cast<size_t>(n);
    }
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return 0;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      limit = raised;
    }
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

uint64_t ReservedDescriptors(const config::Config& config) {
  return 128 + 3 * config.database.max_connections;
}

}  // namespace xb::server
