// Signing the two provider JWTs (PUSH.md 9.2 ES256, 9.3 RS256) with a PKCS#8 PEM private key.
// Errors are fixed plain words: never a key, a claim or a token. Pure; callable from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "base/status.h"

struct evp_pkey_st;

namespace xb::push {

// base64url without padding (RFC 7515 section 2).
std::string Base64Url(std::string_view bytes);

enum class JwtAlgorithm { kEs256, kRs256 };

// A loaded private key (EVP_PKEY), freed with the object.
class SigningKey {
 public:
  // The PEM must hold a P-256 EC key for kEs256, an RSA key for kRs256.
  static Expected<std::unique_ptr<SigningKey>, std::string> FromPem(std::string_view pem,
                                                                    JwtAlgorithm algorithm);
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;

  // b64url(header) "." b64url(claims) "." b64url(signature); ES256 signatures are raw R||S (64
  // bytes, RFC 7518 section 3.4), RS256 RSASSA-PKCS1-v1_5 with SHA-256.
  // Fails kInternal with fixed words.
  Result<std::string> SignJwt(std::string_view header_json, std::string_view claims_json) const;

 private:
  SigningKey(evp_pkey_st* key, JwtAlgorithm algorithm) : key_(key), algorithm_(algorithm) {}
  evp_pkey_st* const key_;
  const JwtAlgorithm algorithm_;
};

}  // namespace xb::push
