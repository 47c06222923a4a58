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

// Ed25519Verify plus the "strict" rules of RFC 8032 implementations that refuse small-order
// points (VALIDATION.md 4.3, MLS signatures): false also when the public key or the signature's R
// encodes a point of order 1, 2, 4 or 8 (canonical or not, either x sign bit). Thread-safe, never
// suspends.
bool Ed25519VerifyStrict(std::string_view public_key, std::string_view message,
                         std::string_view signature);

// True iff the 32-byte `encoding` decodes to one of the eight small-order points of edwards25519
// (any sign bit; y read modulo 2^255-19, so the non-canonical y = p and y = p + 1 count too).
// False for any other size.
bool Ed25519IsSmallOrderEncoding(std::string_view encoding);

}  // namespace xb::crypto
