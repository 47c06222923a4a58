// Ed25519ph with a context string (RFC 8032 section 5.1, phflag 1), the installation-key
// signature of identity updates (VALIDATION.md 5.5.2). OpenSSL 3.0 has no Ed25519ph and
// libsodium's crypto_sign_ed25519ph_* takes no context, so the verification equation is computed
// here from libsodium's group operations (Debian libsodium-dev). Pure-Ed25519 key-package
// signatures are crypto/ed25519.h, not this file. Any thread; never suspends.
#pragma once

#include <string_view>

namespace xb::crypto {

// True iff `public_key` (32 bytes) is an encoding that decompresses to a curve point
// (small-order and mixed-order points included).
bool Ed25519PointDecodes(std::string_view public_key);

// RFC 8032 Ed25519ph verification: PH = SHA-512(message);
// k = SHA-512(dom2(1, context) || R || A || PH) mod L; true iff `signature` is 64 bytes,
// `public_key` 32 bytes that decode, S < L, and the encoding of [S]B - [k]A equals R
// (cofactorless; small-order A and R are not rejected). `context` is at most 255 bytes.
bool Ed25519phVerify(std::string_view public_key, std::string_view message,
                     std::string_view context, std::string_view signature);

}  // namespace xb::crypto
