#include "crypto/ed25519ph.h"

#include <sodium.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "base/check.h"

namespace xb::crypto {
namespace {

constexpr size_t kPoint = crypto_core_ed25519_BYTES;         // 32
constexpr size_t kScalar = crypto_core_ed25519_SCALARBYTES;  // 32

// The group order L, little-endian.
constexpr uint8_t kOrder[kScalar] = {
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10};

// The neutral element's encoding (x = 0, y = 1).
constexpr uint8_t kIdentity[kPoint] = {1};

void InitOnce() {
  static const bool ready = [] { return sodium_init() >= 0; }();
  XB_CHECK(ready);
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// Little-endian compare: a < L.
bool LessThanOrder(const unsigned char* a) {
  for (size_t i = kScalar; i-- > 0;) {
    if (a[i] != kOrder[i]) {
      return a[i] < kOrder[i];
    }
  }
  return false;
}

bool IsZero(const unsigned char* a, size_t n) {
  unsigned char acc = 0;
  for (size_t i = 0; i < n; ++i) {
    acc |= a[i];
  }
  return acc == 0;
}

// [k]P by double-and-add over crypto_core_ed25519_add, which accepts every decodable point
// (small-order and non-canonical encodings included). Only used where the constant-time
// scalarmult refuses its input; slow but exact.
bool GenericMultiply(unsigned char out[kPoint], const unsigned char k[kScalar],
                     const unsigned char p[kPoint]) {
  unsigned char acc[kPoint];
  std::memcpy(acc, kIdentity, kPoint);
  for (size_t bit = 256; bit-- > 0;) {
    if (crypto_core_ed25519_add(acc, acc, acc) != 0) {
      return false;
    }
    if ((k[bit / 8] >> (bit % 8)) & 1) {
      if (crypto_core_ed25519_add(acc, acc, p) != 0) {
        return false;
      }
    }
  }
  std::memcpy(out, acc, kPoint);
  return true;
}

}  // namespace

bool Ed25519PointDecodes(std::string_view public_key) {
  InitOnce();
  if (public_key.size() != kPoint) {
    return false;
  }
  // Adding the neutral element decodes the point and checks it is on the curve, without the
  // small-order and canonical-encoding refusals of crypto_core_ed25519_is_valid_point.
  unsigned char sum[kPoint];
  return crypto_core_ed25519_add(sum, Bytes(public_key), kIdentity) == 0;
}

// implements: VALIDATION.md 5.5.2 (Ed25519ph with context, cofactorless, not strict)
bool Ed25519phVerify(std::string_view public_key, std::string_view message,
                     std::string_view context, std::string_view signature) {
  InitOnce();
  if (public_key.size() != kPoint || signature.size() != 64 || context.size() > 255 ||
      !Ed25519PointDecodes(public_key)) {
    return false;
  }
  const unsigned char* r = Bytes(signature);
  const unsigned char* s = r + kPoint;
  if (!LessThanOrder(s)) {
    return false;
  }
  unsigned char ph[crypto_hash_sha512_BYTES];
  crypto_hash_sha512(ph, Bytes(message), message.size());

  static constexpr std::string_view kDom2 = "SigEd25519 no Ed25519 collisions";
  crypto_hash_sha512_state st;
  crypto_hash_sha512_init(&st);
  crypto_hash_sha512_update(&st, Bytes(kDom2), kDom2.size());
  const unsigned char flags[2] = {1, static_cast<unsigned char>(context.size())};
  crypto_hash_sha512_update(&st, flags, sizeof(flags));
  crypto_hash_sha512_update(&st, Bytes(context), context.size());
  crypto_hash_sha512_update(&st, r, kPoint);
  crypto_hash_sha512_update(&st, Bytes(public_key), kPoint);
  crypto_hash_sha512_update(&st, ph, sizeof(ph));
  unsigned char wide[crypto_hash_sha512_BYTES];
  crypto_hash_sha512_final(&st, wide);
  unsigned char k[kScalar];
  crypto_core_ed25519_scalar_reduce(k, wide);

  // [S]B (S < L, so it is the identity only for S = 0).
  unsigned char sb[kPoint];
  if (IsZero(s, kScalar)) {
    std::memcpy(sb, kIdentity, kPoint);
  } else if (crypto_scalarmult_ed25519_base_noclamp(sb, s) != 0) {
    return false;
  }
  // [k]A: libsodium's scalarmult refuses small-order or non-canonical A and an identity result;
  // those inputs take the exact generic path.
  unsigned char ka[kPoint];
  if (IsZero(k, kScalar)) {
    std::memcpy(ka, kIdentity, kPoint);
  } else if (crypto_scalarmult_ed25519_noclamp(ka, k, Bytes(public_key)) != 0 &&
             !GenericMultiply(ka, k, Bytes(public_key))) {
    return false;
  }
  unsigned char check[kPoint];
  if (crypto_core_ed25519_sub(check, sb, ka) != 0) {
    return false;
  }
  return std::memcmp(check, r, kPoint) == 0;
}

}  // namespace xb::crypto
