// The credential sources that ask an AWS endpoint (ATTACH.md section 7; each with the semantics of
// the AWS SDK provider of the same name): STS AssumeRoleWithWebIdentity (web_identity), STS
// AssumeRole (assume_role), the container credential endpoint (container), EC2 instance metadata
// with IMDSv2 (instance) and IAM Identity Center role credentials (sso). Every request goes
// through ProviderContext::http with a deadline. The endpoints are AWS's fixed ones; only the test
// build points them at loopback (net::HttpClientOptions::static_hosts).
#pragma once

#include <memory>
#include <string>

#include "attach/credentials.h"

namespace xb::attach {

// Empty fields are read from the environment at each Fetch: AWS_WEB_IDENTITY_TOKEN_FILE,
// AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME (a generated name when unset).
struct WebIdentitySettings {
  std::string token_file{};
  std::string role_arn{};
  std::string session_name{};
};
std::unique_ptr<CredentialProvider> MakeWebIdentityProvider(const ProviderContext& context,
                                                            WebIdentitySettings settings);

struct AssumeRoleSettings {
  std::string role_arn{};
  std::string external_id{};   // empty: none sent
  std::string session_name{};  // empty: a generated name
};
// Signs AssumeRole with the credentials `source` answers (the default chain for kind assume_role).
std::unique_ptr<CredentialProvider> MakeAssumeRoleProvider(
    const ProviderContext& context, AssumeRoleSettings settings,
    std::unique_ptr<CredentialProvider> source);

// AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on 169.254.170.2) or _FULL_URI, with
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or AWS_CONTAINER_AUTHORIZATION_TOKEN, read at each Fetch.
std::unique_ptr<CredentialProvider> MakeContainerProvider(const ProviderContext& context);

// IMDSv2 on 169.254.169.254: a session token (PUT), then the role name and its credentials.
// AWS_EC2_METADATA_DISABLED=true makes every Fetch fail at once.
std::unique_ptr<CredentialProvider> MakeInstanceProvider(const ProviderContext& context);

struct SsoSettings {
  std::string account_id{};
  std::string region{};
  std::string role_name{};
  std::string start_url{};
  std::string session_name{};  // empty: the legacy token cache key (the start URL)
};
// The cached SSO access token (~/.aws/sso/cache/<sha1>.json), then GetRoleCredentials on
// portal.sso.<region>.amazonaws.com.
std::unique_ptr<CredentialProvider> MakeSsoProvider(const ProviderContext& context,
                                                    SsoSettings settings);

}  // namespace xb::attach
