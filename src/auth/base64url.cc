#include "auth/base64url.h"

#include <array>
#include <cstdint>

namespace xb::auth {

namespace {

constexpr uint8_t kInvalid = 0xFF;

constexpr std::array<uint8_t, 256> MakeTable() {
  std::array<uint8_t, 256> table{};
  for (auto& v : table) {
    v = kInvalid;
  }
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<uint8_t>(i);
  }
  return table;
}

constexpr std::array<uint8_t, 256> kTable = MakeTable();

}  // namespace

std::optional<std::string> DecodeBase64Url(std::string_view text) {
  if (text.size() % 4 == 1) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const uint8_t v = kTable[static_cast<unsigned char>(c)];
    if (v == kInvalid) {
      return std::nullopt;
    }
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // Leftover bits (2 or 4) must be zero: a canonical encoding.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    return std::nullopt;
  }
  return out;
}

}  // namespace xb::auth
