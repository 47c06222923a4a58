// A growable byte buffer for output that is written in place (frames encoded straight into it).
// Unlike std::string, growing it never zero-fills the new bytes, and a reallocation moves only the
// bytes still waiting to be sent, so a large frame costs no memset and no copy of sent data.
//
// Threading: none; owned by one connection or call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

namespace xb {

class ByteBuffer {
 public:
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
    const size_t capacity = std::max({size - live_begin, capacity_ * 2, kMinCapacity});
    auto grown = std::make_unique_for_overwrite<char[]>(capacity);
    if (live > 0) {
      std::memcpy(grown.get(), data_.get() + live_begin, live);
    }
    data_ = std::move(grown);
    capacity_ = capacity;
    return live_begin;
  }

 private:
  static constexpr size_t kMinCapacity = 4096;

  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

}  // namespace xb
