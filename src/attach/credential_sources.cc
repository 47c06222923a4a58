// MakeCredentialProvider: the configured `kind` to its source (ATTACH.md section 7, ATCH-073),
// and the delegates a profile may need (role chains, web identity, SSO, the metadata sources).
#include <utility>
#include <vector>

#include "attach/credentials.h"
#include "attach/http_sources.h"
#include "attach/local_sources.h"

namespace xb::attach {
namespace {

std::string Field(const std::map<std::string, std::string>& fields, const std::string& name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second;
}

// What a profile (kind profile, and the profile link of default_chain) may delegate to.
ProfileDelegates DelegatesFor(const ProviderContext& context) {
  ProfileDelegates delegates;
  delegates.assume_role = [context](std::string role_arn, std::string external_id,
                                    std::string session_name,
                                    std::unique_ptr<CredentialProvider> source) {
    return MakeAssumeRoleProvider(context,
                                  {.role_arn = std::move(role_arn),
                                   .external_id = std::move(external_id),
                                   .session_name = std::move(session_name)},
                                  std::move(source));
  };
  delegates.web_identity = [context](std::string token_file, std::string role_arn,
                                     std::string session_name) {
    return MakeWebIdentityProvider(context, {.token_file = std::move(token_file),
                                             .role_arn = std::move(role_arn),
                                             .session_name = std::move(session_name)});
  };
  delegates.sso = [context](std::string account_id, std::string region, std::string role_name,
                            std::string start_url, std::string session_name) {
    return MakeSsoProvider(context, {.account_id = std::move(account_id),
                                     .region = std::move(region),
                                     .role_name = std::move(role_name),
                                     .start_url = std::move(start_url),
                                     .session_name = std::move(session_name)});
  };
  // The three credential_source values of the shared config file.
  delegates.named_source =
      [context](std::string credential_source) -> std::unique_ptr<CredentialProvider> {
    if (credential_source == "Environment") {
      return MakeEnvironmentProvider(context);
    }
    if (credential_source == "Ec2InstanceMetadata") {
      return MakeInstanceProvider(context);
    }
    if (credential_source == "EcsContainer") {
      return MakeContainerProvider(context);
    }
    return nullptr;
  };
  return delegates;
}

// ATTACH.md section 7: environment, shared profile (AWS_PROFILE, else "default"), web identity,
// container, instance metadata; the first that answers wins, at every refresh.
std::unique_ptr<CredentialProvider> MakeDefaultChain(const ProviderContext& context) {
  std::vector<std::unique_ptr<CredentialProvider>> links;
  links.push_back(MakeEnvironmentProvider(context));
  links.push_back(MakeProfileProvider(context, "", DelegatesFor(context)));
  links.push_back(MakeWebIdentityProvider(context, {}));
  links.push_back(MakeContainerProvider(context));
  links.push_back(MakeInstanceProvider(context));
  return MakeChainProvider(std::move(links));
}

}  // namespace

// implements: ATCH-073
Expected<std::unique_ptr<CredentialProvider>, std::string> MakeCredentialProvider(
    const std::string& kind, const std::map<std::string, std::string>& fields,
    const ProviderContext& context) {
  if (kind == "static") {
    return MakeStaticProvider(
        AwsCredentials{.access_key_id = Field(fields, "access_key_id"),
                       .secret_access_key = Field(fields, "secret_access_key"),
                       .session_token = Field(fields, "session_token"),
                       .expiry = std::nullopt});
  }
  if (kind == "environment") {
    return MakeEnvironmentProvider(context);
  }
  if (kind == "process") {
    return MakeProcessProvider(context, Field(fields, "command"));
  }
  if (kind == "profile") {
    return MakeProfileProvider(context, Field(fields, "name"), DelegatesFor(context));
  }
  if (kind == "web_identity") {
    return MakeWebIdentityProvider(context, {});
  }
  if (kind == "container") {
    return MakeContainerProvider(context);
  }
  if (kind == "instance") {
    return MakeInstanceProvider(context);
  }
  if (kind == "sso") {
    return MakeSsoProvider(context, {.account_id = Field(fields, "account_id"),
                                     .region = Field(fields, "region"),
                                     .role_name = Field(fields, "role_name"),
                                     .start_url = Field(fields, "start_url"),
                                     .session_name = Field(fields, "session_name")});
  }
  if (kind == "assume_role") {
    return MakeAssumeRoleProvider(context,
                                  {.role_arn = Field(fields, "role_arn"),
                                   .external_id = Field(fields, "external_id"),
                                   .session_name = Field(fields, "session_name")},
                                  MakeDefaultChain(context));
  }
  if (kind == "default_chain") {
    return MakeDefaultChain(context);
  }
  return std::string("this credentials kind is not known");  // config checks refused it first
}

}  // namespace xb::attach
