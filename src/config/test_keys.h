// Throwaway keys for the config tests, generated once per process with OpenSSL (not part of
// xb_config).
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <string>

namespace xb::config::testing {

enum class TestKey { kRsa, kEcP256, kEcP384, kEd25519, kEcP521 };

inline EVP_PKEY* GenerateKey(TestKey kind) {
  switch (kind) {
    case TestKey::kRsa:
      return EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024));
    case TestKey::kEcP256:
      return EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    case TestKey::kEcP384:
      return EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384");
    case TestKey::kEcP521:
      return EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521");
    case TestKey::kEd25519:
      return EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  }
  return nullptr;
}

inline std::string BioText(BIO* bio) {
  char* data = nullptr;
  long length = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(length));
  BIO_free(bio);
  return text;
}

struct KeyPems {
  std::string public_pem;  // PEM "PUBLIC KEY" (SubjectPublicKeyInfo)
  std::string pkcs8_pem;   // PEM "PRIVATE KEY" (unencrypted PKCS#8)
  std::string legacy_pem;  // the traditional form ("EC PRIVATE KEY" / "RSA PRIVATE KEY")
};

inline KeyPems MakeKeyPems(TestKey kind) {
  EVP_PKEY* key = GenerateKey(kind);
  KeyPems pems;
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(pub, key);
  pems.public_pem = BioText(pub);
  BIO* priv = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(priv, key, nullptr, nullptr, 0, nullptr, nullptr);
  pems.pkcs8_pem = BioText(priv);
  BIO* legacy = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey_traditional(legacy, key, nullptr, nullptr, 0, nullptr, nullptr);
  pems.legacy_pem = BioText(legacy);
  EVP_PKEY_free(key);
  return pems;
}

// One key of each kind per process (RSA generation is the slow part).
inline const KeyPems& Pems(TestKey kind) {
  static const KeyPems kRsa = MakeKeyPems(TestKey::kRsa);
  static const KeyPems kP256 = MakeKeyPems(TestKey::kEcP256);
  static const KeyPems kP384 = MakeKeyPems(TestKey::kEcP384);
  static const KeyPems kP521 = MakeKeyPems(TestKey::kEcP521);
  static const KeyPems kEd = MakeKeyPems(TestKey::kEd25519);
  switch (kind) {
    case TestKey::kRsa:
      return kRsa;
    case TestKey::kEcP256:
      return kP256;
    case TestKey::kEcP384:
      return kP384;
    case TestKey::kEcP521:
      return kP521;
    case TestKey::kEd25519:
      return kEd;
  }
  return kRsa;
}

// `text` as a TOML multi-line literal string ('''...'''), which PEM text fits as is.
inline std::string TomlLiteral(const std::string& text) { return "'''\n" + text + "'''"; }

}  // namespace xb::config::testing
