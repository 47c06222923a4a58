#include "base/thread_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace xb {

int ThisThreadNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); }

namespace {

void LowerThisThread() {
  errno = 0;
  const int current = ThisThreadNice();
  if (current == -1 && errno != 0) {
    return;
  }
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), PoolThreadNice(current));
}

}  // namespace

void LowerPoolThreadPriorityOnce() {
  thread_local const bool lowered = (LowerThisThread(), true);
  static_cast<void>(lowered);
}

}  // namespace xb
