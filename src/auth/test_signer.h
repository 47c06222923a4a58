// Test-only: keys and JWS tokens made directly with OpenSSL, independent of VerifyKey, for the
// auth unit tests.
#pragma once

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <string>
#include <string_view>

#include "auth/jwt_signature.h"

namespace xb::auth::testing {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

inline std::string Base64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  auto b = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (bytes.size() - i == 1) {
    const uint32_t v = b(i) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (bytes.size() - i == 2) {
    const uint32_t v = (b(i) << 16) | (b(i + 1) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

inline Pkey Generate(Alg alg) {
  switch (alg) {
    case Alg::kRs256:
    case Alg::kRs384:
    case Alg::kRs512:
      return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048}));
    case Alg::kEs256:
      return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
    case Alg::kEs384:
      return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"));
    case Alg::kEdDsa:
      return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  }
  return nullptr;
}

inline std::string PublicPem(EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  PEM_write_bio_PUBKEY(bio.get(), key);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

inline std::string Sign(Alg alg, EVP_PKEY* key, std::string_view input) {
  const EVP_MD* md = nullptr;
  size_t coordinate = 0;
  switch (alg) {
    case Alg::kRs256:
      md = EVP_sha256();
      break;
    case Alg::kRs384:
      md = EVP_sha384();
      break;
    case Alg::kRs512:
      md = EVP_sha512();
      break;
    case Alg::kEs256:
      md = EVP_sha256();
      coordinate = 32;
      break;
    case Alg::kEs384:
      md = EVP_sha384();
      coordinate = 48;
      break;
    case Alg::kEdDsa:
      break;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestSignInit(ctx, nullptr, md, nullptr, key);
  size_t len = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  EVP_DigestSign(ctx, nullptr, &len, in, input.size());
  std::string sig(len, '\0');
  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len, in, input.size());
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  if (coordinate == 0) {
    return sig;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
  ECDSA_SIG* ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
  std::string out(2 * coordinate, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(ecdsa), reinterpret_cast<unsigned char*>(out.data()),
               static_cast<int>(coordinate));
  BN_bn2binpad(ECDSA_SIG_get0_s(ecdsa), reinterpret_cast<unsigned char*>(out.data()) + coordinate,
               static_cast<int>(coordinate));
  ECDSA_SIG_free(ecdsa);
  return out;
}

// A compact JWS with the given JSON header and claims texts.
inline std::string Token(Alg alg, EVP_PKEY* key, std::string_view header_json,
                         std::string_view claims_json) {
  const std::string input = Base64Url(header_json) + "." + Base64Url(claims_json);
  return input + "." + Base64Url(Sign(alg, key, input));
}

// JWK members of a public key, base64url.
inline std::string BigNum(EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  EVP_PKEY_get_bn_param(key, name, &bn);
  std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return Base64Url(out);
}

inline std::string Jwk(Alg alg, EVP_PKEY* key, std::string_view kid_member) {
  const std::string alg_member = "\"alg\":\"" + std::string(AlgName(alg)) + "\"";
  std::string prefix = "{" + alg_member + (kid_member.empty() ? "" : "," + std::string(kid_member));
  switch (alg) {
    case Alg::kRs256:
    case Alg::kRs384:
    case Alg::kRs512:
      return prefix + ",\"kty\":\"RSA\",\"n\":\"" + BigNum(key, OSSL_PKEY_PARAM_RSA_N) +
             "\",\"e\":\"" + BigNum(key, OSSL_PKEY_PARAM_RSA_E) + "\"}";
    case Alg::kEs256:
    case Alg::kEs384: {
      unsigned char point[200];
      size_t len = 0;
      EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof(point),
                                      &len);
      const size_t n = (len - 1) / 2;
      std::string_view bytes(reinterpret_cast<const char*>(point), len);
      return prefix + ",\"kty\":\"EC\",\"crv\":\"" + (alg == Alg::kEs256 ? "P-256" : "P-384") +
             "\",\"x\":\"" + Base64Url(bytes.substr(1, n)) + "\",\"y\":\"" +
             Base64Url(bytes.substr(1 + n, n)) + "\"}";
    }
    case Alg::kEdDsa: {
      unsigned char raw[32];
      size_t len = sizeof(raw);
      EVP_PKEY_get_raw_public_key(key, raw, &len);
      return prefix + ",\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"" +
             Base64Url(std::string_view(reinterpret_cast<const char*>(raw), len)) + "\"}";
    }
  }
  return {};
}

}  // namespace xb::auth::testing
