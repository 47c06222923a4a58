// kind = "web_identity" and a profile's web_identity_token_file: STS AssumeRoleWithWebIdentity
// with the token read from its file, like the SDKs' web identity provider.
#include "attach/endpoint_answer.h"
#include "attach/http_sources.h"
#include "attach/sts_client.h"

namespace xb::attach {
namespace {

class WebIdentityProvider final : public CredentialProvider {
 public:
  WebIdentityProvider(ProviderContext context, WebIdentitySettings settings)
      : context_(std::move(context)), settings_(std::move(settings)) {}

  // implements: ATCH-073
  boost::asio::awaitable<CredentialResult> Fetch() override {
    std::optional<std::string> token_file = Setting(settings_.token_file, kTokenFileVariable);
    std::optional<std::string> role_arn = Setting(settings_.role_arn, kRoleArnVariable);
    if (!token_file || !role_arn) {
      co_return Unavailable("web identity is not configured");
    }
    // Read at each Fetch: the file is rotated by its issuer (EKS, a projected service account
    // token), so a kept copy would go stale. Sent as read, as botocore does.
    std::optional<std::string> token = ReadSmallFile(*token_file);
    if (!token || token->empty()) {
      co_return Unavailable("the web identity token file cannot be read");
    }
    std::string session_name = Setting(settings_.session_name, kSessionNameVariable)
                                   .value_or(GeneratedSessionName(context_.now()));
    // DurationSeconds is not sent: the role's default (one hour), as the SDKs do.
    StsCall call{.action = "AssumeRoleWithWebIdentity"};
    call.params.emplace_back("RoleArn", std::move(*role_arn));
    call.params.emplace_back("RoleSessionName", std::move(session_name));
    call.params.emplace_back("WebIdentityToken", std::move(*token));
    co_return co_await CallSts(context_, std::move(call));
  }

 private:
  static constexpr const char* kTokenFileVariable = "AWS_WEB_IDENTITY_TOKEN_FILE";
  static constexpr const char* kRoleArnVariable = "AWS_ROLE_ARN";
  static constexpr const char* kSessionNameVariable = "AWS_ROLE_SESSION_NAME";

  // The configured value, else the environment variable (read now).
  std::optional<std::string> Setting(const std::string& configured, const char* variable) const {
    if (!configured.empty()) {
      return configured;
    }
    return EnvValue(context_, variable);
  }

  // Const after construction.
  const ProviderContext context_;
  const WebIdentitySettings settings_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeWebIdentityProvider(const ProviderContext& context,
                                                            WebIdentitySettings settings) {
  return std::make_unique<WebIdentityProvider>(context, std::move(settings));
}

}  // namespace xb::attach
