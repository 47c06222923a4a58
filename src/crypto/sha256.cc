#include "crypto/sha256.h"

#include <openssl/evp.h>

#include <memory>

#include "base/check.h"

namespace xb::crypto {
namespace {

// Fetched once: EVP_sha256() with EVP_Digest would look the implementation up in the provider
// store and allocate a context on every call, which costs more than hashing a short token.
const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    XB_CHECK(fetched != nullptr);
    return fetched;  // kept for the life of the process
  }();
  return md;
}

struct CtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

}  // namespace

Sha256Digest Sha256(std::string_view data) {
  // One context per thread, reset by each EVP_DigestInit_ex2.
  thread_local const std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  Sha256Digest digest{};
  unsigned int size = 0;
  // Failures mean OpenSSL could not allocate, which we treat as fatal rather than hashing to a
  // wrong value.
  XB_CHECK(ctx != nullptr);
  const bool ok = EVP_DigestInit_ex2(ctx.get(), Sha256Md(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx.get(), data.data(), data.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) == 1;
  XB_CHECK(ok && size == kSha256Bytes);
  return digest;
}

}  // namespace xb::crypto
