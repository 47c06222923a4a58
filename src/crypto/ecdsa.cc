#include "crypto/ecdsa.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstddef>
#include <memory>
#include <string>

namespace xb::crypto {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* s) const { ECDSA_SIG_free(s); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
struct OpenSslFree {
  void operator()(unsigned char* p) const { OPENSSL_free(p); }
};

struct CurveInfo {
  const char* group_name;  // OpenSSL's name for the group
  size_t width;            // bytes in a field element / a scalar
  const EVP_MD* (*digest)();
};

CurveInfo Info(EcCurve curve) {
  switch (curve) {
    case EcCurve::kP256:
      return {"prime256v1", 32, &EVP_sha256};
    case EcCurve::kP384:
      return {"secp384r1", 48, &EVP_sha384};
    case EcCurve::kP521:
      return {"secp521r1", 66, &EVP_sha512};
  }
  return {"prime256v1", 32, &EVP_sha256};
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// SEC1 section 2.3.3: 0x04||X||Y or 0x02/0x03||X. The single byte 0x00 (the point at infinity),
// which OpenSSL's decoder would accept, and the hybrid forms 0x06/0x07 are refused here.
bool WellFormedPoint(std::string_view point, size_t width) {
  if (point.empty()) {
    return false;
  }
  const auto tag = static_cast<unsigned char>(point[0]);
  if (tag == 0x04) {
    return point.size() == 1 + 2 * width;
  }
  if (tag == 0x02 || tag == 0x03) {
    return point.size() == 1 + width;
  }
  return false;
}

// Builds the public key; OpenSSL decodes the point and refuses one that is not on the curve.
std::unique_ptr<EVP_PKEY, PkeyFree> PublicKey(const CurveInfo& info, std::string_view point) {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx.get()) != 1) {
    return nullptr;
  }
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
                                       const_cast<char*>(info.group_name), 0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, const_cast<char*>(point.data()),
                                        point.size()),
      OSSL_PARAM_construct_end(),
  };
  EVP_PKEY* raw = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params) != 1) {
    return nullptr;
  }
  return std::unique_ptr<EVP_PKEY, PkeyFree>(raw);
}

// r || s (each `width` bytes, big-endian) to the DER SEQUENCE OpenSSL verifies. Empty on failure.
std::string RawToDer(std::string_view raw, size_t width) {
  std::unique_ptr<BIGNUM, BnFree> r(BN_bin2bn(Bytes(raw), static_cast<int>(width), nullptr));
  std::unique_ptr<BIGNUM, BnFree> s(
      BN_bin2bn(Bytes(raw.substr(width)), static_cast<int>(width), nullptr));
  std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
  if (r == nullptr || s == nullptr || sig == nullptr) {
    return {};
  }
  if (ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) {
    return {};
  }
  r.release();  // now owned by sig
  s.release();
  unsigned char* der = nullptr;
  const int size = i2d_ECDSA_SIG(sig.get(), &der);
  if (size <= 0) {
    return {};
  }
  std::unique_ptr<unsigned char, OpenSslFree> owned(der);
  return std::string(reinterpret_cast<const char*>(der), static_cast<size_t>(size));
}

bool VerifyImpl(EcCurve curve, std::string_view public_key, std::string_view message,
                std::string_view signature, EcSignatureEncoding encoding) {
  const CurveInfo info = Info(curve);
  if (!WellFormedPoint(public_key, info.width)) {
    return false;
  }
  std::string der_storage;
  std::string_view der = signature;
  if (encoding == EcSignatureEncoding::kRaw) {
    if (signature.size() != 2 * info.width) {
      return false;
    }
    der_storage = RawToDer(signature, info.width);
    if (der_storage.empty()) {
      return false;
    }
    der = der_storage;
  }
  if (der.empty()) {
    return false;
  }
  auto key = PublicKey(info, public_key);
  if (key == nullptr) {
    return false;
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (ctx == nullptr) {
    return false;
  }
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, info.digest(), nullptr, key.get()) != 1) {
    return false;
  }
  // OpenSSL's ECDSA verify re-encodes the parsed signature and compares it with the input, so
  // BER-but-not-DER encodings and trailing garbage are refused; r and s outside [1, n-1] fail.
  return EVP_DigestVerify(ctx.get(), Bytes(der), der.size(), Bytes(message), message.size()) == 1;
}

}  // namespace

bool EcdsaVerify(EcCurve curve, std::string_view public_key, std::string_view message,
                 std::string_view signature, EcSignatureEncoding encoding) {
  const bool ok = VerifyImpl(curve, public_key, message, signature, encoding);
  // Failures leave entries on this thread's OpenSSL error queue; drop them (see ed25519.cc).
  ERR_clear_error();
  return ok;
}

}  // namespace xb::crypto
