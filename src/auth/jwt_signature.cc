#include "auth/jwt_signature.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <string>

namespace xb::auth {

namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

struct BnFree {
  void operator()(BIGNUM* p) const { BN_free(p); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};

struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};

struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* p) const { OSSL_PARAM_BLD_free(p); }
};

struct ParamFree {
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};

struct EcdsaSigFree {
  void operator()(ECDSA_SIG* p) const { ECDSA_SIG_free(p); }
};

const EVP_MD* DigestOf(Alg alg) {
  switch (alg) {
    case Alg::kRs256:
    case Alg::kEs256:
      return EVP_sha256();
    case Alg::kRs384:
    case Alg::kEs384:
      return EVP_sha384();
    case Alg::kRs512:
      return EVP_sha512();
    case Alg::kEdDsa:
      return nullptr;  // Ed25519 hashes internally
  }
  return nullptr;
}

// The EC group name OpenSSL reports for the curve `alg` needs.
const char* CurveOf(Alg alg) { return alg == Alg::kEs256 ? "prime256v1" : "secp384r1"; }
size_t CoordinateBytes(Alg alg) { return alg == Alg::kEs256 ? 32 : 48; }

bool IsRsa(Alg alg) { return alg == Alg::kRs256 || alg == Alg::kRs384 || alg == Alg::kRs512; }
bool IsEc(Alg alg) { return alg == Alg::kEs256 || alg == Alg::kEs384; }

// Whether `pkey` is the key type `alg` needs (AUTH section 5.1).
bool KeyFitsAlg(EVP_PKEY* pkey, Alg alg) {
  const int id = EVP_PKEY_get_base_id(pkey);
  if (IsRsa(alg)) {
    return id == EVP_PKEY_RSA;
  }
  if (alg == Alg::kEdDsa) {
    return id == EVP_PKEY_ED25519;
  }
  if (id != EVP_PKEY_EC) {
    return false;
  }
  char group[64] = {};
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                     &len) != 1) {
    return false;
  }
  return std::string_view(group, len) == CurveOf(alg);
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// The DER ECDSA-Sig-Value of a JWS R||S signature, or empty when it has the wrong length.
std::string EcdsaDer(Alg alg, std::string_view signature) {
  const size_t n = CoordinateBytes(alg);
  if (signature.size() != 2 * n) {
    return {};
  }
  std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(Bytes(signature), static_cast<int>(n), nullptr);
  BIGNUM* s = BN_bin2bn(Bytes(signature) + n, static_cast<int>(n), nullptr);
  if (!sig || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return {};
  }
  const int der_len = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (der_len <= 0) {
    return {};
  }
  std::string der(static_cast<size_t>(der_len), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_ECDSA_SIG(sig.get(), &out) != der_len) {
    return {};
  }
  return der;
}

Status BadKey() { return InvalidArgument("key material does not decode"); }

}  // namespace

struct VerifyKey::Pkey {
  PkeyPtr key;
};

std::optional<Alg> AlgFromName(std::string_view name) {
  if (name == "RS256") return Alg::kRs256;
  if (name == "RS384") return Alg::kRs384;
  if (name == "RS512") return Alg::kRs512;
  if (name == "ES256") return Alg::kEs256;
  if (name == "ES384") return Alg::kEs384;
  if (name == "EdDSA") return Alg::kEdDsa;
  return std::nullopt;
}

std::string_view AlgName(Alg alg) {
  switch (alg) {
    case Alg::kRs256:
      return "RS256";
    case Alg::kRs384:
      return "RS384";
    case Alg::kRs512:
      return "RS512";
    case Alg::kEs256:
      return "ES256";
    case Alg::kEs384:
      return "ES384";
    case Alg::kEdDsa:
      return "EdDSA";
  }
  return "";
}

VerifyKey::VerifyKey(Alg alg, std::unique_ptr<Pkey> pkey) : alg_(alg), pkey_(std::move(pkey)) {}
VerifyKey::~VerifyKey() = default;

Result<std::unique_ptr<VerifyKey>> VerifyKey::FromPem(Alg alg, std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  if (!bio) {
    return BadKey();
  }
  PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return InvalidArgument("public_key is not a PEM SubjectPublicKeyInfo");
  }
  if (!KeyFitsAlg(key.get(), alg)) {
    return InvalidArgument("public_key is not the key type alg needs");
  }
  return std::unique_ptr<VerifyKey>(
      new VerifyKey(alg, std::make_unique<Pkey>(Pkey{std::move(key)})));
}

Result<std::unique_ptr<VerifyKey>> VerifyKey::FromRsa(Alg alg, std::string_view n,
                                                      std::string_view e) {
  if (!IsRsa(alg) || n.empty() || e.empty()) {
    return BadKey();
  }
  BnPtr bn_n(BN_bin2bn(Bytes(n), static_cast<int>(n.size()), nullptr));
  BnPtr bn_e(BN_bin2bn(Bytes(e), static_cast<int>(e.size()), nullptr));
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bn_n || !bn_e || !bld || BN_is_zero(bn_n.get()) || BN_is_zero(bn_e.get()) ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1) {
    return BadKey();
  }
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return BadKey();
  }
  PkeyPtr key(raw);
  return std::unique_ptr<VerifyKey>(
      new VerifyKey(alg, std::make_unique<Pkey>(Pkey{std::move(key)})));
}

Result<std::unique_ptr<VerifyKey>> VerifyKey::FromEcPoint(Alg alg, std::string_view x,
                                                          std::string_view y) {
  if (!IsEc(alg) || x.size() != CoordinateBytes(alg) || y.size() != CoordinateBytes(alg)) {
    return BadKey();
  }
  std::string point;
  point.reserve(1 + x.size() + y.size());
  point.push_back('\x04');  // uncompressed (SEC 1 section 2.3.3)
  point.append(x);
  point.append(y);
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, CurveOf(alg), 0) !=
          1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    return BadKey();
  }
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return BadKey();
  }
  PkeyPtr key(raw);
  // The point must lie on the curve (a point off it could leak through invalid-curve tricks).
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> check(
      EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) {
    return BadKey();
  }
  return std::unique_ptr<VerifyKey>(
      new VerifyKey(alg, std::make_unique<Pkey>(Pkey{std::move(key)})));
}

Result<std::unique_ptr<VerifyKey>> VerifyKey::FromEd25519(std::string_view x) {
  if (x.size() != 32) {
    return BadKey();
  }
  PkeyPtr key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, Bytes(x), x.size()));
  if (!key) {
    return BadKey();
  }
  return std::unique_ptr<VerifyKey>(
      new VerifyKey(Alg::kEdDsa, std::make_unique<Pkey>(Pkey{std::move(key)})));
}

bool VerifyKey::Verify(std::string_view signing_input, std::string_view signature) const {
  std::string der;
  std::string_view sig = signature;
  if (IsEc(alg_)) {
    der = EcdsaDer(alg_, signature);
    if (der.empty()) {
      return false;
    }
    sig = der;
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx ||
      EVP_DigestVerifyInit(ctx.get(), nullptr, DigestOf(alg_), nullptr, pkey_->key.get()) != 1) {
    return false;
  }
  // RSA keys default to PKCS#1 v1.5 padding (RS*, RFC 7518 section 3.3).
  return EVP_DigestVerify(ctx.get(), Bytes(sig), sig.size(), Bytes(signing_input),
                          signing_input.size()) == 1;
}

}  // namespace xb::auth
