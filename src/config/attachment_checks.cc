// Section 3.4 of spec/CONF.md with the forms of ATTACH.md section 2: the [attachments] checks,
// run only while the section is present.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "base/unicode.h"
#include "base/url.h"
#include "config/checks.h"
#include "config/config_error.h"

namespace xb::config {
namespace {

constexpr uint64_t kMaxUploadBytes = 4294967295;             // ATCH-003
constexpr uint64_t kMaxRetentionSeconds = 9007199254740991;  // ATCH-004 (2^53 - 1)

// ATTACH.md 2.1: exactly lowercase "https", or exactly lowercase "http" to localhost (any case)
// or a loopback address.
bool HasSecureScheme(const Url& url) {
  return url.scheme == "https" || (url.scheme == "http" && IsLoopbackHost(url));
}

// A path segment that is "." or ".." once %2e/%2E are read as '.'.
bool HasDotSegment(std::string_view path) {
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    size_t slash = path.find('/');
    std::string_view segment = path.substr(0, slash);
    std::string decoded;
    for (size_t i = 0; i < segment.size(); ++i) {
      if (segment[i] == '%' && i + 2 < segment.size() && segment[i + 1] == '2' &&
          (segment[i + 2] == 'e' || segment[i + 2] == 'E')) {
        decoded.push_back('.');
        i += 2;
      } else {
        decoded.push_back(segment[i]);
      }
    }
    if (decoded == "." || decoded == "..") {
      return true;
    }
    if (slash == std::string_view::npos) {
      break;
    }
    path.remove_prefix(slash);
  }
  return false;
}

// implements: ATCH-002
bool IsValidBaseUrl(std::string_view text) {
  Result<Url> url = ParseUrl(text);
  if (!url.ok() || !HasSecureScheme(*url) || url->host.empty() || url->has_userinfo ||
      url->has_query || url->has_fragment) {
    return false;
  }
  if (url->host_kind == Url::HostKind::kRegName && url->host_has_percent_encoding) {
    return false;
  }
  if (!url->path.empty() && url->path.back() == '/') {
    return false;  // the download URL appends "/<hex>" itself
  }
  return !HasDotSegment(url->path);
}

// implements: ATCH-071 (backend half). ASCII without controls, whitespace or '\' and
// well-formed is what ParseUrl accepts; the authority holds no '%'.
bool IsValidEndpoint(std::string_view text) {
  Result<Url> url = ParseUrl(text);
  return url.ok() && HasSecureScheme(*url) && !url->host.empty() && !url->has_userinfo &&
         !url->host_has_percent_encoding && !url->has_query && !url->has_fragment;
}

// ATTACH.md section 2: only A-Z a-z 0-9 _ - . /; no leading '/'; no "//"; no "." or ".." segment.
bool IsValidKeyPrefix(std::string_view prefix) {
  for (char c : prefix) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == '/';
    if (!ok) {
      return false;
    }
  }
  if (!prefix.empty() && prefix.front() == '/') {
    return false;
  }
  if (prefix.find("//") != std::string_view::npos) {
    return false;
  }
  return !HasDotSegment(prefix);
}

struct CredentialKind {
  std::string_view kind;
  std::array<std::string_view, 4> required;
  std::array<std::string_view, 2> optional;
};
// ATTACH.md section 7 (ATCH-073).
constexpr CredentialKind kCredentialKinds[] = {
    {"static", {"access_key_id", "secret_access_key"}, {"session_token"}},
    {"default_chain", {}, {}},
    {"environment", {}, {}},
    {"profile", {"name"}, {}},
    {"sso", {"account_id", "region", "role_name", "start_url"}, {"session_name"}},
    {"process", {"command"}, {}},
    {"web_identity", {}, {}},
    {"container", {}, {}},
    {"instance", {}, {}},
    {"assume_role", {"role_arn"}, {"external_id", "session_name"}},
};

bool Contains(const auto& names, std::string_view name) {
  return !name.empty() && std::find(names.begin(), names.end(), name) != names.end();
}

// implements: ATCH-073
Status CheckCredentials(const S3Credentials& credentials) {
  static constexpr std::string_view kPath = "attachments.target.S3.credentials";
  const CredentialKind* kind = nullptr;
  for (const CredentialKind& candidate : kCredentialKinds) {
    if (candidate.kind == credentials.kind) {
      kind = &candidate;
    }
  }
  if (kind == nullptr) {
    return ConfigError(JoinKey(kPath, "kind"),
                       "must be one of static, default_chain, environment, profile, sso, "
                       "process, web_identity, container, instance, assume_role");
  }
  for (const auto& [field, value] : credentials.fields) {
    if (!Contains(kind->required, field) && !Contains(kind->optional, field)) {
      return ConfigError(JoinKey(kPath, field), "unknown key for this credentials kind");
    }
  }
  for (std::string_view field : kind->required) {
    if (field.empty()) {
      continue;
    }
    auto it = credentials.fields.find(std::string(field));
    if (it == credentials.fields.end()) {
      return ConfigError(JoinKey(kPath, field), "required key is missing");
    }
    if (it->second.empty()) {
      return ConfigError(JoinKey(kPath, field), "must not be empty");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckAttachments(const AttachmentsConfig& a) {
  if (!IsValidBaseUrl(a.base_url)) {
    return ConfigError("attachments.base_url",
                       "must be an https:// URL (http:// only to localhost or a loopback "
                       "address) without userinfo, query, fragment, dot segments or a trailing /");
  }
  XB_RETURN_IF_ERROR(
      CheckRange("attachments.max_upload_bytes", a.max_upload_bytes, 1, kMaxUploadBytes));
  if (a.retention_seconds.has_value()) {
    XB_RETURN_IF_ERROR(
        CheckRange("attachments.retention_seconds", *a.retention_seconds, 0, kMaxRetentionSeconds));
  }
  if (!IsValidEndpoint(a.s3.endpoint)) {
    return ConfigError("attachments.target.S3.endpoint",
                       "must be an https:// URL, or http:// to localhost or a loopback address, "
                       "without userinfo, query or fragment");
  }
  // ATTACH.md section 2 (ATCH-081, text unconfirmed): region and bucket forms.
  if (a.s3.region.empty() || ContainsWhiteSpace(a.s3.region)) {
    return ConfigError("attachments.target.S3.region", "must be non-empty without whitespace");
  }
  if (a.s3.bucket.empty() || a.s3.bucket.find('/') != std::string::npos || a.s3.bucket == "." ||
      a.s3.bucket == "..") {
    return ConfigError("attachments.target.S3.bucket", "must be non-empty, without /, not . or ..");
  }
  if (!IsValidKeyPrefix(a.s3.key_prefix)) {
    return ConfigError("attachments.target.S3.key_prefix",
                       "may hold only A-Z a-z 0-9 _ - . /, without a leading /, //, or a . or .. "
                       "segment");
  }
  // CONF section 7 point 7: 300 to 3600, the lifetime range ATCH-028 publishes.
  XB_RETURN_IF_ERROR(
      CheckRange("attachments.target.S3.presign_ttl_seconds", a.s3.presign_ttl_seconds, 300, 3600));
  return CheckCredentials(a.s3.credentials);
}

}  // namespace xb::config
