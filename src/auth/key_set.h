// The key set (AUTH section 7): the verification keys in force at one moment, and key selection
// (AUTH section 5.3). A KeySet is immutable once published; a refresh replaces it whole.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/jwt_signature.h"

namespace xb::auth {

struct Key {
  std::optional<std::string> kid;  // a JWKS entry may have none; inline keys always do
  Alg alg = Alg::kRs256;
  std::shared_ptr<const VerifyKey> key;
};

struct KeySet {
  std::vector<Key> keys;
  // Distinct for every set a process publishes; a cached verification names the set it was made
  // under, so a replaced set invalidates it (keys withdrawn by the provider stop verifying).
  uint64_t generation = 0;
};

// implements: AUTH-009. With a kid: the one key whose kid equals it byte for byte (a key without
// a kid never matches); without: the one key whose alg equals `alg`. nullptr when none or several
// match, or when the selected key's alg is not `alg`.
const Key* SelectKey(const KeySet& set, const std::optional<std::string>& kid, Alg alg);

}  // namespace xb::auth
