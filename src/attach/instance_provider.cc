// kind = "instance" and credential_source = Ec2InstanceMetadata: the EC2 instance metadata service
// (IMDS) with a session token (IMDSv2), like the SDKs' instance metadata provider.
#include <boost/json.hpp>

#include "attach/endpoint_answer.h"
#include "attach/http_sources.h"
#include "attach/sigv4.h"
#include "base/url.h"

namespace xb::attach {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kBase = "http://169.254.169.254";
constexpr std::string_view kTokenPath = "/latest/api/token";
constexpr std::string_view kCredentialsPath = "/latest/meta-data/iam/security-credentials/";
constexpr std::string_view kTokenHeader = "x-aws-ec2-metadata-token";
constexpr std::string_view kTtlHeader = "x-aws-ec2-metadata-token-ttl-seconds";
constexpr int64_t kTokenTtlSeconds = 21600;
// A kept token is used until this long before it expires.
constexpr auto kTokenMargin = 60s;
// The SDKs' default: 1 s per metadata request, one attempt.
constexpr std::chrono::milliseconds kTimeout = 1s;
constexpr std::string_view kNoAnswer = "the instance metadata service did not answer";
constexpr std::string_view kRefused = "the instance metadata service refused the request";

bool IsTrue(const std::optional<std::string>& value) {
  return value && EqualsIgnoreCase(*value, "true");
}

// The answer's "Code" member when it is a JSON object with a string Code.
std::optional<std::string> ParseCode(std::string_view answer) {
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(answer, ec);
  const boost::json::object* object = ec ? nullptr : doc.if_object();
  const boost::json::value* code = object == nullptr ? nullptr : object->if_contains("Code");
  if (code == nullptr || !code->is_string()) {
    return std::nullopt;
  }
  return std::string(code->get_string());
}

class InstanceProvider final : public CredentialProvider {
 public:
  explicit InstanceProvider(ProviderContext context) : context_(std::move(context)) {}

  // implements: ATCH-073
  boost::asio::awaitable<CredentialResult> Fetch() override {
    if (IsTrue(EnvValue(context_, "AWS_EC2_METADATA_DISABLED"))) {
      co_return Unavailable("instance metadata is disabled");
    }
    imds_v1_ = false;
    XB_TRY_CO(std::string listing, co_await Get(std::string(kCredentialsPath)));
    // The listing names the instance profile's role; the first line is the one the SDKs use.
    std::string role = listing.substr(0, listing.find_first_of("\r\n"));
    if (role.empty()) {
      co_return Unavailable("the instance has no role");
    }
    XB_TRY_CO(std::string answer,
              co_await Get(std::string(kCredentialsPath) + UriEncode(role, /*keep_slash=*/false)));
    constexpr std::string_view kUnusable = "the instance credential answer is not usable";
    // An answer with a Code says whether it holds credentials ("Success").
    auto code = ParseCode(answer);
    if (code && *code != "Success") {
      co_return Unavailable(kUnusable);
    }
    co_return ParseJsonCredentials(answer, kUnusable);
  }

 private:
  // GET `path` with the session token (when IMDSv2 is in use): the body of a 2xx. A 401 means the
  // kept token is no longer valid: a new one is asked for and the request is sent once more.
  boost::asio::awaitable<Expected<std::string, CredentialError>> Get(std::string path) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      XB_TRY_CO(std::optional<std::string> token, co_await SessionToken());
      net::HttpRequest request{.method = "GET", .url = std::string(kBase) + path};
      if (token) {
        request.headers.push_back({std::string(kTokenHeader), *token});
      }
      XB_TRY_CO(net::HttpResponse response,
                co_await SendRequest(context_.http, std::move(request), kTimeout, kNoAnswer));
      if (IsSuccess(response)) {
        co_return std::move(response.body);
      }
      if (response.status != 401 || !token) {
        break;
      }
      token_.reset();
    }
    co_return Unavailable(kRefused);
  }

  // implements: ATCH-073
  // The kept token while it has more than a minute left, else a new one (PUT, TTL 21600 s).
  // nullopt: IMDSv1, no token. Choice (the AWS SDKs' documented default): fall back to IMDSv1
  // when the PUT answers 403, 404 or 405 (a metadata service without the token API), unless
  // AWS_EC2_METADATA_V1_DISABLED=true; any other failure (no answer in 1 s, another status)
  // fails the Fetch.
  boost::asio::awaitable<Expected<std::optional<std::string>, CredentialError>> SessionToken() {
    const WallClock::time_point now = context_.now();
    if (token_ && now + kTokenMargin < token_expiry_) {
      co_return token_;
    }
    if (imds_v1_) {
      co_return std::optional<std::string>();
    }
    token_.reset();
    net::HttpRequest request{
        .method = "PUT",
        .url = std::string(kBase) + std::string(kTokenPath),
        .headers = {{std::string(kTtlHeader), std::to_string(kTokenTtlSeconds)}}};
    XB_TRY_CO(net::HttpResponse response,
              co_await SendRequest(context_.http, std::move(request), kTimeout, kNoAnswer));
    if (IsSuccess(response) && !response.body.empty()) {
      token_ = std::move(response.body);
      token_expiry_ = now + std::chrono::seconds(kTokenTtlSeconds);
      co_return token_;
    }
    const bool no_token_api =
        response.status == 403 || response.status == 404 || response.status == 405;
    if (no_token_api && !IsTrue(EnvValue(context_, "AWS_EC2_METADATA_V1_DISABLED"))) {
      imds_v1_ = true;  // for the rest of this Fetch; the next one asks for a token again
      co_return std::optional<std::string>();
    }
    co_return Unavailable(kRefused);
  }

  // Const after construction.
  const ProviderContext context_;

  // Fetch runs one call at a time (credentials.h), so these need no lock.
  std::optional<std::string> token_;
  WallClock::time_point token_expiry_{};
  bool imds_v1_ = false;  // this Fetch fell back to IMDSv1
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeInstanceProvider(const ProviderContext& context) {
  return std::make_unique<InstanceProvider>(context);
}

}  // namespace xb::attach
