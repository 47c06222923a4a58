#include "auth/jwks.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "auth/base64url.h"
#include "auth/json.h"
#include "auth/jwt.h"

namespace xb::auth {

namespace json = boost::json;

namespace {

// A string member, or nullptr when it is absent or not a string.
const json::string* StringMember(const json::object& entry, std::string_view name) {
  const json::value* v = entry.if_contains(name);
  return v != nullptr ? v->if_string() : nullptr;
}

std::string_view View(const json::string& s) { return {s.data(), s.size()}; }

std::optional<std::string> DecodedMember(const json::object& entry, std::string_view name) {
  const json::string* s = StringMember(entry, name);
  if (s == nullptr) {
    return std::nullopt;
  }
  return DecodeBase64Url(View(*s));
}

// One entry as a usable key, or nullopt to skip it (AUTH-016).
std::optional<Key> UsableKey(const json::value& value) {
  const json::object* entry = value.if_object();
  if (entry == nullptr) {
    return std::nullopt;
  }
  const json::string* alg_name = StringMember(*entry, "alg");
  if (alg_name == nullptr) {
    return std::nullopt;
  }
  std::optional<Alg> alg = AlgFromName(View(*alg_name));
  if (!alg) {
    return std::nullopt;
  }
  if (const json::value* use = entry->if_contains("use")) {
    const json::string* s = use->if_string();
    if (s == nullptr || View(*s) != "sig") {
      return std::nullopt;
    }
  }
  Key key;
  key.alg = *alg;
  if (const json::value* kid = entry->if_contains("kid")) {
    const json::string* s = kid->if_string();
    if (s == nullptr || s->size() > kMaxKidBytes) {
      return std::nullopt;
    }
    key.kid.emplace(View(*s));
  }
  const json::string* kty = StringMember(*entry, "kty");
  const json::string* crv = StringMember(*entry, "crv");
  if (kty == nullptr) {
    return std::nullopt;
  }
  Result<std::unique_ptr<VerifyKey>> made = InvalidArgument("kty does not fit alg");
  switch (*alg) {
    case Alg::kRs256:
    case Alg::kRs384:
    case Alg::kRs512: {
      auto n = DecodedMember(*entry, "n");
      auto e = DecodedMember(*entry, "e");
      if (View(*kty) == "RSA" && n && e) {
        made = VerifyKey::FromRsa(*alg, *n, *e);
      }
      break;
    }
    case Alg::kEs256:
    case Alg::kEs384: {
      const std::string_view want = *alg == Alg::kEs256 ? "P-256" : "P-384";
      auto x = DecodedMember(*entry, "x");
      auto y = DecodedMember(*entry, "y");
      if (View(*kty) == "EC" && crv != nullptr && View(*crv) == want && x && y) {
        made = VerifyKey::FromEcPoint(*alg, *x, *y);
      }
      break;
    }
    case Alg::kEdDsa: {
      auto x = DecodedMember(*entry, "x");
      if (View(*kty) == "OKP" && crv != nullptr && View(*crv) == "Ed25519" && x) {
        made = VerifyKey::FromEd25519(*x);
      }
      break;
    }
  }
  if (!made.ok()) {
    return std::nullopt;  // undecodable material skips the entry (AUTH 12 point 8)
  }
  key.key = std::shared_ptr<const VerifyKey>(std::move(made).value());
  return key;
}

}  // namespace

// implements: AUTH-016, AUTH-033 (key count), AUTH-018 (no usable entry = failed fetch)
Result<std::vector<Key>> ParseJwks(std::string_view body, const std::function<void()>& on_skipped) {
  if (body.size() > kMaxJwksBodyBytes) {
    return InvalidArgument("the JWKS document is too large");
  }
  std::optional<json::object> document = ParseJsonObject(body);
  if (!document) {
    return InvalidArgument("the JWKS document is not a JSON object");
  }
  const json::value* keys_value = document->if_contains("keys");
  const json::array* entries = keys_value != nullptr ? keys_value->if_array() : nullptr;
  if (entries == nullptr) {
    return InvalidArgument("the JWKS document has no keys array");
  }
  std::vector<Key> keys;
  size_t examined = 0;
  for (const json::value& entry : *entries) {
    if (keys.size() == kMaxUsableKeys || examined == kMaxExaminedEntries) {
      break;
    }
    ++examined;
    std::optional<Key> key = UsableKey(entry);
    if (!key) {
      if (on_skipped) {
        on_skipped();
      }
      continue;
    }
    keys.push_back(std::move(*key));
  }
  if (keys.empty()) {
    return InvalidArgument("the JWKS document has no usable key");
  }
  return keys;
}

}  // namespace xb::auth
