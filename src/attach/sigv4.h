// AWS Signature Version 4 (ATTACH.md 6.3; AWS "Create a signed AWS API request"): the canonical
// request, the string to sign, the derived signing key and the signature, in the two forms the
// backend uses: the query-string form (presigned S3 uploads, attach/presign.h) and the
// Authorization-header form (STS AssumeRole, a credential source). Pure functions; any thread;
// never suspend.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attach/credentials.h"
#include "crypto/sha256.h"

namespace xb::attach {

// A header to sign: lowercase name, value as sent (trimmed when canonicalised).
struct SignedHeader {
  std::string name;
  std::string value;
};

// What both forms sign besides the credentials.
struct SigningScope {
  std::string_view region;
  std::string_view service;    // "s3", "sts"
  WallClock::time_point time;  // whole seconds are used
};

// RFC 3986 unreserved characters kept, every other byte %XX with uppercase hex (6.3 step 6).
// `keep_slash`: '/' kept (a path segment list), else encoded (a query name or value).
std::string UriEncode(std::string_view text, bool keep_slash);

// "YYYYMMDDTHHMMSSZ" of `time` in UTC (6.3 step 1).
std::string AmzDate(WallClock::time_point time);

// kSigning of 6.3 step 11 for the date of `scope.time`.
crypto::Sha256Digest SigningKey(std::string_view secret_access_key, const SigningScope& scope);

// "DATE/region/service/aws4_request" (6.3 step 2).
std::string CredentialScope(const SigningScope& scope);

// The canonical request of 6.3 step 9 for already-canonical parts: `query` encoded and sorted
// (CanonicalQuery), `headers` sorted by name, `payload_hash` lowercase hex or UNSIGNED-PAYLOAD.
std::string CanonicalRequest(std::string_view method, std::string_view uri, std::string_view query,
                             const std::vector<SignedHeader>& headers,
                             std::string_view payload_hash);

// Name/value pairs URI-encoded, sorted by encoded name (then value), joined with '&' (step 6).
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> params);

// "content-length;host;..." for headers sorted by name (step 4).
std::string SignedHeaderNames(const std::vector<SignedHeader>& headers);

// Lowercase hex signature of `canonical_request` (steps 10-12).
std::string Signature(const crypto::Sha256Digest& signing_key, const SigningScope& scope,
                      std::string_view canonical_request);

// The query-string form: the full query string to append after '?', ending in
// "&X-Amz-Signature=<hex>". `headers` (sorted by name, `host` among them) are signed, not sent
// here. `extra_params` are signed query parameters besides the X-Amz-* ones (none for S3 PUT).
struct QueryPresignRequest {
  std::string_view method;
  std::string_view uri;  // the path exactly as sent (encoded once; step 7)
  std::vector<SignedHeader> headers;
  std::vector<std::pair<std::string, std::string>> extra_params;
  uint32_t expires_seconds = 0;
};
std::string PresignQuery(const QueryPresignRequest& request, const AwsCredentials& credentials,
                         const SigningScope& scope, const crypto::Sha256Digest& signing_key);

// The header form: the headers to add to the request (`x-amz-date`, `x-amz-security-token` when
// the credentials carry one, `authorization`). `headers` are the request's own (with `host`);
// they and the added x-amz-* ones are all signed; the payload hash is SHA-256 of `body`.
struct HeaderSignRequest {
  std::string_view method;
  std::string_view uri;
  std::string_view canonical_query;  // "" when none
  std::vector<SignedHeader> headers;
  std::string_view body;
};
std::vector<SignedHeader> SignHeaders(const HeaderSignRequest& request,
                                      const AwsCredentials& credentials, const SigningScope& scope);

}  // namespace xb::attach
