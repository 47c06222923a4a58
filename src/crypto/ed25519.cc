#include "crypto/ed25519.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

namespace xb::crypto {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

bool VerifyImpl(std::string_view public_key, std::string_view message, std::string_view signature) {
  if (public_key.size() != kEd25519PublicKeyBytes || signature.size() != kEd25519SignatureBytes) {
    return false;
  }
  // The raw-key constructor only copies the 32 bytes; decoding the point happens inside the verify
  // call, which fails (returns 0) for an encoding that is not on the curve.
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, Bytes(public_key), public_key.size()));
  if (key == nullptr) {
    return false;
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (ctx == nullptr) {
    return false;
  }
  // Ed25519 is a one-shot algorithm: no digest is named (RFC 8032 hashes internally with SHA-512),
  // and EVP_DigestVerify must be used rather than the Update/Final pair. OpenSSL rejects S >= L
  // (RFC 8032 section 5.1.7 step 1), so signatures are not malleable.
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1) {
    return false;
  }
  return EVP_DigestVerify(ctx.get(), Bytes(signature), signature.size(), Bytes(message),
                          message.size()) == 1;
}

}  // namespace

bool Ed25519Verify(std::string_view public_key, std::string_view message,
                   std::string_view signature) {
  const bool ok = VerifyImpl(public_key, message, signature);
  // A failed decode or verify leaves entries on this thread's OpenSSL error queue; drop them so the
  // queue does not grow and a later, unrelated OpenSSL call does not report a stale error.
  ERR_clear_error();
  return ok;
}

bool Ed25519IsSmallOrderEncoding(std::string_view encoding) {
  if (encoding.size() != kEd25519PublicKeyBytes) {
    return false;
  }
  // Little-endian y of every small-order point, with the x sign bit (bit 255) cleared: y = 0
  // (order 4), 1 (identity), p-1 (order 2), the two order-8 values, and the two encodings of
  // y >= p that reduce onto a small-order y (p -> 0, p+1 -> 1). Computed from the curve equation
  // (x^2 = (y^2-1)/(dy^2+1)) and checked by multiplying each point by 8; the same set as
  // libsodium's blocklist.
  static constexpr std::array<std::array<uint8_t, 32>, 7> kSmallOrderY = {{
      {0x00},
      {0x01},
      {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
      {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4,
       0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6,
       0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
      {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b,
       0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39,
       0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
      {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
      {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
  }};
  std::array<uint8_t, 32> y{};
  std::memcpy(y.data(), encoding.data(), y.size());
  y[31] &= 0x7f;
  for (const auto& small : kSmallOrderY) {
    if (y == small) {
      return true;
    }
  }
  return false;
}

bool Ed25519VerifyStrict(std::string_view public_key, std::string_view message,
                         std::string_view signature) {
  if (public_key.size() != kEd25519PublicKeyBytes || signature.size() != kEd25519SignatureBytes) {
    return false;
  }
  if (Ed25519IsSmallOrderEncoding(public_key) ||
      Ed25519IsSmallOrderEncoding(signature.substr(0, 32))) {
    return false;
  }
  return Ed25519Verify(public_key, message, signature);
}

}  // namespace xb::crypto
