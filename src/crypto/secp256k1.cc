#include "crypto/secp256k1.h"

#include <secp256k1.h>
#include <secp256k1_recovery.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "crypto/keccak256.h"

namespace xb::crypto {
namespace {

// n / 2 for the secp256k1 group order n, big-endian: s above it is "high".
constexpr uint8_t kHalfOrder[32] = {
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0};

// A read-only context, created once; libsecp256k1 allows concurrent use of a context that is
// never mutated after creation.
const secp256k1_context* Context() {
  static const secp256k1_context* const context = [] {
    secp256k1_context* c = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    XB_CHECK(c != nullptr);
    return c;
  }();
  return context;
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

std::string EthereumAddressOf(std::string_view public_key_xy) {
  static constexpr char kHex[] = "0123456789abcdef";
  const Keccak256Digest digest = Keccak256(public_key_xy);
  std::string out = "0x";
  for (size_t i = 12; i < digest.size(); ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

// implements: VALIDATION.md 5.5.1 (ERC-191 recovery, both halves of s accepted)
std::optional<EthereumSigner> RecoverEthereumSigner(std::string_view digest,
                                                    std::string_view signature) {
  if (digest.size() != 32 || signature.size() != 65) {
    return std::nullopt;
  }
  const auto v = static_cast<uint8_t>(signature[64]);
  int parity = 0;
  if (v == 0 || v == 1) {
    parity = v;
  } else if (v == 27 || v == 28) {
    parity = v - 27;
  } else {
    return std::nullopt;
  }
  unsigned char r[32];
  unsigned char s[32];
  std::memcpy(r, signature.data(), 32);
  std::memcpy(s, signature.data() + 32, 32);
  // r and s in [1, n-1]: exactly the range of a valid secret key.
  if (secp256k1_ec_seckey_verify(Context(), r) != 1 ||
      secp256k1_ec_seckey_verify(Context(), s) != 1) {
    return std::nullopt;
  }
  if (std::lexicographical_compare(std::begin(kHalfOrder), std::end(kHalfOrder), std::begin(s),
                                   std::end(s))) {
    XB_CHECK(secp256k1_ec_seckey_negate(Context(), s) == 1);  // s := n - s
    parity ^= 1;
  }
  unsigned char compact[64];
  std::memcpy(compact, r, 32);
  std::memcpy(compact + 32, s, 32);
  secp256k1_ecdsa_recoverable_signature sig;
  if (secp256k1_ecdsa_recoverable_signature_parse_compact(Context(), &sig, compact, parity) != 1) {
    return std::nullopt;
  }
  secp256k1_pubkey pubkey;
  if (secp256k1_ecdsa_recover(Context(), &pubkey, &sig, Bytes(digest)) != 1) {
    return std::nullopt;
  }
  unsigned char uncompressed[65];
  size_t len = sizeof(uncompressed);
  XB_CHECK(secp256k1_ec_pubkey_serialize(Context(), uncompressed, &len, &pubkey,
                                         SECP256K1_EC_UNCOMPRESSED) == 1);
  EthereumSigner out;
  out.address =
      EthereumAddressOf(std::string_view(reinterpret_cast<const char*>(uncompressed + 1), 64));
  std::memcpy(out.canonical_rsv.data(), compact, 64);
  out.canonical_rsv[64] = static_cast<uint8_t>(parity);
  return out;
}

std::optional<std::string> EthereumAddressOfPrivateKey(std::string_view private_key) {
  if (private_key.size() != 32 || secp256k1_ec_seckey_verify(Context(), Bytes(private_key)) != 1) {
    return std::nullopt;
  }
  secp256k1_pubkey pubkey;
  if (secp256k1_ec_pubkey_create(Context(), &pubkey, Bytes(private_key)) != 1) {
    return std::nullopt;
  }
  unsigned char uncompressed[65];
  size_t len = sizeof(uncompressed);
  XB_CHECK(secp256k1_ec_pubkey_serialize(Context(), uncompressed, &len, &pubkey,
                                         SECP256K1_EC_UNCOMPRESSED) == 1);
  return EthereumAddressOf(std::string_view(reinterpret_cast<const char*>(uncompressed + 1), 64));
}

}  // namespace xb::crypto
