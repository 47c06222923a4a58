// SHA-256 (FIPS 180-4) of a byte string, through OpenSSL's EVP interface. Pure function; safe to
// call from any thread; never suspends.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace xb::crypto {

inline constexpr size_t kSha256Bytes = 32;

using Sha256Digest = std::array<uint8_t, kSha256Bytes>;

// The 32-byte digest of `data`. OpenSSL failing to hash (out of memory) is a broken invariant and
// aborts (XB_CHECK); there is no error return.
Sha256Digest Sha256(std::string_view data);

}  // namespace xb::crypto
