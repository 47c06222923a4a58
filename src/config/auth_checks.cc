// Section 3.2 of spec/CONF.md and AUTH.md sections 4 and 7: the [auth] checks, run only while
// auth.enabled is true (CONF-066).
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/url.h"
#include "config/checks.h"
#include "config/config_error.h"
#include "config/key_material.h"

namespace xb::config {
namespace {

constexpr size_t kMaxApiKeys = 256;
constexpr size_t kMinApiKeyBytes = 32;
constexpr size_t kMaxApiKeyBytes = 8192;
constexpr size_t kMaxKidBytes = 256;
constexpr uint64_t kMaxLeewaySeconds = 300;
constexpr uint64_t kNsPerSecond = 1000000000;

// ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ (DOC)
bool IsValidApiKeyName(std::string_view name) {
  auto alnum = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (name.empty() || name.size() > 64 || !alnum(name[0])) {
    return false;
  }
  for (char c : name) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// implements: AUTH-030. Errors name the key's name (a table key, never resolved), never its
// value.
Status CheckApiKeys(const std::map<std::string, std::string>& api_keys) {
  if (api_keys.size() > kMaxApiKeys) {
    return ConfigError("auth.api_keys", "more than 256 API keys");
  }
  std::map<std::string_view, std::string_view> name_by_value;
  for (const auto& [name, value] : api_keys) {
    std::string path = JoinKey("auth.api_keys", name);
    if (!IsValidApiKeyName(name)) {
      return ConfigError(path, "API key name must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$");
    }
    if (value.size() < kMinApiKeyBytes || value.size() > kMaxApiKeyBytes) {
      return ConfigError(path, "API key value must be 32 to 8192 bytes");
    }
    for (char c : value) {
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x21 || byte > 0x7E) {
        return ConfigError(path, "API key value must be printable ASCII without spaces");
      }
    }
    auto [it, inserted] = name_by_value.emplace(value, name);
    if (!inserted) {
      return ConfigError(
          path, "API key value equals the value of auth.api_keys." + std::string(it->second));
    }
  }
  return Status::Ok();
}

// implements: AUTH-015 (at startup): parses, has a host, and is https, or http to localhost or
// a loopback IP literal.
Status CheckJwksUrl(const std::string& jwks_url) {
  Result<Url> url = ParseUrl(jwks_url);
  bool ok = url.ok() && !url->host.empty() &&
            (EqualsIgnoreCase(url->scheme, "https") ||
             (EqualsIgnoreCase(url->scheme, "http") && IsLoopbackHost(*url)));
  if (!ok) {
    return ConfigError("auth.jwks_url",
                       "must be an https:// URL, or http:// to localhost or a loopback address");
  }
  return Status::Ok();
}

// How an inline key is named in an error: its index (in the key path) and its kid, unless the
// kid came from the environment (a resolved value never appears in an error, CONF 1.3).
std::string KidLabel(const ParsedDocument& doc, size_t index, const std::string& kid) {
  std::string kid_path = JoinIndex("auth.keys", index) + ".kid";
  if (doc.env_resolved.count(kid_path) != 0) {
    return "kid from the environment";
  }
  return "kid \"" + EscapeForMessage(kid) + "\"";
}

struct AlgRule {
  std::string_view alg;
  KeyType needs;
  std::string_view key_name;
};
constexpr AlgRule kAlgRules[] = {
    {"RS256", KeyType::kRsa, "an RSA"},         {"RS384", KeyType::kRsa, "an RSA"},
    {"RS512", KeyType::kRsa, "an RSA"},         {"ES256", KeyType::kEcP256, "an EC P-256"},
    {"ES384", KeyType::kEcP384, "an EC P-384"}, {"EdDSA", KeyType::kEd25519, "an Ed25519"},
};

// implements: AUTH-017 (inline keys) and the DOC rows on kid and alg. Errors name
// auth.keys[<index>] and the kid, never the PEM.
Status CheckInlineKeys(const ParsedDocument& doc) {
  const std::vector<InlineKey>& keys = doc.config.auth.keys;
  if (doc.auth_keys_present && keys.empty()) {
    return ConfigError("auth.keys", "must not be an empty array");
  }
  std::map<std::string_view, size_t> index_by_kid;
  for (size_t i = 0; i < keys.size(); ++i) {
    const InlineKey& key = keys[i];
    std::string path = JoinIndex("auth.keys", i);
    if (key.kid.empty() || key.kid.size() > kMaxKidBytes) {
      return ConfigError(path, "kid must be 1 to 256 bytes");
    }
    std::string label = KidLabel(doc, i, key.kid);
    auto [it, inserted] = index_by_kid.emplace(key.kid, i);
    if (!inserted) {
      return ConfigError(path,
                         label + ": the same kid as auth.keys[" + std::to_string(it->second) + "]");
    }
    const AlgRule* rule = nullptr;
    for (const AlgRule& candidate : kAlgRules) {
      if (candidate.alg == key.alg) {
        rule = &candidate;
      }
    }
    if (rule == nullptr) {
      return ConfigError(path, label +
                                   ": alg must be one of RS256, RS384, RS512, ES256, ES384, "
                                   "EdDSA");
    }
    Result<KeyType> type = PublicKeyTypeOfPem(key.public_key);
    if (!type.ok()) {
      return ConfigError(path, label + ": public_key is not a PEM SubjectPublicKeyInfo");
    }
    if (*type != rule->needs) {
      return ConfigError(path, label + ": public_key is not " + std::string(rule->key_name) +
                                   " key, as alg " + std::string(rule->alg) + " needs");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckAuth(const ParsedDocument& doc) {
  const AuthConfig& a = doc.config.auth;
  // implements: CONF-066
  if (!a.enabled) {
    return Status::Ok();
  }
  // implements: AUTH-029. An empty api_keys table or keys array is not a mechanism (CONF
  // section 7 point 4).
  bool has_api_keys = !a.api_keys.empty();
  bool has_jwks = a.jwks_url.has_value();
  bool has_keys = !a.keys.empty();
  if (!has_api_keys && !has_jwks && !has_keys) {
    return ConfigError("auth.api_keys/auth.jwks_url/auth.keys",
                       "enabled authentication needs at least one of them");
  }
  if (has_jwks && has_keys) {
    return ConfigError("auth.jwks_url/auth.keys", "only one of them may be configured");
  }
  XB_RETURN_IF_ERROR(CheckApiKeys(a.api_keys));
  // implements: AUTH-032
  if (a.leeway_seconds > kMaxLeewaySeconds) {
    return RangeError("auth.leeway_seconds", 0, kMaxLeewaySeconds);
  }
  // implements: AUTH-034. No overflow: refresh <= INT64_MAX, so refresh * 1.1 + 11 < 2^64.
  if (a.jwks_refresh_seconds < 1) {
    return RangeError("auth.jwks_refresh_seconds", 1, std::numeric_limits<uint64_t>::max());
  }
  uint64_t refresh = a.jwks_refresh_seconds;
  uint64_t window = refresh + (refresh + 9) / 10 + 10;
  if (a.jwks_max_stale_seconds < window) {
    return ConfigError("auth.jwks_max_stale_seconds",
                       "must be at least jwks_refresh_seconds + ceil(jwks_refresh_seconds / 10) "
                       "+ 10");
  }
  if (!FitsMonotonicDeadline(a.jwks_max_stale_seconds, kNsPerSecond)) {
    return ConfigError("auth.jwks_max_stale_seconds",
                       "too large for a deadline on the monotonic clock");
  }
  if (has_jwks) {
    XB_RETURN_IF_ERROR(CheckJwksUrl(*a.jwks_url));
  }
  XB_RETURN_IF_ERROR(CheckInlineKeys(doc));
  if (a.audiences.has_value() && a.audiences->empty()) {
    return ConfigError("auth.audiences", "must not be empty when present");
  }
  if (a.issuers.has_value() && a.issuers->empty()) {
    return ConfigError("auth.issuers", "must not be empty when present");
  }
  return Status::Ok();
}

}  // namespace xb::config
