#include "base/thread_priority.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace xb {
namespace {

int ThisThreadNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); }

TEST(ThreadPriority, LowersTheCallingThreadOnceAndNoOtherThread) {
  const int before = ThisThreadNice();
  int first = 0;
  int second = 0;
  std::thread pool_thread([&] {
    LowerPoolThreadPriorityOnce();
    first = ThisThreadNice();
    LowerPoolThreadPriorityOnce();
    second = ThisThreadNice();
  });
  pool_thread.join();
  const int expected = std::min(before + kPoolThreadNiceSteps, 19);  // 19: the lowest priority
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second, expected);
  EXPECT_EQ(ThisThreadNice(), before);
}

}  // namespace
}  // namespace xb
