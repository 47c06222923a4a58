// HMAC-SHA256 (RFC 2104 with FIPS 180-4), through OpenSSL. Pure function; any thread; never
// suspends.
#pragma once

#include <string_view>

#include "crypto/sha256.h"

namespace xb::crypto {

// The 32-byte MAC of `data` under `key` (any length). OpenSSL failing (out of memory) is a broken
// invariant and aborts; there is no error return.
Sha256Digest HmacSha256(std::string_view key, std::string_view data);

// The digest as the bytes of a string (a key for the next HMAC of a chain).
inline std::string_view AsBytes(const Sha256Digest& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

}  // namespace xb::crypto
