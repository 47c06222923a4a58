// Ed25519 signature verification (RFC 8032 section 5.1, "pure" Ed25519: no prehash, no context),
// through OpenSSL's EVP interface. Pure function; safe to call from any thread; never suspends.
#pragma once

#include <cstddef>
#include <string_view>

namespace xb::crypto {

inline constexpr size_t kEd25519PublicKeyBytes = 32;
inline constexpr size_t kEd25519SignatureBytes = 64;

// True iff `signature` (64 bytes) is a valid Ed25519 (RFC 8032, pure) signature of `message` under
// `public_key` (32 bytes). Wrong sizes, a public key that is not a curve point, or a signature
// whose S is not below the group order return false. Thread-safe, never suspends.
bool Ed25519Verify(std::string_view public_key, std::string_view message,
                   std::string_view signature);

}  // namespace xb::crypto
