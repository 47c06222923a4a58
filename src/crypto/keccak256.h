// Keccak-256 as Ethereum uses it (the original Keccak submission's padding 0x01, not FIPS 202
// SHA3-256's 0x06), for EIP-191 personal-message hashes, addresses and the SCW cache key
// (VALIDATION.md 5.5, 5.9.4). OpenSSL 3.0 ships only SHA3 and no Debian C library in the build
// packages provides Keccak-256, so the permutation is written out here (keccak256.cc) and pinned
// to published vectors (keccak256_test.cc). Pure function; any thread; never suspends.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace xb::crypto {

inline constexpr size_t kKeccak256Bytes = 32;

using Keccak256Digest = std::array<uint8_t, kKeccak256Bytes>;

// The 32-byte Keccak-256 digest of `data`.
Keccak256Digest Keccak256(std::string_view data);

}  // namespace xb::crypto
