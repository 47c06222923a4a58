#include "base/thread_priority.h"

#include <gtest/gtest.h>

#include <thread>

namespace xb {
namespace {

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
  const int expected = PoolThreadNice(before);
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second, expected);
  EXPECT_EQ(ThisThreadNice(), before);
}

}  // namespace
}  // namespace xb
