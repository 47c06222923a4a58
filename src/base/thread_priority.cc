#include "base/thread_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace xb {

namespace {

void LowerBy(int steps) {
  const id_t thread = static_cast<id_t>(gettid());
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, thread);
  if (current == -1 && errno != 0) {
    return;
  }
  setpriority(PRIO_PROCESS, thread, current + steps);
}

}  // namespace

void LowerPoolThreadPriorityOnce() {
  thread_local const bool lowered = (LowerBy(kPoolThreadNiceSteps), true);
  static_cast<void>(lowered);
}

}  // namespace xb
