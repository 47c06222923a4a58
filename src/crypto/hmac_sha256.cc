#include "crypto/hmac_sha256.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>

#include "base/check.h"

namespace xb::crypto {
namespace {

// Fetched once: the one-shot HMAC() looks the implementation up and allocates a context on every
// call, which costs more than the MAC of a short string (a presign chains five of them).
EVP_MAC* HmacImplementation() {
  static EVP_MAC* const mac = [] {
    EVP_MAC* fetched = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    XB_CHECK(fetched != nullptr);
    return fetched;  // kept for the life of the process
  }();
  return mac;
}

struct MacCtxFree {
  void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

// The digest is set once per context: naming it at every EVP_MAC_init looks SHA-256 up in the
// provider store again, under a lock shared by every thread.
EVP_MAC_CTX* NewSha256MacContext() {
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(HmacImplementation());
  XB_CHECK(ctx != nullptr);
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  XB_CHECK(EVP_MAC_CTX_set_params(ctx, params) == 1);
  return ctx;
}

}  // namespace

Sha256Digest HmacSha256(std::string_view key, std::string_view data) {
  // One context per thread, re-keyed by each EVP_MAC_init.
  thread_local const std::unique_ptr<EVP_MAC_CTX, MacCtxFree> ctx(NewSha256MacContext());
  // An empty key is valid HMAC; OpenSSL wants a non-null pointer for it.
  static constexpr unsigned char kNoKey[1] = {0};
  const auto* key_bytes = key.empty() ? kNoKey : reinterpret_cast<const unsigned char*>(key.data());
  Sha256Digest mac{};
  size_t size = 0;
  const bool ok = EVP_MAC_init(ctx.get(), key_bytes, key.size(), nullptr) == 1 &&
                  EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(data.data()),
                                 data.size()) == 1 &&
                  EVP_MAC_final(ctx.get(), mac.data(), &size, mac.size()) == 1;
  XB_CHECK(ok && size == kSha256Bytes);
  return mac;
}

}  // namespace xb::crypto
