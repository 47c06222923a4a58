#include "crypto/sha256.h"

#include <openssl/evp.h>

#include "base/check.h"

namespace xb::crypto {

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest digest{};
  unsigned int size = 0;
  // EVP_Digest is the one-shot form: it creates and frees its own context. It fails only when
  // OpenSSL cannot allocate, which we treat as fatal rather than hashing to a wrong value.
  const int ok = EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  XB_CHECK(ok == 1 && size == kSha256Bytes);
  return digest;
}

}  // namespace xb::crypto
