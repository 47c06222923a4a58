#include "fanout/wave_buffers.h"

#include <gtest/gtest.h>

namespace xb::fanout {
namespace {

// A given-back buffer comes back empty with its capacity; at most max_kept are kept, and none
// above max_bytes.
TEST(WaveBuffersTest, KeepsABoundedNumberOfBoundedBuffers) {
  WaveBuffers buffers(/*max_kept=*/2, /*max_bytes=*/1 << 20);
  EXPECT_EQ(buffers.Take().capacity(), std::string().capacity());  // none kept yet

  std::string wave = buffers.Take();
  wave.assign(100000, 'x');
  const size_t capacity = wave.capacity();
  buffers.Give(std::move(wave));
  EXPECT_EQ(buffers.kept(), 1u);
  std::string again = buffers.Take();
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(again.capacity(), capacity);
  EXPECT_EQ(buffers.kept(), 0u);

  std::string a(1000, 'a');
  std::string b(1000, 'b');
  std::string c(1000, 'c');
  buffers.Give(std::move(a));
  buffers.Give(std::move(b));
  buffers.Give(std::move(c));
  EXPECT_EQ(buffers.kept(), 2u);  // the third is freed

  buffers.Take();
  std::string huge;
  huge.reserve((1 << 20) + 1);
  buffers.Give(std::move(huge));
  EXPECT_EQ(buffers.kept(), 1u);  // too large to keep
}

}  // namespace
}  // namespace xb::fanout
