// kind = "sso" and a profile's sso_* settings: IAM Identity Center role credentials for the
// access token that `aws sso login` cached, like the SDKs' SSO provider. Refreshing an expired
// token through SSO-OIDC CreateToken is not done here: the operator logs in again.
#include <openssl/evp.h>

#include <boost/json.hpp>

#include "attach/endpoint_answer.h"
#include "attach/http_sources.h"
#include "attach/iso8601.h"
#include "attach/sigv4.h"
#include "base/encoding.h"

namespace xb::attach {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kTimeout = 5s;
constexpr std::string_view kUnusable = "the SSO role credential answer is not usable";

// Lowercase hex SHA-1 of `text`: the cache file name the AWS CLI and SDKs write.
std::string Sha1Hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha1(), nullptr) != 1) {
    return {};
  }
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

const json::object* Object(const json::value& doc) { return doc.if_object(); }

std::optional<std::string> String(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr || !value->is_string() || value->get_string().empty()) {
    return std::nullopt;
  }
  return std::string(value->get_string());
}

std::optional<int64_t> Integer(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value != nullptr && value->is_int64()) {
    return value->get_int64();
  }
  if (value != nullptr && value->is_uint64() && value->get_uint64() < (1ull << 62)) {
    return static_cast<int64_t>(value->get_uint64());
  }
  return std::nullopt;
}

struct CachedToken {
  std::string access_token;
  WallClock::time_point expires_at;
};

// {"accessToken": "...", "expiresAt": "<ISO 8601>", ...}
std::optional<CachedToken> ParseCachedToken(std::string_view text) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  const json::object* object = ec ? nullptr : Object(doc);
  if (object == nullptr) {
    return std::nullopt;
  }
  std::optional<std::string> token = String(*object, "accessToken");
  std::optional<std::string> expires = String(*object, "expiresAt");
  std::optional<WallClock::time_point> at = expires ? ParseIso8601(*expires) : std::nullopt;
  if (!token || !at) {
    return std::nullopt;
  }
  return CachedToken{std::move(*token), *at};
}

// {"roleCredentials": {"accessKeyId", "secretAccessKey", "sessionToken", "expiration" (epoch ms)}}
CredentialResult ParseRoleCredentials(std::string_view body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  const json::object* object = ec ? nullptr : Object(doc);
  const json::value* role = object == nullptr ? nullptr : object->if_contains("roleCredentials");
  const json::object* fields = role == nullptr ? nullptr : role->if_object();
  if (fields == nullptr) {
    return Unavailable(kUnusable);
  }
  std::optional<std::string> key = String(*fields, "accessKeyId");
  std::optional<std::string> secret = String(*fields, "secretAccessKey");
  std::optional<std::string> token = String(*fields, "sessionToken");
  std::optional<int64_t> expiration = Integer(*fields, "expiration");
  if (!key || !secret || !token || !expiration) {
    return Unavailable(kUnusable);
  }
  return AwsCredentials{.access_key_id = std::move(*key),
                        .secret_access_key = std::move(*secret),
                        .session_token = std::move(*token),
                        .expiry = WallClock::time_point(std::chrono::milliseconds(*expiration))};
}

class SsoProvider final : public CredentialProvider {
 public:
  SsoProvider(ProviderContext context, SsoSettings settings)
      : context_(std::move(context)), settings_(std::move(settings)) {}

  // implements: ATCH-073
  boost::asio::awaitable<CredentialResult> Fetch() override {
    XB_TRY_CO(CachedToken cached, ReadCachedToken());
    if (cached.expires_at <= context_.now()) {
      co_return Unavailable("the SSO access token has expired");
    }
    const std::string region = settings_.region.empty() ? context_.region : settings_.region;
    net::HttpRequest request{
        .method = "GET",
        .url = "https://portal.sso." + region +
               ".amazonaws.com/federation/credentials?account_id=" +
               UriEncode(settings_.account_id, /*keep_slash=*/false) +
               "&role_name=" + UriEncode(settings_.role_name, /*keep_slash=*/false),
        .headers = {{"x-amz-sso_bearer_token", std::move(cached.access_token)}}};
    XB_TRY_CO(net::HttpResponse response,
              co_await SendRequest(context_.http, std::move(request), kTimeout,
                                   "the SSO portal did not answer"));
    if (!IsSuccess(response)) {
      co_return Unavailable("the SSO portal refused the request");
    }
    co_return ParseRoleCredentials(response.body);
  }

 private:
  // implements: ATCH-073
  // $HOME/.aws/sso/cache/<sha1 hex>.json, keyed by the sso-session name when there is one, else
  // by the start URL (the legacy form). Read at each Fetch: `aws sso login` rewrites it.
  Expected<CachedToken, CredentialError> ReadCachedToken() const {
    std::optional<std::string> home = EnvValue(context_, "HOME");
    const std::string& key =
        settings_.session_name.empty() ? settings_.start_url : settings_.session_name;
    if (!home || key.empty()) {
      return Unavailable("the SSO token cache cannot be found");
    }
    std::optional<std::string> text =
        ReadSmallFile(*home + "/.aws/sso/cache/" + Sha1Hex(key) + ".json");
    if (!text) {
      return Unavailable("the SSO token cache cannot be read");
    }
    std::optional<CachedToken> token = ParseCachedToken(*text);
    if (!token) {
      return Unavailable("the SSO token cache is not usable");
    }
    return std::move(*token);
  }

  // Const after construction.
  const ProviderContext context_;
  const SsoSettings settings_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeSsoProvider(const ProviderContext& context,
                                                    SsoSettings settings) {
  return std::make_unique<SsoProvider>(context, std::move(settings));
}

}  // namespace xb::attach
