#include "base/byte_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace xb {
namespace {

std::string Bytes(const ByteBuffer& buffer, size_t begin, size_t end) {
  return std::string(buffer.data() + begin, end - begin);
}

TEST(ByteBuffer, StartsEmptyAndFirstReserveAllocatesAtLeastTheMinimum) {
  ByteBuffer buffer;
  EXPECT_EQ(buffer.capacity(), 0u);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(buffer.Reserve(10, 0, 0), 0u);
  EXPECT_GE(buffer.capacity(), 4096u);
  EXPECT_NE(buffer.data(), nullptr);
}

TEST(ByteBuffer, ReserveWithinCapacityChangesNothing) {
  ByteBuffer buffer;
  buffer.Reserve(100, 0, 0);
  char* before = buffer.data();
  const size_t capacity = buffer.capacity();
  std::memcpy(buffer.data(), "abcdef", 6);
  EXPECT_EQ(buffer.Reserve(capacity, 2, 6), 0u);  // exactly the capacity: no growth
  EXPECT_EQ(buffer.data(), before);
  EXPECT_EQ(buffer.capacity(), capacity);
  EXPECT_EQ(Bytes(buffer, 0, 6), "abcdef");
}

TEST(ByteBuffer, GrowingMovesOnlyTheUnsentBytesToTheStart) {
  ByteBuffer buffer;
  buffer.Reserve(4096, 0, 0);
  const size_t capacity = buffer.capacity();
  // Bytes [0, 1000) were sent; [1000, 1010) still wait; the caller now needs room for a frame
  // that ends at capacity + 500 in its current positions.
  std::memset(buffer.data(), 'x', 1000);
  std::memcpy(buffer.data() + 1000, "0123456789", 10);
  const size_t shift = buffer.Reserve(capacity + 500, 1000, 1010);
  EXPECT_EQ(shift, 1000u);
  EXPECT_EQ(Bytes(buffer, 0, 10), "0123456789");
  // The requested end, in the shifted positions, fits.
  EXPECT_GE(buffer.capacity(), capacity + 500 - shift);
}

TEST(ByteBuffer, GrowthAtLeastDoublesSoAppendsAreAmortized) {
  ByteBuffer buffer;
  buffer.Reserve(1, 0, 0);
  const size_t first = buffer.capacity();
  buffer.Reserve(first + 1, 0, 0);
  EXPECT_GE(buffer.capacity(), 2 * first);
  // A request larger than double is met exactly enough.
  const size_t big = buffer.capacity() * 5;
  buffer.Reserve(big, 0, 0);
  EXPECT_GE(buffer.capacity(), big);
}

TEST(ByteBuffer, NothingLiveMeansNothingCopied) {
  ByteBuffer buffer;
  buffer.Reserve(4096, 0, 0);
  const size_t capacity = buffer.capacity();
  // Everything was sent: the shift is still reported, the new buffer starts empty.
  EXPECT_EQ(buffer.Reserve(capacity * 3, 4096, 4096), 4096u);
  EXPECT_GE(buffer.capacity(), capacity * 3 - 4096);
}

// Each cache test runs on a thread of its own: the cache is per thread.
void OnFreshThread(const std::function<void()>& body) { std::thread(body).join(); }

TEST(ByteBuffer, ALargeBlockFreedOnAThreadIsReusedByTheNextBufferThatGrowsThere) {
  OnFreshThread([] {
    char* first = nullptr;
    {
      ByteBuffer buffer;
      buffer.Reserve(ByteBuffer::kMinCachedBlock * 3, 0, 0);
      EXPECT_EQ(buffer.capacity(), ByteBuffer::kMinCachedBlock * 4);  // a power of two
      first = buffer.data();
    }
    // Had the block gone back to the allocator, this allocation of its size would likely get it.
    auto decoy = std::make_unique_for_overwrite<char[]>(ByteBuffer::kMinCachedBlock * 4);
    ByteBuffer next;
    next.Reserve(ByteBuffer::kMinCachedBlock * 2 + 1, 0, 0);
    EXPECT_NE(decoy.get(), first);
    EXPECT_EQ(next.data(), first);  // the cached block, not fresh memory
    EXPECT_EQ(next.capacity(), ByteBuffer::kMinCachedBlock * 4);

    // A block is handed out once: another buffer gets a block of its own.
    ByteBuffer other;
    other.Reserve(ByteBuffer::kMinCachedBlock * 2 + 1, 0, 0);
    EXPECT_NE(other.data(), first);
  });
}

TEST(ByteBuffer, SmallBlocksAndBlocksAboveTheCacheBoundAreNotKept) {
  OnFreshThread([] {
    {
      ByteBuffer small;
      small.Reserve(100, 0, 0);
      ByteBuffer huge;
      huge.Reserve(ByteBuffer::kMaxCachedBytes + 1, 0, 0);
    }
    // Nothing was cached: the smallest cacheable request gets a block of exactly its class (a
    // cached block would be the larger one).
    ByteBuffer next;
    next.Reserve(ByteBuffer::kMinCachedBlock, 0, 0);
    EXPECT_EQ(next.capacity(), ByteBuffer::kMinCachedBlock);
  });
}

TEST(ByteBuffer, AFullCacheDropsItsSmallestBlocksForALargerOne) {
  OnFreshThread([] {
    constexpr size_t kEighth = ByteBuffer::kMaxCachedBytes / 4;
    {
      ByteBuffer a, b, c, d;  // four blocks fill the cache
      for (ByteBuffer* buffer : {&a, &b, &c, &d}) {
        buffer->Reserve(kEighth, 0, 0);
      }
    }
    char* large = nullptr;
    {
      ByteBuffer buffer;
      buffer.Reserve(kEighth * 2, 0, 0);  // taken fresh: no cached block is that large
      large = buffer.data();
    }  // released: two small blocks go to make room for it
    auto decoy = std::make_unique_for_overwrite<char[]>(kEighth * 2);  // see the test above
    ByteBuffer next;
    next.Reserve(kEighth * 2, 0, 0);
    EXPECT_NE(decoy.get(), large);
    EXPECT_EQ(next.data(), large);
  });
}

// The VmFlags of the mapping that holds `at`, from /proc/self/smaps ("" when none is found).
std::string MappingFlags(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(at);
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {  // a mapping's first line
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(ByteBuffer, AHugePageBufferTakesWholeAlignedHugePagesAndKeepsItsBytesWhenItGrows) {
  OnFreshThread([] {
    ByteBuffer buffer(ByteBuffer::Pages::kHuge);
    buffer.Reserve(700 << 10, 0, 0);
    EXPECT_EQ(buffer.capacity(), ByteBuffer::kHugePageBytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % ByteBuffer::kHugePageBytes, 0u);
    // The kernel was asked for huge pages ("hg": MADV_HUGEPAGE), whether or not THP is on here.
    EXPECT_NE(MappingFlags(buffer.data()).find(" hg"), std::string::npos)
        << MappingFlags(buffer.data());

    std::memcpy(buffer.data() + 100, "abcdef", 6);
    EXPECT_EQ(buffer.Reserve(ByteBuffer::kHugePageBytes + 1, 100, 106), 100u);
    EXPECT_EQ(buffer.capacity(), 2 * ByteBuffer::kHugePageBytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % ByteBuffer::kHugePageBytes, 0u);
    EXPECT_EQ(Bytes(buffer, 0, 6), "abcdef");
  });
}

TEST(ByteBuffer, HugePageBlocksAreNotCached) {
  OnFreshThread([] {
    char* huge = nullptr;
    {
      ByteBuffer buffer(ByteBuffer::Pages::kHuge);
      buffer.Reserve(ByteBuffer::kMinCachedBlock, 0, 0);
      huge = buffer.data();
    }
    // A cached block would be handed to the next buffer that grows to its size on this thread.
    ByteBuffer next;
    next.Reserve(ByteBuffer::kMinCachedBlock, 0, 0);
    EXPECT_NE(next.data(), huge);
    EXPECT_EQ(next.capacity(), ByteBuffer::kMinCachedBlock);
  });
}

}  // namespace
}  // namespace xb
