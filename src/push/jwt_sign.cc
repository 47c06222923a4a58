#include "push/jwt_sign.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/encoding.h"
#include "push/body.h"

namespace xb::push {

std::string Base64Url(std::string_view bytes) {
  std::string out = Base64(bytes);
  while (!out.empty() && out.back() == '=') {
    out.pop_back();
  }
  for (char& c : out) {
    c = c == '+' ? '-' : (c == '/' ? '_' : c);
  }
  return out;
}

namespace {

bool IsP256(EVP_PKEY* key) {
  if (EVP_PKEY_base_id(key) != EVP_PKEY_EC) {
    return false;
  }
  char group[64] = {};
  size_t size = 0;
  return EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, &size) == 1 &&
         std::string_view(group, size) == "prime256v1";
}

// DER ECDSA-Sig-Value -> raw r || s, 32 bytes each.
Result<std::string> DerToRaw(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) {
    return Internal("the signature cannot be encoded");
  }
  std::string raw(64, '\0');
  auto* out = reinterpret_cast<unsigned char*>(raw.data());
  const bool ok = BN_bn2binpad(ECDSA_SIG_get0_r(sig), out, 32) == 32 &&
                  BN_bn2binpad(ECDSA_SIG_get0_s(sig), out + 32, 32) == 32;
  ECDSA_SIG_free(sig);
  if (!ok) {
    return Internal("the signature cannot be encoded");
  }
  return raw;
}

}  // namespace

Expected<std::unique_ptr<SigningKey>, std::string> SigningKey::FromPem(std::string_view pem,
                                                                       JwtAlgorithm algorithm) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) {
    return std::string("the key cannot be read");
  }
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) {
    return std::string("the key is not a PEM private key");
  }
  const bool fits =
      algorithm == JwtAlgorithm::kEs256 ? IsP256(key) : EVP_PKEY_base_id(key) == EVP_PKEY_RSA;
  if (!fits) {
    EVP_PKEY_free(key);
    return std::string("the key is not of the algorithm's type");
  }
  return std::unique_ptr<SigningKey>(new SigningKey(key, algorithm));
}

SigningKey::~SigningKey() { EVP_PKEY_free(key_); }

Result<std::string> SigningKey::SignJwt(std::string_view header_json,
                                        std::string_view claims_json) const {
  const std::string input = Base64Url(header_json) + "." + Base64Url(claims_json);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t size = 0;
  std::string signature;
  bool ok = ctx != nullptr && EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_) == 1 &&
            EVP_DigestSign(ctx, nullptr, &size,
                           reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  if (ok) {
    signature.resize(size);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &size,
                        reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
    signature.resize(size);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    return Internal("the token cannot be signed");
  }
  if (algorithm_ == JwtAlgorithm::kEs256) {
    XB_TRY(signature, DerToRaw(signature));
  }
  return input + "." + Base64Url(signature);
}

}  // namespace xb::push
