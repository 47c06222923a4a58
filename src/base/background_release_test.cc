#include "base/background_release.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace xb {
namespace {

// A block whose deleter reports the thread that ran it.
std::shared_ptr<const void> Block(std::promise<std::thread::id>& freed_on) {
  return std::shared_ptr<const void>(new char[16], [&freed_on](const void* p) {
    delete[] static_cast<const char*>(p);
    freed_on.set_value(std::this_thread::get_id());
  });
}

// verifies: issue 28 — a large response block is freed off the thread that sent it
TEST(BackgroundRelease, ALargeBlockIsFreedOnAnotherThread) {
  std::promise<std::thread::id> freed_on;
  auto freed = freed_on.get_future();
  ReleaseInBackground(Block(freed_on), kBackgroundReleaseBytes);
  EXPECT_NE(freed.get(), std::this_thread::get_id());
}

TEST(BackgroundRelease, ASmallBlockIsFreedAtOnceWhereItIs) {
  std::promise<std::thread::id> freed_on;
  auto freed = freed_on.get_future();
  ReleaseInBackground(Block(freed_on), kBackgroundReleaseBytes - 1);
  ASSERT_EQ(freed.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(freed.get(), std::this_thread::get_id());
}

// A block someone else still holds is only given up, not freed, by the release.
TEST(BackgroundRelease, ABlockStillHeldElsewhereOutlivesTheRelease) {
  std::promise<std::thread::id> freed_on;
  auto freed = freed_on.get_future();
  auto held = Block(freed_on);
  ReleaseInBackground(held, kBackgroundReleaseBytes);
  ReleaseInBackground(nullptr, kBackgroundReleaseBytes);  // nothing to release: no effect
  EXPECT_EQ(freed.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  held.reset();  // the last reference: freed here, or by the releaser if it is still dropping
  freed.get();
}

}  // namespace
}  // namespace xb
