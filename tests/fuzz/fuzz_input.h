// Helpers shared by the libFuzzer targets: reading steering bytes from the front of an input,
// cutting the rest into chunks, and a failing check that names the broken invariant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace xb::fuzz {

// Aborts (a libFuzzer crash, with the input saved) when `condition` is false.
#define XB_FUZZ_CHECK(condition)                                                             \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

// Reads steering values from the front of the input; what is left is the payload.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  // The next byte, or 0 once the input is used up.
  uint8_t Byte() {
    if (rest_.empty()) {
      return 0;
    }
    const auto b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }

  // Chunk sizes for feeding a stream: one byte gives how many sizes follow (0-15), then one byte
  // per size. A size of 0 feeds an empty chunk. No sizes at all means one chunk for everything.
  std::vector<size_t> ChunkSizes() {
    const size_t n = Byte() % 16;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < n; ++i) {
      sizes.push_back(Byte());
    }
    return sizes;
  }

  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

// Cuts `data` into consecutive chunks, cycling through `sizes` (see Input::ChunkSizes). The
// chunks concatenate back to `data`; zero sizes give empty chunks, never an endless loop.
inline std::vector<std::string_view> Split(std::string_view data,
                                           const std::vector<size_t>& sizes) {
  std::vector<std::string_view> chunks;
  size_t total = 0;
  for (size_t s : sizes) {
    total += s;
  }
  if (total == 0) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      chunks.emplace_back();
    }
    chunks.push_back(data);
    return chunks;
  }
  size_t i = 0;
  while (!data.empty()) {
    const size_t take =
        sizes[i % sizes.size()] < data.size() ? sizes[i % sizes.size()] : data.size();
    chunks.push_back(data.substr(0, take));
    data.remove_prefix(take);
    ++i;
  }
  return chunks;
}

}  // namespace xb::fuzz
