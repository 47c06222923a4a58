// Recognises the kind of key a PEM text holds, for the startup checks on inline JWT keys
// (AUTH-017) and push provider keys (PUSH section 12). Nothing here keeps key material: each call
// parses, reports the type and frees. Thread-safe (OpenSSL 3).
#pragma once

#include <string_view>

#include "base/status.h"

namespace xb::config {

enum class KeyType { kRsa, kEcP256, kEcP384, kEd25519, kOther };

// The type of the key in a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) block. Error when there is no
// such block or it does not decode. The message is fixed text, never the PEM.
Result<KeyType> PublicKeyTypeOfPem(std::string_view pem);

// The type of the key in an unencrypted PKCS#8 PEM "PRIVATE KEY" block. Error when there is no
// such block or it does not decode.
Result<KeyType> PrivateKeyTypeOfPkcs8Pem(std::string_view pem);

}  // namespace xb::config
