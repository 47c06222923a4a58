#include "config/key_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <memory>

namespace xb::config {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct Pkcs8Free {
  void operator()(PKCS8_PRIV_KEY_INFO* info) const { PKCS8_PRIV_KEY_INFO_free(info); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Pkcs8Ptr = std::unique_ptr<PKCS8_PRIV_KEY_INFO, Pkcs8Free>;

BioPtr MemoryBio(std::string_view pem) {
  if (pem.size() > INT_MAX) {
    return nullptr;
  }
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

KeyType TypeOf(EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
      return KeyType::kRsa;
    case EVP_PKEY_ED25519:
      return KeyType::kEd25519;
    case EVP_PKEY_EC: {
      char group[64];
      size_t length = 0;
      if (EVP_PKEY_get_group_name(key, group, sizeof(group), &length) != 1) {
        return KeyType::kOther;
      }
      int nid = OBJ_txt2nid(group);
      if (nid == NID_X9_62_prime256v1) {
        return KeyType::kEcP256;
      }
      if (nid == NID_secp384r1) {
        return KeyType::kEcP384;
      }
      return KeyType::kOther;
    }
    default:
      return KeyType::kOther;
  }
}

}  // namespace

Result<KeyType> PublicKeyTypeOfPem(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  PkeyPtr key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  // Leave nothing on this thread's OpenSSL error queue for unrelated code to trip over.
  ERR_clear_error();
  if (!key) {
    return InvalidArgument("not a PEM SubjectPublicKeyInfo (PUBLIC KEY) block");
  }
  return TypeOf(key.get());
}

Result<KeyType> PrivateKeyTypeOfPkcs8Pem(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  Pkcs8Ptr info(bio ? PEM_read_bio_PKCS8_PRIV_KEY_INFO(bio.get(), nullptr, nullptr, nullptr)
                    : nullptr);
  PkeyPtr key(info ? EVP_PKCS82PKEY(info.get()) : nullptr);
  ERR_clear_error();
  if (!key) {
    return InvalidArgument("not an unencrypted PKCS#8 PEM (PRIVATE KEY) block");
  }
  return TypeOf(key.get());
}

}  // namespace xb::config
