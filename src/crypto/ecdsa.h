// ECDSA signature verification over the NIST prime curves (FIPS 186-4; SEC1 point encodings),
// through OpenSSL's EVP interface. Used for MLS ciphersuites 2, 5 and 7 (RFC 9420 section 5.1.1)
// and for WebAuthn passkeys. Pure function; safe to call from any thread; never suspends.
#pragma once

#include <string_view>

namespace xb::crypto {

enum class EcCurve { kP256, kP384, kP521 };
enum class EcSignatureEncoding { kDer, kRaw };  // kRaw = r || s, each the curve's byte width

// True iff `signature` is a valid ECDSA signature of `message` hashed with SHA-256 / SHA-384 /
// SHA-512 for P-256 / P-384 / P-521, under `public_key` (SEC1 point, uncompressed 0x04||X||Y or
// compressed 0x02/0x03||X). Any malformed input returns false: a point not on the curve, the point
// at infinity, a length that does not match the curve, DER that is not strict (trailing bytes,
// non-minimal integers), or a raw signature that is not exactly twice the curve's byte width.
bool EcdsaVerify(EcCurve curve, std::string_view public_key, std::string_view message,
                 std::string_view signature, EcSignatureEncoding encoding);

}  // namespace xb::crypto
