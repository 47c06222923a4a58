#include "attach/upload_presigner.h"

#include "base/encoding.h"
#include "base/url.h"

namespace xb::attach {
namespace {

// pchar of RFC 3986 (unreserved, sub-delims, ':', '@') and '%' of an escape the endpoint already
// wrote: an endpoint path segment is used as written, other bytes encoded once.
bool KeptInEndpointSegment(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("-._~!$&'()*+,;=:@%").find(static_cast<char>(c)) !=
             std::string_view::npos;
}

std::string EncodeEndpointSegment(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : segment) {
    if (KeptInEndpointSegment(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// 6.1: the endpoint's path segments (one trailing empty one removed), the bucket, then every
// non-empty segment of the key. The key's last segment is the prefix's stem followed by the hex
// digest, so the prefix part is kept here without its stem's end: "/a/b/" + "stem" + hex.
std::string PathPrefix(const Url& endpoint, const config::S3Target& target) {
  std::string path;
  std::string_view rest = endpoint.path;
  if (!rest.empty() && rest.back() == '/') {
    rest.remove_suffix(1);
  }
  while (!rest.empty()) {  // rest starts with '/'
    rest.remove_prefix(1);
    const size_t slash = rest.find('/');
    path.append("/").append(EncodeEndpointSegment(rest.substr(0, slash)));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  path.append("/").append(UriEncode(target.bucket, /*keep_slash=*/false));
  std::string_view prefix = target.key_prefix;
  for (size_t slash = prefix.find('/'); slash != std::string_view::npos; slash = prefix.find('/')) {
    if (slash > 0) {  // allowed prefix characters never need encoding
      path.append("/").append(prefix.substr(0, slash));
    }
    prefix.remove_prefix(slash + 1);
  }
  path.append("/").append(prefix);  // the stem the hex digest is appended to
  return path;
}

}  // namespace

Expected<UploadPresigner, std::string> UploadPresigner::Create(const config::S3Target& target) {
  Result<Url> parsed = ParseUrl(target.endpoint);
  if (!parsed.ok() || parsed.value().host.empty()) {
    return std::string("the storage endpoint is not a URL with a host");
  }
  // A reg-name is case-insensitive (RFC 3986 6.2.2.1): written and signed in lower case, as the
  // SDKs sign it, so the Host a client derives from the URL is the signed one.
  Url url = parsed.value();
  if (url.host_kind == Url::HostKind::kRegName) {
    url.host = AsciiLower(url.host);
  }
  UploadPresigner presigner;
  Url authority = url;
  const bool default_port = url.port.has_value() && ((url.scheme == "https" && *url.port == 443) ||
                                                     (url.scheme == "http" && *url.port == 80));
  if (default_port) {
    authority.port.reset();
  }
  presigner.host_ = HostHeader(authority);
  presigner.origin_ = url.scheme + "://" + HostHeader(url);
  presigner.path_prefix_ = PathPrefix(url, target);
  presigner.region_ = target.region;
  return presigner;
}

// implements: ATCH-023, ATCH-028
PresignedUpload UploadPresigner::Presign(std::string_view digest, uint64_t content_length,
                                         const AwsCredentials& credentials,
                                         WallClock::time_point time, uint32_t expires_seconds,
                                         const crypto::Sha256Digest* signing_key) const {
  std::string path = path_prefix_;
  path.append(LowerHex(digest));
  // Sorted by name for signing (6.3 step 3); the response lists them in 6.2's order.
  QueryPresignRequest request{.method = "PUT",
                              .uri = path,
                              .headers = {{"content-length", std::to_string(content_length)},
                                          {"host", host_},
                                          {"if-none-match", "*"},
                                          {"x-amz-checksum-sha256", Base64(digest)}},
                              .extra_params = {},
                              .expires_seconds = expires_seconds};
  const SigningScope scope = ScopeAt(time);
  const std::string query = PresignQuery(
      request, credentials, scope,
      signing_key != nullptr ? *signing_key : SigningKey(credentials.secret_access_key, scope));
  PresignedUpload out;
  out.url.reserve(origin_.size() + path.size() + 1 + query.size());
  out.url.append(origin_).append(path).append("?").append(query);
  out.headers = {std::move(request.headers[0]), std::move(request.headers[2]),
                 std::move(request.headers[3])};
  out.expires_in_seconds = expires_seconds;
  return out;
}

}  // namespace xb::attach
