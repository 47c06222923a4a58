// kind = "container" and credential_source = EcsContainer: the container credential endpoint
// (ECS task roles, EKS Pod Identity), like the SDKs' container provider.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "attach/endpoint_answer.h"
#include "attach/http_sources.h"
#include "base/ip_address.h"
#include "base/url.h"

namespace xb::attach {
namespace {

using namespace std::chrono_literals;

// botocore's container fetcher: 2 s per request, 3 attempts, 1 s apart.
constexpr std::chrono::milliseconds kRequestTimeout = 2s;
constexpr int kAttempts = 3;
constexpr std::chrono::milliseconds kRetryPause = 1s;

constexpr std::string_view kNoAnswer = "the container credential endpoint did not answer";

// implements: ATCH-073
// Plain http is allowed only where the SDKs allow it: loopback (localhost, 127.0.0.0/8, ::1) and
// the ECS and EKS link-local addresses 169.254.170.2, 169.254.170.23 and fd00:ec2::23. A host
// name other than localhost is not resolved to check it (botocore does; a literal is enough for
// every real deployment and needs no DNS).
bool IsAllowedPlainHost(const Url& url) {
  if (IsLoopbackHost(url)) {
    return true;
  }
  if (url.host_kind == Url::HostKind::kIpv4) {
    return url.host == "169.254.170.2" || url.host == "169.254.170.23";
  }
  std::array<uint8_t, 16> v6{};
  std::array<uint8_t, 16> eks{};
  return url.host_kind == Url::HostKind::kIpv6 && ParseIpv6(url.host, &v6) &&
         ParseIpv6("fd00:ec2::23", &eks) && v6 == eks;
}

class ContainerProvider final : public CredentialProvider {
 public:
  explicit ContainerProvider(ProviderContext context) : context_(std::move(context)) {}

  // implements: ATCH-073
  boost::asio::awaitable<CredentialResult> Fetch() override {
    XB_TRY_CO(std::string url, EndpointUrl());
    XB_TRY_CO(std::optional<std::string> authorization, Authorization());
    net::HttpRequest request{.method = "GET", .url = std::move(url)};
    if (authorization) {
      request.headers.push_back({"authorization", std::move(*authorization)});
    }
    // Transport failures and 5xx are asked again (botocore asks again on any failure; a 4xx
    // means the token or the path is wrong, which asking again does not mend).
    CredentialError last = Unavailable(kNoAnswer);
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      if (attempt > 1) {
        boost::asio::steady_timer pause(context_.executor, kRetryPause);
        // Not the throwing form: a pause cut short (shutdown cancels the fetch) ends the fetch.
        auto [cut] = co_await pause.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        if (cut) {
          co_return last;
        }
      }
      auto response = co_await SendRequest(context_.http, request, kRequestTimeout, kNoAnswer);
      if (!response.ok()) {
        last = std::move(response).error();
        continue;
      }
      if (IsSuccess(*response)) {
        co_return ParseJsonCredentials(response->body,
                                       "the container credential answer is not usable");
      }
      last = Unavailable("the container credential endpoint refused the request");
      if (response->status < 500) {
        break;
      }
    }
    co_return last;
  }

 private:
  // AWS_CONTAINER_CREDENTIALS_RELATIVE_URI first (on 169.254.170.2), then _FULL_URI.
  Expected<std::string, CredentialError> EndpointUrl() const {
    if (std::optional<std::string> relative =
            EnvValue(context_, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
      // A path, so that the host stays 169.254.170.2 ("@host" would name another).
      if (!relative->starts_with("/")) {
        return InvalidConfiguration("the container credential relative URI is not a path");
      }
      return "http://169.254.170.2" + *relative;
    }
    std::optional<std::string> full = EnvValue(context_, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (!full) {
      return Unavailable("the container credential endpoint is not set");
    }
    Result<Url> url = ParseUrl(*full);
    if (!url.ok() || url->host.empty() || url->has_userinfo) {
      return InvalidConfiguration("the container credential URI is not usable");
    }
    if (EqualsIgnoreCase(url->scheme, "https") ||
        (EqualsIgnoreCase(url->scheme, "http") && IsAllowedPlainHost(*url))) {
      return std::move(*full);
    }
    return InvalidConfiguration("the container credential URI is not on an allowed host");
  }

  // AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read now; it wins) or _TOKEN; none is fine.
  Expected<std::optional<std::string>, CredentialError> Authorization() const {
    std::optional<std::string> token;
    if (std::optional<std::string> file =
            EnvValue(context_, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
      token = ReadSmallFile(*file);
      if (!token) {
        return Unavailable("the container authorization token file cannot be read");
      }
    } else {
      token = EnvValue(context_, "AWS_CONTAINER_AUTHORIZATION_TOKEN");
    }
    // As botocore: a token with a line break is refused, not trimmed.
    if (token && token->find_first_of("\r\n") != std::string::npos) {
      return InvalidConfiguration("the container authorization token is not a header value");
    }
    return token;
  }

  // Const after construction.
  const ProviderContext context_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeContainerProvider(const ProviderContext& context) {
  return std::make_unique<ContainerProvider>(context);
}

}  // namespace xb::attach
