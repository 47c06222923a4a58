// Test-only: hex to bytes, for writing published test vectors as they are printed.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace xb::crypto::testing {

inline std::string Unhex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    std::abort();  // a typo in a test vector
  };
  if (hex.size() % 2 != 0) {
    std::abort();
  }
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  }
  return out;
}

// `bytes` with bit 0 of byte `index` flipped.
inline std::string Flip(std::string bytes, size_t index) {
  bytes[index] = static_cast<char>(bytes[index] ^ 0x01);
  return bytes;
}

}  // namespace xb::crypto::testing
