// Protobuf base-128 varints, for the places that write wire bytes by hand (stored rows sent
// verbatim, stream frames, spans): their size, and writing one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xb {

// Bytes of the varint encoding of `value` (1 to 10).
constexpr size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Writes `value` at `at` (room for VarintSize(value) bytes); returns the end.
inline char* PutVarint(char* at, uint64_t value) {
  while (value >= 0x80) {
    *at++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *at++ = static_cast<char>(value);
  return at;
}

inline void AppendVarint(std::string& out, uint64_t value) {
  char bytes[10];
  out.append(bytes, static_cast<size_t>(PutVarint(bytes, value) - bytes));
}

}  // namespace xb
