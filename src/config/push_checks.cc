// The [push] rows of spec/CONF.md section 3.5, with the forms PUSH.md sections 9.3 and 12 give
// for provider credentials and the webhook allowlist.
#include <map>
#include <string>
#include <string_view>

#include "config/checks.h"
#include "config/config_error.h"
#include "config/json_members.h"
#include "config/key_material.h"

namespace xb::config {
namespace {

constexpr uint64_t kMinRecipientTtlSeconds = 86400;
constexpr uint64_t kMaxRecipientTtlSeconds = 9223372036;  // PUSH section 16 point 1
constexpr std::string_view kFcmTokenUri = "https://oauth2.googleapis.com/token";

Status CheckApns(const ApnsConfig& apns) {
  struct Field {
    std::string_view key;
    const std::string& value;
  };
  for (const Field& f :
       {Field{"push.apns.key", apns.key}, Field{"push.apns.key_id", apns.key_id},
        Field{"push.apns.team_id", apns.team_id}, Field{"push.apns.bundle_id", apns.bundle_id},
        Field{"push.apns.environment", apns.environment}}) {
    if (f.value.empty()) {
      return ConfigError(f.key, "must not be empty");
    }
  }
  if (apns.environment != "production" && apns.environment != "sandbox") {
    return ConfigError("push.apns.environment", "must be one of production, sandbox");
  }
  // PUSH section 12: the PKCS#8 PEM of the EC P-256 key that signs the ES256 provider token.
  Result<KeyType> type = PrivateKeyTypeOfPkcs8Pem(apns.key);
  if (!type.ok() || *type != KeyType::kEcP256) {
    return ConfigError("push.apns.key", "must be the PKCS#8 PEM text of an EC P-256 private key");
  }
  return Status::Ok();
}

bool IsProjectId(std::string_view id) {
  if (id.empty()) {
    return false;
  }
  for (char c : id) {
    bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// PUSH section 9.3: project_id ([A-Za-z0-9-]+), client_email, private_key (PKCS#8 PEM RSA) and
// token_uri exactly https://oauth2.googleapis.com/token.
Status CheckFcm(const FcmConfig& fcm) {
  static constexpr std::string_view kKey = "push.fcm.service_account";
  if (fcm.service_account.empty()) {
    return ConfigError(kKey, "must not be empty");
  }
  Result<std::map<std::string, std::string>> members = TopLevelStringMembers(fcm.service_account);
  if (!members.ok()) {
    return ConfigError(kKey, "must be the service-account JSON document");
  }
  auto member = [&](const char* name) -> std::string_view {
    auto it = members->find(name);
    return it == members->end() ? std::string_view() : std::string_view(it->second);
  };
  if (!IsProjectId(member("project_id"))) {
    return ConfigError(kKey, "project_id must be a non-empty string of letters, digits and -");
  }
  if (member("client_email").empty()) {
    return ConfigError(kKey, "client_email must be a non-empty string");
  }
  if (member("token_uri") != kFcmTokenUri) {
    return ConfigError(kKey, "token_uri must be https://oauth2.googleapis.com/token");
  }
  Result<KeyType> type = PrivateKeyTypeOfPkcs8Pem(member("private_key"));
  if (!type.ok() || *type != KeyType::kRsa) {
    return ConfigError(kKey, "private_key must be the PKCS#8 PEM text of an RSA private key");
  }
  return Status::Ok();
}

// PUSH section 12: a DNS host name, optionally "*."-prefixed; labels of 1 to 63 letters, digits
// and '-', not starting or ending with '-'; at most 253 bytes; nothing else.
bool IsAllowedDomainEntry(std::string_view entry) {
  if (entry.substr(0, 2) == "*.") {
    entry.remove_prefix(2);
  }
  if (entry.empty() || entry.size() > 253) {
    return false;
  }
  while (true) {
    size_t dot = entry.find('.');
    std::string_view label = entry.substr(0, dot);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      bool ok =
          (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok) {
        return false;
      }
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    entry.remove_prefix(dot + 1);
  }
}

}  // namespace

Status CheckPush(const PushConfig& push) {
  XB_RETURN_IF_ERROR(CheckRange("push.recipient_ttl_seconds", push.recipient_ttl_seconds,
                                kMinRecipientTtlSeconds, kMaxRecipientTtlSeconds));
  XB_RETURN_IF_ERROR(CheckRange("push.max_attempts", push.max_attempts, 1, 10));
  if (push.apns.has_value()) {
    XB_RETURN_IF_ERROR(CheckApns(*push.apns));
  }
  if (push.fcm.has_value()) {
    XB_RETURN_IF_ERROR(CheckFcm(*push.fcm));
  }
  if (push.http.has_value() && push.http->allowed_domains.has_value()) {
    const std::vector<std::string>& domains = *push.http->allowed_domains;
    for (size_t i = 0; i < domains.size(); ++i) {
      if (!IsAllowedDomainEntry(domains[i])) {
        return ConfigError(JoinIndex("push.http.allowed_domains", i),
                           "must be a host name, optionally starting with *.");
      }
    }
  }
  return Status::Ok();
}

}  // namespace xb::config
