#include "attach/sigv4.h"

#include <algorithm>
#include <ctime>

#include "base/encoding.h"
#include "crypto/hmac_sha256.h"

namespace xb::attach {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

// AWS canonical header values: leading and trailing spaces removed, inner runs of spaces one.
std::string TrimValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool pending_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) {
      out.push_back(' ');
      pending_space = false;
    }
    out.push_back(c);
  }
  return out;
}

void AppendDigits(std::string& out, int value, int width) {
  char digits[8];
  for (int i = width - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(digits, static_cast<size_t>(width));
}

// "DATE/region/service/aws4_request" for an AMZDATE already formatted.
std::string ScopeOf(std::string_view amz_date, const SigningScope& scope) {
  std::string out(amz_date.substr(0, 8));
  out.append("/").append(scope.region).append("/").append(scope.service).append("/aws4_request");
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view credential_scope,
                         std::string_view canonical_request) {
  const crypto::Sha256Digest hash = crypto::Sha256(canonical_request);
  std::string out;
  out.reserve(160);
  out.append(kAlgorithm).append("\n");
  out.append(amz_date).append("\n");
  out.append(credential_scope).append("\n");
  out.append(LowerHex(crypto::AsBytes(hash)));
  return out;
}

std::string SignatureOver(const crypto::Sha256Digest& signing_key, std::string_view amz_date,
                          std::string_view credential_scope, std::string_view canonical_request) {
  const crypto::Sha256Digest mac = crypto::HmacSha256(
      crypto::AsBytes(signing_key), StringToSign(amz_date, credential_scope, canonical_request));
  return LowerHex(crypto::AsBytes(mac));
}

}  // namespace

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  for (unsigned char c : text) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string AmzDate(WallClock::time_point time) {
  const std::time_t seconds = WallClock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::string out;
  out.reserve(16);
  AppendDigits(out, utc.tm_year + 1900, 4);
  AppendDigits(out, utc.tm_mon + 1, 2);
  AppendDigits(out, utc.tm_mday, 2);
  out.push_back('T');
  AppendDigits(out, utc.tm_hour, 2);
  AppendDigits(out, utc.tm_min, 2);
  AppendDigits(out, utc.tm_sec, 2);
  out.push_back('Z');
  return out;
}

std::string CredentialScope(const SigningScope& scope) {
  return ScopeOf(AmzDate(scope.time), scope);
}

crypto::Sha256Digest SigningKey(std::string_view secret_access_key, const SigningScope& scope) {
  std::string seed = "AWS4";
  seed.append(secret_access_key);
  const crypto::Sha256Digest date =
      crypto::HmacSha256(seed, std::string_view(AmzDate(scope.time)).substr(0, 8));
  const crypto::Sha256Digest region = crypto::HmacSha256(crypto::AsBytes(date), scope.region);
  const crypto::Sha256Digest service = crypto::HmacSha256(crypto::AsBytes(region), scope.service);
  return crypto::HmacSha256(crypto::AsBytes(service), "aws4_request");
}

std::string CanonicalRequest(std::string_view method, std::string_view uri, std::string_view query,
                             const std::vector<SignedHeader>& headers,
                             std::string_view payload_hash) {
  std::string out;
  out.reserve(512);
  out.append(method).append("\n").append(uri).append("\n").append(query).append("\n");
  for (const SignedHeader& h : headers) {
    out.append(h.name).append(":").append(TrimValue(h.value)).append("\n");
  }
  out.append("\n").append(SignedHeaderNames(headers)).append("\n").append(payload_hash);
  return out;
}

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> params) {
  for (auto& [name, value] : params) {
    name = UriEncode(name, /*keep_slash=*/false);
    value = UriEncode(value, /*keep_slash=*/false);
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) {
      out.push_back('&');
    }
    out.append(name).append("=").append(value);
  }
  return out;
}

std::string SignedHeaderNames(const std::vector<SignedHeader>& headers) {
  std::string out;
  for (const SignedHeader& h : headers) {
    if (!out.empty()) {
      out.push_back(';');
    }
    out.append(h.name);
  }
  return out;
}

std::string Signature(const crypto::Sha256Digest& signing_key, const SigningScope& scope,
                      std::string_view canonical_request) {
  const std::string amz_date = AmzDate(scope.time);
  return SignatureOver(signing_key, amz_date, ScopeOf(amz_date, scope), canonical_request);
}

std::string PresignQuery(const QueryPresignRequest& request, const AwsCredentials& credentials,
                         const SigningScope& scope, const crypto::Sha256Digest& signing_key) {
  const std::string amz_date = AmzDate(scope.time);
  const std::string credential_scope = ScopeOf(amz_date, scope);
  std::vector<std::pair<std::string, std::string>> params = request.extra_params;
  params.reserve(params.size() + 6);
  params.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  params.emplace_back("X-Amz-Credential", credentials.access_key_id + "/" + credential_scope);
  params.emplace_back("X-Amz-Date", amz_date);
  params.emplace_back("X-Amz-Expires", std::to_string(request.expires_seconds));
  params.emplace_back("X-Amz-SignedHeaders", SignedHeaderNames(request.headers));
  if (!credentials.session_token.empty()) {
    params.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  std::string query = CanonicalQuery(std::move(params));
  const std::string canonical =
      CanonicalRequest(request.method, request.uri, query, request.headers, "UNSIGNED-PAYLOAD");
  query.append("&X-Amz-Signature=")
      .append(SignatureOver(signing_key, amz_date, credential_scope, canonical));
  return query;
}

std::vector<SignedHeader> SignHeaders(const HeaderSignRequest& request,
                                      const AwsCredentials& credentials,
                                      const SigningScope& scope) {
  std::vector<SignedHeader> added = {{"x-amz-date", AmzDate(scope.time)}};
  if (!credentials.session_token.empty()) {
    added.push_back({"x-amz-security-token", credentials.session_token});
  }
  std::vector<SignedHeader> all = request.headers;
  all.insert(all.end(), added.begin(), added.end());
  std::sort(all.begin(), all.end(),
            [](const SignedHeader& a, const SignedHeader& b) { return a.name < b.name; });
  const std::string payload_hash = LowerHex(crypto::AsBytes(crypto::Sha256(request.body)));
  const std::string canonical =
      CanonicalRequest(request.method, request.uri, request.canonical_query, all, payload_hash);
  const std::string signature =
      Signature(SigningKey(credentials.secret_access_key, scope), scope, canonical);
  added.push_back(
      {"authorization", std::string(kAlgorithm) + " Credential=" + credentials.access_key_id + "/" +
                            CredentialScope(scope) + ", SignedHeaders=" + SignedHeaderNames(all) +
                            ", Signature=" + signature});
  return added;
}

}  // namespace xb::attach
