// Test-only helpers for writing byte strings by hand: hex in and out, and the RFC 9420 TLS
// presentation pieces (big-endian integers, §2.1.2 vector prefixes). Deliberately independent of
// tls_reader.h so that tests do not build their inputs with the code under test.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "crypto/test_hex.h"

namespace xb::validate::testing {

// Hex to bytes; spaces are ignored, so tests can group bytes by field ("0a02 1801").
inline std::string Unhex(std::string_view spaced_hex) {
  std::string hex;
  for (char c : spaced_hex) {
    if (c != ' ') {
      hex.push_back(c);
    }
  }
  return crypto::testing::Unhex(hex);
}

inline std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0f]);
  }
  return out;
}

// Spaced hex ("0a02 1801") as plain lowercase hex, for comparing with Hex().
inline std::string Squeeze(std::string_view spaced_hex) { return Hex(Unhex(spaced_hex)); }

template <size_t N>
std::string Hex(const std::array<uint8_t, N>& bytes) {
  return Hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), N));
}

inline std::string Repeat(uint8_t byte, size_t n) {
  return std::string(n, static_cast<char>(byte));
}

inline std::string U8(uint8_t v) { return std::string(1, static_cast<char>(v)); }
inline std::string U16(uint16_t v) { return U8(v >> 8) + U8(v & 0xff); }
inline std::string U32(uint32_t v) { return U16(v >> 16) + U16(v & 0xffff); }
inline std::string U64(uint64_t v) { return U32(v >> 32) + U32(v & 0xffffffff); }

// The minimal RFC 9420 §2.1.2 prefix for `length`: 00 + 6 bits, 01 + 14 bits, 10 + 30 bits.
inline std::string Prefix(size_t length) {
  if (length < 64) {
    return U8(static_cast<uint8_t>(length));
  }
  if (length < 16384) {
    return U16(static_cast<uint16_t>(0x4000 | length));
  }
  return U32(static_cast<uint32_t>(0x80000000u | length));
}

// `body` as a variable-length vector (prefix + body).
inline std::string Vec(std::string_view body) { return Prefix(body.size()) + std::string(body); }

// Protobuf wire pieces, for inputs a protobuf serializer would never write (non-minimal varints,
// out-of-order fields, unknown fields).
inline std::string PbVarint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// Field `number` as a length-delimited field (wire type 2).
inline std::string PbBytes(uint32_t number, std::string_view body) {
  return PbVarint((uint64_t{number} << 3) | 2) + PbVarint(body.size()) + std::string(body);
}

// Field `number` as a varint field (wire type 0).
inline std::string PbUint(uint32_t number, uint64_t v) {
  return PbVarint(uint64_t{number} << 3) + PbVarint(v);
}

}  // namespace xb::validate::testing
