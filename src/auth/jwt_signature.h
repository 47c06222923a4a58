// JWS signature verification for the six algorithms of AUTH section 5.1, through OpenSSL's EVP
// interface. A VerifyKey is one public key bound to one `alg`; it is immutable after creation and
// may verify from any number of threads at once (each call uses its own EVP_MD_CTX). Never
// suspends.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace xb::auth {

enum class Alg : uint8_t { kRs256, kRs384, kRs512, kEs256, kEs384, kEdDsa };

// The `alg` header value of the six accepted algorithms; nullopt for every other value (AUTH-008).
std::optional<Alg> AlgFromName(std::string_view name);
std::string_view AlgName(Alg alg);

class VerifyKey {
 public:
  ~VerifyKey();
  VerifyKey(const VerifyKey&) = delete;
  VerifyKey& operator=(const VerifyKey&) = delete;

  // A PEM "PUBLIC KEY" (SubjectPublicKeyInfo) of the type `alg` needs: RSA for RS*, EC P-256 for
  // ES256, EC P-384 for ES384, Ed25519 for EdDSA. Errors are fixed text, never the PEM.
  static Result<std::unique_ptr<VerifyKey>> FromPem(Alg alg, std::string_view pem);
  // JWK members (RFC 7518 section 6), already base64url-decoded: RSA modulus and exponent.
  static Result<std::unique_ptr<VerifyKey>> FromRsa(Alg alg, std::string_view n,
                                                    std::string_view e);
  // EC public point for ES256 (P-256, 32-byte coordinates) or ES384 (P-384, 48 bytes).
  static Result<std::unique_ptr<VerifyKey>> FromEcPoint(Alg alg, std::string_view x,
                                                        std::string_view y);
  // Ed25519 public key (32 bytes), for EdDSA.
  static Result<std::unique_ptr<VerifyKey>> FromEd25519(std::string_view x);

  Alg alg() const { return alg_; }

  // True when `signature` is a valid JWS signature of `alg()` over `signing_input` under this key.
  // ECDSA signatures are in the JWS R||S form (RFC 7518 section 3.4), exactly twice the
  // coordinate size.
  bool Verify(std::string_view signing_input, std::string_view signature) const;

 private:
  struct Pkey;
  VerifyKey(Alg alg, std::unique_ptr<Pkey> pkey);

  const Alg alg_;
  const std::unique_ptr<Pkey> pkey_;
};

}  // namespace xb::auth
