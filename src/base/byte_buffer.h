// A growable byte buffer for output that is written in place (frames encoded straight into it).
// Unlike std::string, growing it never zero-fills the new bytes, and a reallocation moves only the
// bytes still waiting to be sent, so a large frame costs no memset and no copy of sent data.
//
// Large blocks (64 KiB and up) are recycled through a small per-thread cache instead of going back
// to the allocator: a stream catching up grows its output to megabytes, and a new stream's buffer
// would otherwise be fresh memory that the kernel faults in and zeroes page by page (a fifth of the
// server's time when streams catch up one after another).
//
// A buffer made with Pages::kHuge takes its blocks in whole, aligned 2 MiB units that the kernel
// is asked to back with transparent huge pages (madvise(MADV_HUGEPAGE); where THP is off they are
// ordinary pages). That is for a buffer of about a megabyte that is handed to the kernel by
// vmsplice(2) again and again: the kernel pins a huge page in one step, and 256 small ones in 256
// (the OTLP exporter's span batches: a sixth of its thread's time went to pinning small pages).
// Such blocks are not cached; each costs its rounded-up size.
//
// Threading: none; owned by one connection or call. The cache is the thread's that frees a block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

namespace xb {

// Frees a ByteBuffer block as it was allocated (huge blocks are over-aligned).
struct ByteBlockFree {
  bool huge = false;
  void operator()(char* block) const;
};

class ByteBuffer {
 public:
  enum class Pages : bool { kSmall, kHuge };

  ByteBuffer() = default;
  explicit ByteBuffer(Pages pages) : pages_(pages) {}
  ~ByteBuffer() { Release(std::move(data_), capacity_); }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

  // Ensures capacity() >= `size` when the bytes [live_begin, live_end) are moved to the start:
  // returns the offset the caller must subtract from its positions (live_begin when the bytes
  // moved, 0 when nothing changed). Other bytes are not kept; new bytes are uninitialized.
  size_t Reserve(size_t size, size_t live_begin, size_t live_end) {
    if (size <= capacity_) {
      return 0;
    }
    const size_t live = live_end - live_begin;
    size_t capacity = std::max({size - live_begin, capacity_ * 2, kMinCapacity});
    Block grown = Allocate(capacity, pages_);
    if (live > 0) {
      std::memcpy(grown.get(), data_.get() + live_begin, live);
    }
    Release(std::move(data_), capacity_);
    data_ = std::move(grown);
    capacity_ = capacity;
    return live_begin;
  }

  // Blocks from this size up are cached, at most kMaxCachedBytes per thread (also the largest
  // block kept: a unary response of 24 MB takes a 32 MiB block, which is freed, not held by the
  // thread after the load that made it).
  static constexpr size_t kMinCachedBlock = size_t{64} << 10;
  static constexpr size_t kMaxCachedBytes = size_t{16} << 20;
  // The unit of a Pages::kHuge buffer's blocks: one x86-64 huge page.
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  using Block = std::unique_ptr<char[], ByteBlockFree>;

 private:
  static constexpr size_t kMinCapacity = 4096;

  // A block of at least `*capacity` bytes (cacheable sizes round up to a power of two, so blocks
  // fit the next buffer that grows the same way; huge ones to whole huge pages); sets `*capacity`
  // to its size.
  static Block Allocate(size_t& capacity, Pages pages);
  static void Release(Block block, size_t capacity);

  Block data_;
  size_t capacity_ = 0;
  Pages pages_ = Pages::kSmall;
};

}  // namespace xb
