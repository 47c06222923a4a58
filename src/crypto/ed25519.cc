#include "crypto/ed25519.h"

#include <openssl/err.h>
#include <openssl/evp.h>

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

}  // namespace xb::crypto
