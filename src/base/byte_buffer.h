// A growable byte buffer for output that is written in place (frames encoded straight into it).
// Unlike std::string, growing it never zero-fills the new bytes, and a reallocation moves only the
// bytes still waiting to be sent, so a large frame costs no memset and no copy of sent data.
//
// Large blocks (64 KiB and up) are recycled through a small per-thread cache instead of going back
// to the allocator: a stream catching up grows its output to megabytes, and a new stream's buffer
// would otherwise be fresh memory that the kernel faults in and zeroes page by page (a fifth of the
// server's time when streams catch up one after another).
//
// Threading: none; owned by one connection or call. The cache is the thread's that frees a block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

namespace xb {

class ByteBuffer {
 public:
  ByteBuffer() = default;
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
    std::unique_ptr<char[]> grown = Allocate(capacity);
    if (live > 0) {
      std::memcpy(grown.get(), data_.get() + live_begin, live);
    }
    Release(std::move(data_), capacity_);
    data_ = std::move(grown);
    capacity_ = capacity;
    return live_begin;
  }

  // Blocks from this size up are cached, at most kMaxCachedBytes per thread.
  static constexpr size_t kMinCachedBlock = size_t{64} << 10;
  static constexpr size_t kMaxCachedBytes = size_t{32} << 20;

 private:
  static constexpr size_t kMinCapacity = 4096;

  // A block of at least `*capacity` bytes (cacheable sizes round up to a power of two, so blocks
  // fit the next buffer that grows the same way); sets `*capacity` to its size.
  static std::unique_ptr<char[]> Allocate(size_t& capacity);
  static void Release(std::unique_ptr<char[]> block, size_t capacity);

  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

}  // namespace xb
